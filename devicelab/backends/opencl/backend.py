"""The OpenCL backend: the lab's own kernels, run through pyopencl and timed by OpenCL events.

The one module of the package that the registry imports (``BACKEND``), and with ``devices``,
``programs`` and ``runner`` the only ones that import pyopencl.

``discover()`` lists every device of every OpenCL platform (``devices``). ``profile()`` runs a
graph on one of them with this backend's kernels (``kernels/*.cl``, built once per device by
``programs``), fused by this backend's rule (``fusion``) and planned by ``plan``
(``kernels_for_graph`` lists the kernels a graph runs), and reports in the CPU backend's result
shape:

* ``cold`` (measured by ``devicelab.measure.harness``, as every backend's): ``load_ms`` is the
  set-up (planning, program builds or cache hits, buffer allocation, weight upload, kernel
  arguments), ``first_run_ms`` the first run (which includes the driver's just-in-time work for
  each work-group size);
* with ``settings.cold_runs`` > 1, that many more cold starts, each in a fresh process
  (``cold_start_entry``: the same set-up and first run, after this process released its runner);
* ``warmup_runs`` discarded runs, then ``runs`` measured runs. ``e2e`` is the host wall time of
  a run, input upload to output download; each kernel's time is its event's
  ``CL_PROFILING_COMMAND_END - START`` in the same runs; the device span (first kernel start to
  last kernel end) is in ``environment["device_span"]``;
* ``ops``: one row per IR operator. The operator that owns a kernel carries the kernel's times
  (summed over its kernels when it has several: a concat's copies); an operator absorbed into
  another's kernel (a folded batch norm, a fused activation) or a view that runs no kernel has
  ``stats=None`` and ``fused_into`` naming that kernel.

Threads: a CPU OpenCL driver sizes its thread pool when the platform is first initialized
(PoCL: ``POCL_MAX_PTHREAD_COUNT``), so ``settings.threads`` applies only if this process has not
touched OpenCL yet; the environment records what was requested and what applied.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pyopencl as cl

from devicelab.backends.base import (
    Backend,
    Capabilities,
    ColdStart,
    DeviceInfo,
    ModelFile,
    OpTiming,
    ProfileResult,
    ProgressFn,
    fresh_cold_starts,
    read_cold_start_payload,
)
from devicelab.backends.opencl import devices
from devicelab.backends.opencl.devices import KIND, FoundDevice, init_runtime
from devicelab.backends.opencl.limits import DeviceLimits
from devicelab.backends.opencl.plan import PlannedKernel, view_owner
from devicelab.backends.opencl.runner import WEIGHT_SEED, GraphRunner
from devicelab.backends.profile_settings import MAX_COLD_RUNS, ProfileSettings
from devicelab.graph.ir import Graph
from devicelab.measure.environment import ProfileEnvironment
from devicelab.measure.harness import Harness
from devicelab.measure.inputs import INPUT_SEED, make_inputs
from devicelab.measure.stats import summarize

log = logging.getLogger(__name__)

COLD_START_ENTRY = f"{__name__}:cold_start_entry"  # what a fresh process runs for one cold start


def runtime_version(limits: DeviceLimits | None = None) -> str:
    """``pyopencl <version>`` and, for a device, its platform version."""
    text = f"pyopencl {cl.VERSION_TEXT}"
    return f"{text}; {limits.platform_version}" if limits is not None else text


def capabilities(limits: DeviceLimits) -> Capabilities:
    """What an OpenCL device runs: IR graphs on the lab's kernels, in fp32 and, with the
    ``cl_khr_fp16`` extension, fp16. Threads only size a CPU driver's pool (one per compute unit
    at most); the driver schedules its own threads, so no core can be pinned."""
    return Capabilities(
        precisions=("fp32", "fp16") if limits.fp16 else ("fp32",),
        max_threads=max(1, limits.compute_units),
        pins_cores=False,
        runtimes=(runtime_version(limits),),
        formats=("ir",),
        max_cold_runs=MAX_COLD_RUNS,
    )


def device_info(found: FoundDevice) -> DeviceInfo:
    """The lab's description of one OpenCL device, with what it can run."""
    hardware = found.limits.as_dict()
    hardware["runtime"] = runtime_version(found.limits)
    return DeviceInfo(
        kind=KIND,
        identity=found.identity,
        name=found.limits.name,
        hardware=hardware,
        capabilities=capabilities(found.limits),
    )


def discover() -> list[DeviceInfo]:
    """Every OpenCL device on this machine; none (with a logged reason) without a platform."""
    try:
        found = devices.list_devices()
    except cl.Error as e:  # no ICD installed, or the loader finds no platform
        log.info("opencl backend: no OpenCL platform here (%s)", str(e).strip())
        return []
    return [device_info(f) for f in found.values()]


# ---------------------------------------------------------------------------------------------
# Profiling


MODEL_FORMAT = "IR run by latencylab's OpenCL kernels (seeded weights; an upload's weights are not used)"


def _check_request(device: DeviceInfo, settings: ProfileSettings) -> FoundDevice:
    if device.kind != KIND:
        raise ValueError(f"the opencl backend cannot profile a {device.kind!r} device")
    if settings.backend != KIND:
        raise ValueError(f"settings ask for backend {settings.backend!r}, this is the opencl backend")
    if settings.cores:
        raise ValueError(
            "the opencl backend cannot pin cores: the OpenCL driver schedules its own threads; leave cores empty"
        )
    if settings.precision not in ("fp32", "fp16"):
        raise ValueError(f"the opencl backend runs fp32 or fp16, not {settings.precision!r}")
    return devices.find_device(device.identity)


def op_timings(graph: Graph, plan: list[PlannedKernel], per_launch_ms: list[list[float]]) -> list[OpTiming]:
    """One row per IR operator of a canonical graph: timed (its kernels' summed times per run) or
    fused into the kernel that computes it."""
    by_anchor: dict[str, list[int]] = {}
    covering: dict[str, PlannedKernel] = {}
    for i, k in enumerate(plan):
        by_anchor.setdefault(k.anchor, []).append(i)
        for absorbed in k.ops[1:]:
            covering[absorbed] = k
    views = view_owner(graph, plan)
    kernel_of = {k.name: k.kernel for k in plan}
    rows: list[OpTiming] = []
    for index, o in enumerate(graph.operators):
        shapes_in = [list(s) for s in graph.input_shapes(o)]
        shapes_out = [list(s) for s in graph.output_shapes(o)]
        mine = by_anchor.get(o.name)
        if mine:
            per_run = [sum(run[i] for i in mine) for run in per_launch_ms]
            rows.append(
                OpTiming(
                    index,
                    o.name,
                    o.type,
                    plan[mine[0]].kernel,
                    shapes_in,
                    shapes_out,
                    dict(o.attrs),
                    summarize(per_run),
                )
            )
            continue
        into = covering[o.name].name if o.name in covering else views.get(o.name)
        rows.append(
            OpTiming(
                index,
                o.name,
                o.type,
                kernel_of.get(into, "") if into else "",
                shapes_in,
                shapes_out,
                dict(o.attrs),
                None,
                fused_into=into,
            )
        )
    return rows


def profile(
    device: DeviceInfo, graph: Graph, settings: ProfileSettings, progress: ProgressFn | None = None
) -> ProfileResult:
    """Measure a graph on an OpenCL device: cold start, end-to-end samples and per-kernel times."""
    applied = init_runtime(settings.threads)  # only effective before this process first touched OpenCL
    found = _check_request(device, settings)
    limits = found.limits
    h = Harness(progress)
    env: ProfileEnvironment = {
        "runtime": runtime_version(limits),
        "runtime_version": cl.VERSION_TEXT,
        "platform": limits.platform,
        "device": limits.name,
        "driver_version": limits.driver_version,
        "precision": settings.precision,
        "threads_requested": settings.threads,
        "compute_units": limits.compute_units,
        devices.THREADS_ENV: applied[devices.THREADS_ENV],
        "cores": [],
        # it runs LatencyLab's own kernels on the graph, never a file: an upload's weights are not used
        "model_format": MODEL_FORMAT,
        "model_sha256": None,
        "input_seed": INPUT_SEED,
        "weight_seed": WEIGHT_SEED,
        "e2e_definition": "host wall time of one run: input upload, every kernel, output download",
        "op_timing_source": "OpenCL event profiling (COMMAND_END - COMMAND_START) of each kernel, "
        "in the same runs as e2e",
    }
    if limits.device_type == "cpu" and settings.threads != limits.compute_units:
        env["threads_note"] = (
            f"the driver runs {limits.compute_units} compute units; its thread pool was sized "
            "when OpenCL was first initialized in this process"
        )

    runner = h.load(
        lambda: GraphRunner(found, graph, precision=settings.precision, weight_seed=WEIGHT_SEED),
        0.0,
        "building programs and loading the graph",
    )
    try:
        feeds = make_inputs(runner.graph)
        h.first_run(lambda: runner.run(feeds), 0.1)
        h.warm_up(lambda: runner.run_timed(feeds), settings.warmup_runs, 0.15, 0.3)
        timings = h.timed(lambda: runner.run_timed(feeds), settings.runs, 0.3, 0.95)
        plan = runner.plan
        rows = op_timings(runner.graph, plan, [t.kernel_ms for t in timings])
        env.update(
            {
                "kernel_config": {
                    "vector_width": runner.config.vector_width,
                    "out_channels_per_item": runner.config.out_channels_per_item,
                    "conv_out_channels_per_item": runner.config.conv_out_channels_per_item,
                },
                "build_options": {f"{k}/vw{vw}": list(opts) for (k, vw), opts in runner.options.items()},
                "programs_built": runner.load.programs_built,
                "programs_cached": runner.load.programs_cached,
                "build_ms": runner.load.build_ms,
                "buffer_bytes": runner.load.buffer_bytes,
                "weight_bytes": runner.load.weight_bytes,
                "kernels": len(plan),
                "plan": [k.as_dict() for k in plan],
                "device_span": summarize([t.span_ms for t in timings]).as_dict(),
                "kernel_sum_mean_ms": float(np.mean([sum(t.kernel_ms) for t in timings])),
            }
        )
    finally:
        runner.release()
    cold_starts = fresh_cold_starts(COLD_START_ENTRY, device, graph, settings, h.meter(0.95, 0.99, settings.cold_runs))
    samples = [t.wall_ms for t in timings]
    load_ms, first_ms = h.cold_start()
    h.done()
    device_bytes = int(env["buffer_bytes"]) + int(env["weight_bytes"])
    env["memory"] = {"device_bytes": device_bytes, "what": "device buffers: activations (with slack) and weights"}
    return ProfileResult(
        device=device,
        settings=settings,
        e2e=summarize(samples),
        samples_ms=samples,
        cold=ColdStart(load_ms=load_ms, first_run_ms=first_ms),
        ops=rows,
        environment=env,
        peak_memory_mb=device_bytes / (1024 * 1024),
        cold_starts=cold_starts,
    )


def cold_start(device: DeviceInfo, graph: Graph, settings: ProfileSettings) -> ColdStart:
    """One cold start as ``profile`` measures its own: the set-up (plan, program builds, buffers,
    weights), then the first run."""
    init_runtime(settings.threads)
    found = _check_request(device, settings)
    h = Harness(None)
    runner = h.load(lambda: GraphRunner(found, graph, precision=settings.precision, weight_seed=WEIGHT_SEED))
    try:
        feeds = make_inputs(runner.graph)
        h.first_run(lambda: runner.run(feeds), 0.0)
    finally:
        runner.release()
    load_ms, first_ms = h.cold_start()
    return ColdStart(load_ms=load_ms, first_run_ms=first_ms)


def cold_start_entry(payload: dict[str, Any]) -> dict[str, float]:
    """A fresh process's cold start (run by ``devicelab.measure.cold_process``): load and first run (ms)."""
    cold = cold_start(*read_cold_start_payload(payload))
    return {"load_ms": cold.load_ms, "first_run_ms": cold.first_run_ms}


class OpenclBackend(Backend):
    """Every OpenCL device of this machine, on the lab's kernels: this module's ``discover`` and
    ``profile``."""

    kind = KIND

    def discover(self) -> list[DeviceInfo]:
        """Every OpenCL device on this machine, with what each can run."""
        return discover()

    def profile(
        self,
        device: DeviceInfo,
        graph: Graph,
        settings: ProfileSettings,
        progress: ProgressFn | None = None,
        model_file: ModelFile | None = None,
    ) -> ProfileResult:
        """Measure a graph on an OpenCL device (see the module)."""
        return profile(device, graph, settings, progress)


BACKEND = OpenclBackend()

__all__ = [
    "BACKEND",
    "KIND",
    "OpenclBackend",
    "capabilities",
    "cold_start",
    "cold_start_entry",
    "device_info",
    "discover",
    "op_timings",
    "profile",
    "runtime_version",
]

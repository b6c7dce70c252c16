"""The host CPU backend: runs ONNX models through ONNX Runtime and times them, whole and per operator.

Measurement discipline (the product of this module; ``docs/measurement.md`` has the measurements
behind each choice):

* An uploaded ONNX model runs as uploaded: its own weights, quantization and graph (the file's
  SHA-256 is recorded as ``model_sha256``). A graph that arrived as IR (the zoo, NAS, graph JSON)
  is exported with fixed seeded weights. Either is fed one fixed seeded input of the model's own
  input dtypes and shapes (``devicelab.measure.inputs``).
* Precision says what the model computes in: ``int8`` for a quantized model (its QDQ or QLinear
  operators run as int8 kernels), ``fp32`` for the others. Each is refused for the other kind of
  model, naming why (the backend does not quantize or dequantize a model, and a quantized model's
  result filed under fp32 would mix into fp32 comparisons and predictor training sets); ``fp16``
  is not offered.
* A session is built the way a user would run it: ``ORT_ENABLE_ALL`` graph optimizations, the
  CPU execution provider, ``intra_op_num_threads = settings.threads``, one inter-op thread,
  sequential execution.
* Core pinning: ONNX Runtime's worker threads inherit the CPU affinity of the thread that
  creates the session (checked on Linux by reading ``/proc/self/task/*/status``), so the calling
  thread is pinned with ``os.sched_setaffinity`` around session creation and every run, and its
  old affinity is restored afterwards.
* Cold start is measured apart (``devicelab.measure.harness``): ``load_ms`` is session creation
  (graph optimization included), ``first_run_ms`` the first inference of a fresh session without
  the profiler. With ``settings.cold_runs`` > 1, that many more cold starts are measured the same
  way, each in a fresh process (``cold_start_entry``), after the timed runs.
* End-to-end times come from that session (``time.perf_counter_ns``), without profiling, whose
  overhead would otherwise leak into the numbers. Per-operator times come from ONNX Runtime's
  profiler in a second session, on the optimized graph ORT saved for this model (nodes uniquely
  named, loaded with optimizations off: the same kernels, and every profiled kernel is a node we
  can read). ``map_kernels`` says which kernel implements which IR operator; for an upload, the
  import's node map names the operator of every node of the file (``uploaded_node_owners``), and
  the profiled copy gives unnamed nodes the importer's names (names only: the same graph).
* Both sessions get the same warm-up: the first run and ``warmup_runs`` more are dropped (a
  fresh session's second run is still much slower than the runs after it).
* The ``runs`` timed runs of each session alternate in ``BLOCKS`` blocks (plain, profiled,
  plain, ...), each block starting with one dropped run that refills the caches the other
  session's block used. On a shared machine, interference comes and goes within a second: with
  all the plain runs first and the profiled ones after, a burst of other load hits one phase and
  not the other, and a network's end-to-end time and its kernel sum disagree; in alternating
  blocks both see the same machine.
  With more than one thread the phases still run one after the other, the plain session closed
  before the profiled one starts: ONNX Runtime's pool threads spin for a while after each run,
  so an idle session's threads would take cores from the running one.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

from devicelab.backends import cpu_topology
from devicelab.backends.base import (
    Backend,
    BackendError,
    Capabilities,
    ColdStart,
    DeviceInfo,
    ModelFile,
    ProfileResult,
    ProgressFn,
    fresh_cold_starts,
    read_cold_start_model,
    read_cold_start_payload,
)
from devicelab.backends.ort_mapping import map_kernels, op_timings, uploaded_node_owners
from devicelab.backends.ort_profile import kernel_nodes, name_nodes_uniquely, parse_profile
from devicelab.backends.profile_settings import MAX_COLD_RUNS, ProfileSettings
from devicelab.graph.errors import GraphError
from devicelab.graph.ir import Graph
from devicelab.graph.limits import NO_LIMITS
from devicelab.graph.onnx.prepare import node_names
from devicelab.measure.environment import ProfileEnvironment
from devicelab.measure.harness import Harness, Meter, repeat, split_evenly, wall_ms
from devicelab.measure.inputs import INPUT_SEED, make_inputs
from devicelab.measure.memory import PeakRss
from devicelab.measure.stats import summarize

KIND = "cpu"
WEIGHT_SEED = 0
OPTIMIZATION_LEVEL = "ORT_ENABLE_ALL"
BLOCKS = 5  # the timed runs alternate between the plain and the profiled session in this many blocks
COLD_START_ENTRY = f"{__name__}:cold_start_entry"  # what a fresh process runs for one cold start
PRECISIONS = ("fp32", "int8")
AS_UPLOADED = "onnx as uploaded"
EXPORTED = "onnx exported by latencylab (seeded weights)"


# ---------------------------------------------------------------------------------------------
# Discovery


def runtime_version() -> str:
    """``onnxruntime <version>``."""
    return f"onnxruntime {ort.__version__}"


def host_identity() -> str:
    """This machine's CPU identity: ``cpu:<machine-id>`` (hostname when there is no machine-id)."""
    return f"{KIND}:{cpu_topology.machine_identity()}"


def capabilities(topo: cpu_topology.CpuTopology) -> Capabilities:
    """What the host CPU runs: ONNX models through ONNX Runtime, fp32 and (a quantized model) int8,
    up to one thread per online core, pinned to any of those cores where the OS can pin a thread."""
    return Capabilities(
        precisions=PRECISIONS,
        max_threads=max(1, len(topo.online)),
        pins_cores=hasattr(os, "sched_setaffinity"),
        cores=tuple(topo.online),
        runtimes=(runtime_version(),),
        formats=("onnx",),
        max_cold_runs=MAX_COLD_RUNS,
    )


def discover() -> list[DeviceInfo]:
    """The host CPU as one device, with what it can run."""
    topo = cpu_topology.read_topology()
    hardware = topo.as_hardware()
    hardware["runtime"] = runtime_version()
    return [
        DeviceInfo(
            kind=KIND, identity=host_identity(), name=topo.model, hardware=hardware, capabilities=capabilities(topo)
        )
    ]


# ---------------------------------------------------------------------------------------------
# Validation, affinity, sessions


def _check_request(
    device: DeviceInfo, settings: ProfileSettings, online: Sequence[int], graph: Graph
) -> tuple[int, ...]:
    """Reject a device or settings this backend cannot honour; return the sorted, distinct cores."""
    if device.kind != KIND:
        raise ValueError(f"the cpu backend cannot profile a {device.kind!r} device")
    if device.identity != host_identity():
        raise ValueError(f"device {device.identity!r} is not this host's CPU ({host_identity()!r})")
    if settings.backend != KIND:
        raise ValueError(f"settings ask for backend {settings.backend!r}, this is the cpu backend")
    if settings.precision not in PRECISIONS:
        raise ValueError(f"the cpu backend runs {' and '.join(PRECISIONS)} models, not {settings.precision!r}")
    quantized = graph.quantized_operators()
    if settings.precision == "int8" and not quantized:
        raise ValueError(
            f"precision int8 needs a quantized model, and {graph.name!r} has no quantized operators "
            "(no QuantizeLinear, QLinearConv or int8 tensors): quantize it (for example with "
            "onnxruntime.quantization.quantize_static) and upload that, or profile it with fp32"
        )
    if settings.precision != "int8" and quantized:
        # The model runs its int8 kernels whatever is asked; a result filed under fp32 would mix
        # into fp32 comparisons and predictor training sets.
        first = quantized[0]
        raise ValueError(
            f"{graph.name!r} is a quantized model ({len(quantized)} quantized operators, the first "
            f"{first.name!r}: {first.type} on {graph.compute_dtype(first)}) and runs its int8 kernels "
            f"as it is: profile it with precision int8, not {settings.precision}"
        )
    cores = tuple(sorted(set(settings.cores)))
    missing = [c for c in cores if c not in set(online)]
    if missing:
        raise ValueError(f"cores {missing} do not exist on this CPU; its online cores are {list(online)}")
    if cores and not hasattr(os, "sched_setaffinity"):
        raise ValueError("core pinning needs os.sched_setaffinity, which this OS does not offer")
    return cores


def _current_affinity() -> list[int]:
    if hasattr(os, "sched_getaffinity"):
        return sorted(os.sched_getaffinity(0))
    return list(range(os.cpu_count() or 1))


@contextmanager
def pinned(cores: Sequence[int]) -> Iterator[list[int]]:
    """Pin the calling thread to ``cores`` (no-op when empty); yield the affinity really in force."""
    if not cores:
        yield _current_affinity()
        return
    old = os.sched_getaffinity(0)
    try:
        os.sched_setaffinity(0, set(cores))
    except OSError as e:  # a core outside this process's cpuset: EINVAL
        raise ValueError(f"cannot pin to cores {list(cores)}: {e.strerror}; allowed now: {sorted(old)}") from None
    try:
        yield sorted(os.sched_getaffinity(0))
    finally:
        os.sched_setaffinity(0, old)


def _thread_ids() -> set[int]:
    try:
        return {int(t) for t in os.listdir("/proc/self/task")}
    except OSError:
        return set()


def thread_affinities(tids: Sequence[int]) -> dict[int, str]:
    """``Cpus_allowed_list`` of the given threads of this process (Linux; empty elsewhere)."""
    out: dict[int, str] = {}
    for tid in tids:
        try:
            text = Path(f"/proc/self/task/{tid}/status").read_text()
        except OSError:
            continue
        m = re.search(r"^Cpus_allowed_list:\s*(\S+)", text, re.MULTILINE)
        if m:
            out[tid] = m.group(1)
    return out


def _session_options(
    settings: ProfileSettings,
    *,
    optimize: bool = True,
    save_optimized: Path | None = None,
    profile_prefix: Path | None = None,
) -> ort.SessionOptions:
    """Options a user would run with, optionally saving the optimized graph or profiling."""
    so = ort.SessionOptions()
    so.intra_op_num_threads = settings.threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    level = OPTIMIZATION_LEVEL if optimize else "ORT_DISABLE_ALL"
    so.graph_optimization_level = getattr(ort.GraphOptimizationLevel, level)
    so.log_severity_level = 3  # errors still raise; the NCHWc "hardware specific model" warning is noise here
    if save_optimized is not None:
        so.optimized_model_filepath = str(save_optimized)
    if profile_prefix is not None:
        so.enable_profiling = True
        so.profile_file_prefix = str(profile_prefix)
    return so


_ORT_ERROR = re.compile(r"\[ONNXRuntimeError\]\s*:\s*\d+\s*:\s*(\w+)\s*:\s*(.*)", re.DOTALL)


def _backend_error(what: str, graph: Graph, err: Exception) -> BackendError:
    """A clear ``BackendError`` from an ONNX Runtime exception: what failed, for which graph, why."""
    text = str(err).strip()
    m = _ORT_ERROR.search(text)
    reason = f"{m.group(1)}: {m.group(2).strip()}" if m else text or type(err).__name__
    return BackendError(f"cpu backend (onnxruntime {ort.__version__}) could not {what} graph {graph.name!r}: {reason}")


def _new_session(model: bytes, options: ort.SessionOptions, graph: Graph) -> ort.InferenceSession:
    try:
        return ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    except Exception as e:  # ORT raises its own pybind exception types (Fail, InvalidGraph, ...)
        raise _backend_error("load", graph, e) from e


def _run(session: ort.InferenceSession, feeds: dict[str, np.ndarray], graph: Graph) -> None:
    try:
        session.run(None, feeds)
    except Exception as e:
        raise _backend_error("run", graph, e) from e


def _check_inputs(session: ort.InferenceSession, graph: Graph, feeds: dict[str, np.ndarray]) -> None:
    """The model asks for the inputs the graph declares, of the dtypes the feeds have."""
    unknown = [i.name for i in session.get_inputs() if i.name not in graph.inputs]
    if unknown:
        raise BackendError(
            f"the model of graph {graph.name!r} asks for inputs {unknown} that the graph does not declare"
        )
    for i in session.get_inputs():
        want = _ORT_TYPES.get(i.type)
        if want is not None and feeds[i.name].dtype != want:
            raise BackendError(
                f"input {i.name!r} of graph {graph.name!r} is {i.type} in the model but "
                f"{feeds[i.name].dtype} in the graph"
            )


_ORT_TYPES = {
    "tensor(float)": np.dtype(np.float32),
    "tensor(float16)": np.dtype(np.float16),
    "tensor(int8)": np.dtype(np.int8),
    "tensor(uint8)": np.dtype(np.uint8),
    "tensor(int32)": np.dtype(np.int32),
    "tensor(int64)": np.dtype(np.int64),
}


class _Model:
    """The ONNX model a profile runs: the upload as it is, or the graph's export."""

    def __init__(self, graph: Graph, model_file: ModelFile | None) -> None:
        from devicelab.graph.onnx import graph_to_onnx_bytes

        self.uploaded = model_file is not None and model_file.format == "onnx"
        if model_file is not None and self.uploaded:
            self.data = model_file.data
            self.format = AS_UPLOADED
        else:
            self.data = graph_to_onnx_bytes(graph, seed=WEIGHT_SEED)
            self.format = EXPORTED
        self.sha256 = hashlib.sha256(self.data).hexdigest()
        self.file = ModelFile("onnx", self.data, "model.onnx") if self.uploaded else None

    def for_profiling(self, graph: Graph) -> tuple[bytes, dict[str, str]]:
        """The model the per-operator profile starts from, and which IR operator each of its
        nodes went into (uploads only: an export names its nodes after the operators). Unnamed
        nodes of an upload get the importer's names, so that their kernels can be mapped."""
        if not self.uploaded:
            return self.data, {}
        from devicelab.graph.onnx import import_onnx_model, parse_onnx_bytes

        model = parse_onnx_bytes(self.data)
        try:
            node_map = import_onnx_model(model, name=graph.name, limits=NO_LIMITS).node_map
        except GraphError as exc:
            raise BackendError(
                f"cpu backend: the uploaded model of graph {graph.name!r} no longer imports: {exc}"
            ) from None
        owners = uploaded_node_owners(model, node_map)
        nodes = list(model.graph.node)
        names = node_names(nodes)
        if all(n.name == name for n, name in zip(nodes, names, strict=True)):
            return self.data, owners
        for n, name in zip(nodes, names, strict=True):
            n.name = name
        return model.SerializeToString(), owners


def model_precision(graph: Graph) -> str:
    """The precision a model computes in: int8 for a quantized one, else its input's float type."""
    if graph.quantized_operators():
        return "int8"
    return "fp16" if graph.tensors[graph.inputs[0]].dtype == "float16" else "fp32"


# ---------------------------------------------------------------------------------------------
# Profiling


def _alternating_blocks(
    plain: ort.InferenceSession,
    profiled: ort.InferenceSession,
    feeds: dict[str, np.ndarray],
    graph: Graph,
    runs: int,
    profiled_before: int,
    meter: Meter,
) -> tuple[list[float], list[int]]:
    """The timed runs, in blocks alternating between the plain and the profiled session: each
    block runs its session once untimed (the other session's block left its own weights and
    buffers in the caches), then its share of the runs. Returns the plain runs' wall times (ms) and
    the indices, among all the profiled session's runs, of the profiled runs to keep."""
    samples: list[float] = []
    kept: list[int] = []
    index = profiled_before  # runs the profiled session has made so far
    for k in split_evenly(runs, BLOCKS):
        _run(plain, feeds, graph)
        samples += repeat(
            lambda: wall_ms(_run, plain, feeds, graph), k, meter, "timed run", first=len(samples), of=runs
        )
        _run(profiled, feeds, graph)
        index += 1
        repeat(lambda: _run(profiled, feeds, graph), k, meter, "profiled run", first=len(kept), of=runs)
        kept += range(index, index + k)
        index += k
    return samples, kept


def profile(
    device: DeviceInfo,
    graph: Graph,
    settings: ProfileSettings,
    progress: ProgressFn | None = None,
    model_file: ModelFile | None = None,
) -> ProfileResult:
    """Measure a model on the host CPU: cold start, end-to-end samples and per-operator times.
    ``model_file``: the uploaded ONNX file the graph came from, which then runs as uploaded."""
    topo = cpu_topology.read_topology()
    cores = _check_request(device, settings, topo.online, graph)
    h = Harness(progress)
    h.report(0.0, "reading the uploaded model" if model_file is not None else "exporting graph to ONNX")
    run = _Model(graph, model_file)
    model = run.data
    feeds = make_inputs(graph)
    env: ProfileEnvironment = {
        "runtime": runtime_version(),
        "runtime_version": ort.__version__,
        "providers": ["CPUExecutionProvider"],
        "threads": settings.threads,
        "inter_op_threads": 1,
        "execution_mode": "sequential",
        "graph_optimization_level": OPTIMIZATION_LEVEL,
        "cores": list(cores),
        "cpu_model": topo.model,
        "model_format": run.format,
        "model_sha256": run.sha256,
        "model_precision": model_precision(graph),
        "input_seed": INPUT_SEED,
        "op_timing_source": "onnxruntime profiler on the saved optimized graph",
    }
    if not run.uploaded:
        env["weight_seed"] = WEIGHT_SEED

    # Cold start, as a user would meet it: a fresh session without the profiler, its first run.
    # Then the profiled session (per-operator times), on the optimized graph ORT saves: every node
    # gets a unique name and the saved graph is profiled as is (optimizations off: it is already
    # optimized, ORT's documented offline mode), so each profiled kernel is a node we can read.
    # Both are warmed up, then the timed runs alternate between them in blocks (see the module).
    with tempfile.TemporaryDirectory(prefix="devicelab-ort-") as tmp, pinned(cores) as applied:
        workdir = Path(tmp)
        env["affinity"] = applied
        before = _thread_ids()
        memory = PeakRss()
        session = h.load(lambda: _new_session(model, _session_options(settings), graph), 0.02, "creating session")
        # The intra-op pool's threads were created just now and inherited the pinned affinity.
        env["runtime_threads_affinity"] = sorted(set(thread_affinities(sorted(_thread_ids() - before)).values()))
        env["providers"] = session.get_providers()
        _check_inputs(session, graph, feeds)
        h.first_run(partial(_run, session, feeds, graph), 0.04)
        h.warm_up(partial(_run, session, feeds, graph), settings.warmup_runs, 0.05, 0.1)
        # the session's memory once it has run: its arena and buffers are allocated by now, and the
        # profiled session that follows is not counted
        peak = memory.peak()
        env["memory"] = {**peak.as_dict(), "what": "the measured session: load, first run and warm-up"}
        alternate = settings.threads == 1  # see the module's docs: pool threads of an idle session spin
        if not alternate:
            samples = h.timed(partial(wall_ms, _run, session, feeds, graph), settings.runs, 0.1, 0.5)
            del session

        h.report(0.11 if alternate else 0.51, "saving the optimized graph")
        saved = workdir / "optimized.onnx"
        to_profile, node_owners = run.for_profiling(graph)
        _new_session(to_profile, _session_options(settings, save_optimized=saved), graph)  # saves, then dropped
        optimized = name_nodes_uniquely(onnx.load(str(saved)))
        nodes = kernel_nodes(optimized)
        h.report(0.13 if alternate else 0.53, "creating profiled session")
        profiled = _new_session(
            optimized.SerializeToString(),
            _session_options(settings, optimize=False, profile_prefix=workdir / "ort_profile"),
            graph,
        )
        try:
            # as the plain session: the first run, then the warm-up runs, all dropped
            dropped = 1 + settings.warmup_runs
            if alternate:
                h.warm_up(partial(_run, profiled, feeds, graph), dropped, 0.14, 0.2, "profiled warm-up")
                meter = h.meter(0.2, 0.95, 2 * settings.runs)
                samples, kept = _alternating_blocks(session, profiled, feeds, graph, settings.runs, dropped, meter)
                del session
            else:
                h.warm_up(partial(_run, profiled, feeds, graph), dropped, 0.54, 0.6, "profiled warm-up")
                # their times are read from the profile, not kept here
                h.timed(partial(_run, profiled, feeds, graph), settings.runs, 0.6, 0.95, "profiled run")
                kept = list(range(dropped, dropped + settings.runs))
        finally:
            profile_path = Path(profiled.end_profiling())
            del profiled
        h.report(0.96, "reading the profile")
        profiles, run_ms = parse_profile(profile_path, keep=kept)

    # both sessions are gone: a fresh process's cold start shares the machine with nothing of ours
    cold_starts = fresh_cold_starts(
        COLD_START_ENTRY, device, graph, settings, h.meter(0.96, 0.99, settings.cold_runs), run.file
    )
    kmap = map_kernels(graph, nodes, node_owners)
    rows = op_timings(graph, nodes, profiles, kmap, len(run_ms))
    env["kernel_nodes"] = len(nodes)
    env["kernel_owner"] = {n.name: kmap.owner[n.name] for n in nodes}  # kernel node -> IR operator (None: runtime)
    env["profiled_e2e_mean_ms"] = float(np.mean(run_ms))
    env["profiled_runs_dropped"] = dropped  # before the first block (each block drops one more)
    env["profiled_runs"] = len(run_ms)
    # timed runs per block, the sessions alternating; one thread only (else one phase after the other)
    env["blocks"] = split_evenly(settings.runs, BLOCKS) if alternate else []
    load_ms, first_ms = h.cold_start()
    h.done()
    return ProfileResult(
        device=device,
        settings=settings,
        e2e=summarize(samples),
        samples_ms=samples,
        cold=ColdStart(load_ms=load_ms, first_run_ms=first_ms),
        ops=rows,
        environment=env,
        peak_memory_mb=peak.above_baseline_mb,
        cold_starts=cold_starts,
    )


def cold_start(
    device: DeviceInfo, graph: Graph, settings: ProfileSettings, model_file: ModelFile | None = None
) -> ColdStart:
    """One cold start as ``profile`` measures its own: a new session without the profiler (reading
    the upload or exporting the graph before it is not timed), then its first run, pinned as the
    job asks."""
    cores = _check_request(device, settings, cpu_topology.read_topology().online, graph)
    model = _Model(graph, model_file).data
    feeds = make_inputs(graph)
    h = Harness(None)
    with pinned(cores):
        session = h.load(lambda: _new_session(model, _session_options(settings), graph))
        h.first_run(partial(_run, session, feeds, graph), 0.0)
    load_ms, first_ms = h.cold_start()
    return ColdStart(load_ms=load_ms, first_run_ms=first_ms)


def cold_start_entry(payload: dict[str, Any]) -> dict[str, float]:
    """A fresh process's cold start (run by ``devicelab.measure.cold_process``): load and first run (ms)
    of the uploaded file the payload names, or of the graph's export."""
    cold = cold_start(*read_cold_start_payload(payload), read_cold_start_model(payload))
    return {"load_ms": cold.load_ms, "first_run_ms": cold.first_run_ms}


class CpuBackend(Backend):
    """The host CPU, through ONNX Runtime: this module's ``discover`` and ``profile``."""

    kind = KIND
    pins_host_cores = True

    def discover(self) -> list[DeviceInfo]:
        """The host CPU as one device, with what it can run."""
        return discover()

    def profile(
        self,
        device: DeviceInfo,
        graph: Graph,
        settings: ProfileSettings,
        progress: ProgressFn | None = None,
        model_file: ModelFile | None = None,
    ) -> ProfileResult:
        """Measure a graph on the host CPU (see the module's measurement discipline); an uploaded
        ONNX ``model_file`` runs as uploaded."""
        return profile(device, graph, settings, progress, model_file)


BACKEND = CpuBackend()

__all__ = [
    "BACKEND",
    "KIND",
    "CpuBackend",
    "capabilities",
    "cold_start",
    "cold_start_entry",
    "discover",
    "profile",
    "pinned",
    "thread_affinities",
    "runtime_version",
    "host_identity",
]

"""Test data for phones: a Pixel 7 as the android backend registers it, and results shaped like
its (TensorFlow Lite ``benchmark_model``): aggregates only (no samples, no median or p90),
per-operator means, the delegate's node names, temperatures, governors, memory and flags.

The shapes are the ones the backend produces (issue 19); the dashboard, API and CLI tests read them.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from devicelab.backends.base import Capabilities, ColdStart, DeviceInfo, OpTiming, ProfileResult, ProfileSettings
from devicelab.graph import Graph
from devicelab.measure.cold_starts import ColdStarts
from devicelab.measure.stats import from_aggregate

PIXEL_7_HARDWARE: dict[str, Any] = {
    "serial": "28021FDH2000AB",
    "manufacturer": "Google",
    "model": "Pixel 7",
    "soc": "GS201",
    "abi": "arm64-v8a",
    "android_version": "14",
    "sdk": 34,
    "cpu_clusters": [
        {"name": "little", "cores": [0, 1, 2, 3], "max_khz": 1803000},
        {"name": "mid", "cores": [4, 5], "max_khz": 2348000},
        {"name": "big", "cores": [6, 7], "max_khz": 2850000},
    ],
    "gpu": "ARM, Mali-G710, OpenGL ES 3.2 v1.r36p0",
    "ram_mb": 7617,
    "runtime": "TensorFlow Lite benchmark_model",
}

PIXEL_7_CAPABILITIES = Capabilities(
    precisions=("fp32", "fp16"),
    max_threads=8,
    pins_cores=True,
    cores=tuple(range(8)),
    runtimes=("TensorFlow Lite benchmark_model",),
    formats=("tflite",),
    delegates=("cpu", "xnnpack", "gpu", "nnapi"),
    core_clusters={"little": (0, 1, 2, 3), "mid": (4, 5), "big": (6, 7)},
    cools_down=True,
    max_cold_runs=50,
)

# The kernels XNNPACK reports for the graph's operator types (the tool's node type column).
_XNNPACK_KERNELS = {
    "conv2d": "Convolution (NHWC, F32) IGEMM",
    "depthwise_conv2d": "Convolution (NHWC, F32) DWConv",
    "add": "Add (ND, F32)",
    "global_avg_pool": "Global Average Pooling (NWC, F32)",
    "fc": "Fully Connected (NC, F32) GEMM",
}
# What XNNPACK folds into the node before it.
_FOLDED = ("batch_norm", "relu", "relu6")
GPU_NODE = "TfLiteGpuDelegateV2"


def make_phone(make_device: Callable[..., Any], name: str = "pixel-7", **overrides: Any) -> Any:
    """Register a Pixel 7 through ``register_devices`` (via the server tests' ``make_device``)."""
    hardware = {**PIXEL_7_HARDWARE, "serial": f"{PIXEL_7_HARDWARE['serial']}{uuid.uuid4().hex[:4]}"}
    hardware.update(overrides)
    return make_device(
        kind="android",
        name=name,
        identity=f"android:{hardware['serial']}",
        hardware=hardware,
        capabilities=PIXEL_7_CAPABILITIES,
    )


def phone_environment(
    delegate: str = "xnnpack", hot_c: float = 38.5, rise_c: float = 5.5, waited_s: float = 12.5, reached: bool = True
) -> dict[str, Any]:
    """What the android backend records of a run (``JobResult.environment``)."""
    return {
        "delegate": delegate,
        "runtime": "TensorFlow Lite benchmark_model",
        "tool_sha256": "9f2c" + "0" * 60,
        "tool_version": "2.16.1",
        "op_profile_mode": "csv",
        "model_format": "tflite",
        "threads": 2,
        "cores": [6, 7],
        "cluster": "big",
        "taskset_mask": "c0",
        "temperatures_before_c": {"battery": 31.0, "cpu-1-2": hot_c, "gpu0": hot_c - 2.0},
        "temperatures_after_c": {"battery": 31.4, "cpu-1-2": hot_c + rise_c, "gpu0": hot_c + 1.0},
        "cooldown": {"threshold_c": 40.0, "max_s": 120.0, "waited_s": waited_s, "reached": reached},
        "governors": {"6": "schedutil", "7": "schedutil"},
        "frequencies_khz_before": {"6": 2850000, "7": 2850000},
        "frequencies_khz_after": {"6": 2850000, "7": 1200000},
        "max_frequencies_khz": {"6": 2850000, "7": 2850000},
        "screen_on": False,
        "charging": "usb",
        "battery_level": 87,
        "memory_mb": {"init": 11.2, "overall": 38.6, "peak": 41.9},
        "init_ms": 54.3,
        "first_inference_ms": 19.8,
        "warmup_avg_ms": 7.9,
        "serial": PIXEL_7_HARDWARE["serial"],
    }


def _xnnpack_ops(graph: Graph, scale: float) -> list[OpTiming]:
    ops = []
    kernel_node = graph.operators[0].name
    for index, op in enumerate(graph.operators):
        folded = op.type in _FOLDED and index > 0
        if not folded:
            kernel_node = op.name
        mean = (0.35 if op.type in ("conv2d", "depthwise_conv2d") else 0.04) * scale * (1 + (index % 5) / 10)
        ops.append(
            OpTiming(
                index=index,
                name=op.name,
                type=op.type,
                kernel="" if folded else _XNNPACK_KERNELS.get(op.type, op.type),
                input_shapes=[list(s) for s in graph.input_shapes(op)],
                output_shapes=[list(s) for s in graph.output_shapes(op)],
                attrs=dict(op.attrs),
                stats=None if folded else from_aggregate(30, mean),
                fused_into=kernel_node if folded else None,
            )
        )
    return ops


def _gpu_ops(graph: Graph, scale: float) -> list[OpTiming]:
    ops = [
        OpTiming(
            index=index,
            name=op.name,
            type=op.type,
            kernel="",
            input_shapes=[list(s) for s in graph.input_shapes(op)],
            output_shapes=[list(s) for s in graph.output_shapes(op)],
            attrs=dict(op.attrs),
            stats=None,
            fused_into=GPU_NODE,
        )
        for index, op in enumerate(graph.operators)
    ]
    ops.append(
        OpTiming(None, GPU_NODE, "runtime", GPU_NODE, [], [], {}, from_aggregate(30, 2.5 * scale, std=0.1 * scale))
    )
    return ops


def phone_result(
    graph: Graph,
    delegate: str = "xnnpack",
    scale: float = 1.0,
    flags: list[str] | None = None,
    environment: dict[str, Any] | None = None,
    hot_c: float = 38.5,
    cold_starts: ColdStarts | None = None,
) -> ProfileResult:
    """A result as the android backend reports it: ``benchmark_model``'s aggregates (count, mean,
    std, min, max; no samples), per-operator means, cold start, peak memory and flags."""
    ops = _gpu_ops(graph, scale) if delegate == "gpu" else _xnnpack_ops(graph, scale)
    mean = sum(o.stats.mean for o in ops if o.stats is not None) * 1.08
    return ProfileResult(
        device=DeviceInfo("android", "android:test", "pixel-7", dict(PIXEL_7_HARDWARE), PIXEL_7_CAPABILITIES),
        settings=ProfileSettings(
            backend="android", threads=2, cores=(6, 7), delegate=delegate, cooldown_c=40.0, cooldown_max_s=120.0
        ),
        e2e=from_aggregate(30, mean, std=mean * 0.02, min=mean * 0.97, max=mean * 1.06),
        samples_ms=[],
        cold=ColdStart(load_ms=54.3 * scale, first_run_ms=19.8 * scale),
        ops=ops,
        environment=environment if environment is not None else phone_environment(delegate, hot_c=hot_c),
        peak_memory_mb=41.9,
        flags=list(flags or []),
        cold_starts=cold_starts,
    )


def finish_phone_job(job: Any, graph: Graph, finished_minutes_ago: float | None = None, **kwargs: Any) -> Any:
    """Claim a queued job on a phone and ingest a ``phone_result`` as its worker would; optionally
    back-date its finish (for histories over time)."""
    from django.utils import timezone

    from server.profiling.models import ProfilingJob
    from server.profiling.services import claim_job, ingest_result

    token = f"phone-{uuid.uuid4().hex[:8]}"
    assert claim_job(job.pk, token) is not None
    assert ingest_result(job.pk, token, phone_result(graph, **kwargs)) is not None
    if finished_minutes_ago is not None:
        ProfilingJob.objects.filter(pk=job.pk).update(
            finished_at=timezone.now() - timedelta(minutes=finished_minutes_ago)
        )
    job.refresh_from_db()
    return job

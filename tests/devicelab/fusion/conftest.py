"""Fixtures for running fused kernels: every kernel of the library loaded once, and the check that a
fused kernel writes what its sub-kernels write run one after another.

The device fixture is the OpenCL backend tests' (without an OpenCL platform these tests skip).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace

import numpy as np
import pytest

pytest.importorskip("pyopencl", reason="pyopencl is not installed")

import pyopencl as cl  # noqa: E402

from devicelab.backends.opencl.devices import FoundDevice, context_for  # noqa: E402
from devicelab.backends.opencl.plan import numel  # noqa: E402
from devicelab.backends.opencl.runner import GraphRunner  # noqa: E402
from devicelab.backends.opencl.tiling import KernelConfig  # noqa: E402
from devicelab.fusion.fuse import FusedKernel, SubKernel, fuse  # noqa: E402
from devicelab.fusion.graph_launches import subkernels_for_graph_ops  # noqa: E402
from devicelab.fusion.run import enqueue_launches, ready_fused, ready_subkernel  # noqa: E402
from devicelab.measure.inputs import make_inputs  # noqa: E402
from tests.devicelab.backends.opencl.conftest import found  # noqa: E402,F401  (the device fixture)
from tests.devicelab.fusion.library import CASES  # noqa: E402

SENTINELS = (np.float32(-12345.5), np.float32(98765.25))  # what output buffers hold before a run


@dataclass
class LoadedCase:
    """One library kernel loaded on the device: its graph runner (owning the buffers), its
    sub-kernel, and what it reads and writes."""

    kernel: str
    runner: GraphRunner
    sub: SubKernel
    inputs: dict[str, np.ndarray]

    @property
    def outputs(self) -> list[str]:
        return list(self.runner.graph.outputs)

    def tensor_bytes(self, tensor: str) -> int:
        return numel(self.runner.graph.tensors[tensor].shape) * self.runner.dtype.itemsize


@pytest.fixture(scope="session")
def library(found: FoundDevice) -> Iterator[dict[str, LoadedCase]]:  # noqa: F811
    """Every kernel of the library, as a one-launch graph loaded on the device."""
    loaded: dict[str, LoadedCase] = {}
    try:
        for kernel, build in CASES.items():
            config = KernelConfig.for_device(found.limits)
            if kernel == "depthwise_conv2d_flat" and config.vector_width < 16:
                # planned only where rows are shorter than half a vector, so never on a device of
                # 8-wide vectors (AVX2): its case is planned as a 16-wide device (AVX-512) would
                config = replace(config, vector_width=16)
            runner = GraphRunner(found, build(), config=config)
            subs = subkernels_for_graph_ops(runner)
            assert [s.name for s in subs] == [kernel], f"case {kernel!r} plans {[s.name for s in subs]}"
            loaded[kernel] = LoadedCase(kernel, runner, subs[0], make_inputs(runner.graph))
        yield loaded
    finally:
        for case in loaded.values():
            case.runner.release()


@pytest.fixture(scope="session")
def queue(found: FoundDevice) -> cl.CommandQueue:  # noqa: F811
    """One in-order profiling queue for every launch of these tests."""
    return cl.CommandQueue(context_for(found), found.device, properties=cl.command_queue_properties.PROFILING_ENABLE)


def _prepare(queue: cl.CommandQueue, cases: Sequence[LoadedCase], sentinel: np.float32) -> None:
    """Upload the inputs and fill every output tensor (not its zeroed slack) with ``sentinel``."""
    for case in cases:
        for name, arr in case.inputs.items():
            cl.enqueue_copy(queue, case.runner.buffers[name], np.ascontiguousarray(arr, case.runner.dtype))
        for t in case.outputs:
            cl.enqueue_fill_buffer(
                queue, case.runner.buffers[t], sentinel.astype(case.runner.dtype), 0, case.tensor_bytes(t)
            )
    queue.finish()


def _read(queue: cl.CommandQueue, cases: Sequence[LoadedCase]) -> list[np.ndarray]:
    """Every output buffer whole (tensor and slack)."""
    out = []
    for case in cases:
        for t in case.outputs:
            buf = case.runner.buffers[t]
            host = np.empty(buf.size // case.runner.dtype.itemsize, case.runner.dtype)
            cl.enqueue_copy(queue, host, buf)
            out.append(host)
    queue.finish()
    return out


@dataclass
class FusedCheck:
    """A fused kernel and what it and its sub-kernels wrote."""

    fused: FusedKernel
    sequential: list[np.ndarray]
    fused_out: list[np.ndarray]
    built_now: bool


def assert_same(got: np.ndarray, want: np.ndarray, what: str) -> None:
    """Bit for bit, or within 1e-6 relative to the largest value (a compiler may contract a
    multiply-add differently in a larger kernel)."""
    if np.array_equal(got.view(np.uint8), want.view(np.uint8)):
        return
    scale = max(float(np.abs(want).max()), 1e-30)
    err = float(np.abs(got.astype(np.float64) - want.astype(np.float64)).max()) / scale
    assert err <= 1e-6, f"{what}: fused differs from sequential by {err:.2e} relative"


@pytest.fixture
def check_fused(found: FoundDevice, queue: cl.CommandQueue) -> Callable[..., FusedCheck]:  # noqa: F811
    """Run sub-kernels one after another, then their fused kernel (in the layout asked for), on the
    same inputs; assert the fused kernel wrote the same outputs, and that both wrote every output
    element and nothing past a tensor's end."""

    def check(
        cases: Sequence[LoadedCase], wave_size: int | None = None, round_to_wave: bool = True, layout: str = "auto"
    ) -> FusedCheck:
        subs = [c.sub for c in cases]
        fused = fuse(subs, wave_size or found.limits.wave_size, round_to_wave=round_to_wave, layout=layout)
        assert layout == "auto" or fused.layout == layout

        _prepare(queue, cases, SENTINELS[0])
        enqueue_launches(queue, [ready_subkernel(found, s) for s in subs])
        sequential = _read(queue, cases)

        _prepare(queue, cases, SENTINELS[1])
        ready = ready_fused(found, fused)
        enqueue_launches(queue, [ready])
        fused_out = _read(queue, cases)

        tensors = [(c, t) for c in cases for t in c.outputs]
        for (case, t), seq, got in zip(tensors, sequential, fused_out, strict=True):
            n = case.tensor_bytes(t) // case.runner.dtype.itemsize
            what = f"{case.kernel} ({' + '.join(c.kernel for c in cases)}, {fused.layout}, rounded={round_to_wave})"
            assert not (seq[:n] == SENTINELS[0]).any(), f"{what}: the sub-kernel left outputs unwritten"
            assert not (got[:n] == SENTINELS[1]).any(), f"{what}: the fused kernel left outputs unwritten"
            assert_same(got[:n], seq[:n], what)
            assert not got[n:].any() and not seq[n:].any(), f"{what}: written past the tensor's end"
        return FusedCheck(fused, sequential, fused_out, ready.built_now)

    return check

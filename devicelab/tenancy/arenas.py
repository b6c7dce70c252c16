"""Every tenant's activations as regions of one buffer per tensor, so one launch reaches them all.

The tenants of a network run the same plan, so tensor k of every tenant has the same size. Space-
time's batched steps (the batched SGEMM, kernels with a tenant axis) address tenant t's copy of a
tensor at ``t * stride`` of one buffer, the tensor's arena. ``ActivationArenas`` allocates the
arenas (each region aligned to the device's sub-buffer alignment), makes each tenant's region a
sub-buffer, and re-binds the tenants' runners (their buffers and their kernels' arguments) to
those regions, so every strategy that runs the runners runs on the same regions.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyopencl as cl

from devicelab.backends.opencl.devices import FoundDevice
from devicelab.backends.opencl.runner import GraphRunner
from devicelab.tenancy.gemm import FLOAT_BYTES
from devicelab.tenancy.memory import Allocations, align_up, base_alignment


def distinct_buffers(runner: GraphRunner) -> list[cl.Buffer]:
    """The runner's activation buffers, each once (tensors may share one), in allocation order."""
    out: list[cl.Buffer] = []
    for buf in runner.buffers.values():
        if all(buf is not d for d in out):
            out.append(buf)
    return out


def arena_bytes(runner: GraphRunner, align: int) -> int:
    """One tenant's share of the activation arenas."""
    return sum(align_up(b.size, align) for b in distinct_buffers(runner))


class ActivationArenas:
    """The arenas of the runners' activation buffers, and where each original buffer went."""

    def __init__(
        self, found: FoundDevice, runners: Sequence[GraphRunner], memory: Allocations, queue: cl.CommandQueue
    ) -> None:
        align = base_alignment(found.device)  # sub-buffer origins must be aligned
        distinct = distinct_buffers(runners[0])
        self.strides = [align_up(b.size, align) for b in distinct]
        self.arenas = [memory.new(stride * len(runners), "activations of every tenant") for stride in self.strides]
        for arena in self.arenas:  # the runners' zeroed slack, for every tenant at once
            cl.enqueue_fill_buffer(queue, arena, np.zeros(1, np.uint8), 0, arena.size)
        queue.finish()
        self.subs: list[cl.Buffer] = []
        self.index_of_tensor: dict[str, int] = {}
        # id of a runner's original buffer -> (its arena, the tenant): the runners' launches still
        # hold the original buffers in ``args``, which is how a batched step finds the arena.
        self.region_of: dict[int, tuple[int, int]] = {}
        for r, runner in enumerate(runners):
            own = distinct_buffers(runner)
            if [b.size for b in own] != [b.size for b in distinct]:
                raise ValueError("the tenants' plans differ; their activations cannot be batched")
            subs = [
                arena.get_sub_region(r * stride, buf.size)
                for arena, stride, buf in zip(self.arenas, self.strides, own, strict=True)
            ]
            self.subs.extend(subs)
            slot = {id(buf): j for j, buf in enumerate(own)}
            self.region_of.update({key: (j, r) for key, j in slot.items()})
            for tensor, buf in list(runner.buffers.items()):
                j = slot[id(buf)]
                runner.buffers[tensor] = subs[j]
                if r == 0:
                    self.index_of_tensor[tensor] = j
            for launch in runner.launches:
                for i, value in enumerate(launch.args):
                    if isinstance(value, cl.Buffer) and id(value) in slot:
                        launch.kernel.set_arg(i, subs[slot[id(value)]])

    def arena(self, tensor: str) -> tuple[cl.Buffer, int]:
        """The arena holding ``tensor`` for every tenant, and its stride in elements."""
        j = self.index_of_tensor[tensor]
        return self.arenas[j], self.strides[j] // FLOAT_BYTES

    def region(self, buffer: object) -> tuple[int, int] | None:
        """(arena index, tenant) of a runner's original activation buffer; None for any other."""
        return self.region_of.get(id(buffer))

    def release(self) -> None:
        """Free the regions (the arenas belong to the caller's allocations)."""
        for sub in self.subs:
            sub.release()
        self.subs.clear()


__all__ = ["ActivationArenas", "arena_bytes", "distinct_buffers"]

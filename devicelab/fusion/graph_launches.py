"""Sub-kernels from a real graph run: the launches a ``GraphRunner`` set up, as the fuser takes them.

A loaded runner holds, for every planned kernel, its kernel name and compile-time variant (hence
the source and build options), its logical work size and work-group, and the argument values it
set (the graph's buffers, uploaded weights, shape integers). That is all a sub-kernel is. The
runner owns the buffers: keep it alive (and unreleased) for as long as the sub-kernels run.
"""

from __future__ import annotations

from collections.abc import Iterable

from devicelab.backends.opencl.programs import program_source
from devicelab.backends.opencl.runner import GraphRunner
from devicelab.fusion.fuse import SubKernel


def subkernels_for_graph_ops(runner: GraphRunner, ops: Iterable[str] | None = None) -> list[SubKernel]:
    """The runner's launches as sub-kernels, in launch order: all of them, or those computing any
    of the operators ``ops`` (by IR name)."""
    wanted = None if ops is None else set(ops)
    out = []
    for launch in runner.launches:
        pk = launch.planned
        if wanted is not None and not wanted.intersection(pk.ops):
            continue
        out.append(
            SubKernel(
                name=pk.kernel,
                source=program_source(pk.kernel, runner.precision),
                options=runner.options[(pk.kernel, pk.attrs["variant"])],
                global_size=tuple(pk.global_size),
                local_size=tuple(launch.local_size),
                args=launch.args,
                label=pk.name,
            )
        )
    if wanted is not None and not out:
        raise ValueError(f"no launch of graph {runner.graph.name!r} computes any of {sorted(wanted)}")
    return out


__all__ = ["subkernels_for_graph_ops"]

"""Table 2 on the device: a probe kernel that records what every work-item built-in returns sees
the same values fused as in a launch of its own (ids, sizes, group ids and counts, local ids,
work dimensions), including a 1-D probe fused with 2-D ones."""

from __future__ import annotations

import numpy as np
import pyopencl as cl
import pytest

from devicelab.backends.opencl.devices import context_for
from devicelab.fusion.errors import FusionError
from devicelab.fusion.fuse import SubKernel, fuse
from devicelab.fusion.run import enqueue_launches, ready_fused, ready_subkernel

FIELDS = 10
PROBE = f"""__kernel void probe(const int gs0, const int gs1, __global int* out)
{{
    const size_t i0 = get_global_id(0), i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    __global int* o = out + (i1 * gs0 + i0) * {FIELDS};
    o[0] = (int)get_global_id(0);
    o[1] = (int)get_global_id(1);
    o[2] = (int)get_global_size(0);
    o[3] = (int)get_global_size(1);
    o[4] = (int)get_num_groups(0);
    o[5] = (int)get_num_groups(1);
    o[6] = (int)get_group_id(0);
    o[7] = (int)get_local_id(0);
    o[8] = (int)get_local_size(0);
    o[9] = (int)get_work_dim();
}}
"""


def probe(found, gs: tuple[int, ...], local: tuple[int, ...]) -> tuple[SubKernel, cl.Buffer]:
    g0, g1 = gs[0], gs[1] if len(gs) > 1 else 1
    buf = cl.Buffer(context_for(found), cl.mem_flags.READ_WRITE, size=g0 * g1 * FIELDS * 4)
    return SubKernel("probe", PROBE, (), gs, local, (np.int32(g0), np.int32(g1), buf), f"probe{gs}"), buf


def read(queue, buf: cl.Buffer) -> np.ndarray:
    host = np.empty(buf.size // 4, np.int32)
    cl.enqueue_copy(queue, host, buf)
    queue.finish()
    return host


def test_builtins_read_the_same_fused_as_alone(found, queue) -> None:
    unit = 2 * found.limits.wave_size  # each probe's work-group is two waves wide
    shapes = [((21, 3), (unit, 1)), ((3 * unit + 5,), (unit,)), ((unit - 1, 2), (unit, 1))]
    probes = [probe(found, gs, local) for gs, local in shapes]
    subs = [s for s, _ in probes]

    alone = []
    for s, buf in probes:
        cl.enqueue_fill_buffer(queue, buf, np.int32(-1), 0, buf.size)
        enqueue_launches(queue, [ready_subkernel(found, s)])
        alone.append(read(queue, buf))

    fused = fuse(subs, found.limits.wave_size, layout="paper")
    assert fused.local_size == (unit, 1) and fused.offsets[1] > 0
    for _, buf in probes:
        cl.enqueue_fill_buffer(queue, buf, np.int32(-1), 0, buf.size)
    enqueue_launches(queue, [ready_fused(found, fused)])
    for (s, buf), want in zip(probes, alone, strict=True):
        got = read(queue, buf).reshape(-1, FIELDS)
        assert (want != -1).all(), f"{s.label}: the launch of its own left work-items out"
        np.testing.assert_array_equal(got, want.reshape(-1, FIELDS), err_msg=s.label)
    one_d = alone[1].reshape(-1, FIELDS)
    assert set(one_d[:, 9]) == {1} and set(one_d[:, 3]) == {1}  # a 1-D probe still sees one dimension
    assert one_d[:, 6].max() == 3  # group ids 0..3 of its own range, not of the fused one


def test_group_builtins_without_rounding_are_refused(found) -> None:
    sub, _ = probe(found, (21, 3), (found.limits.wave_size, 1))
    with pytest.raises(FusionError, match="get_group_id"):
        fuse([sub], found.limits.wave_size, round_to_wave=False)

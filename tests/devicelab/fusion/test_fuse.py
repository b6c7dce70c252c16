"""The fused kernel's source (figures 5 and 6) and arguments, and what ``fuse`` refuses. No OpenCL
driver is needed: the source is checked by parsing it again."""

from __future__ import annotations

import numpy as np
import pytest

from devicelab.backends.opencl.programs import build_options, program_source
from devicelab.fusion import FusionError, SubKernel, fuse
from devicelab.fusion.parse import parse_kernel


class FakeBuffer:
    """Stands for a cl.Buffer: what the independence check reads is its handle."""

    def __init__(self, handle: int) -> None:
        self.int_ptr = handle


ATTRS = {"vector_width": 4, "pixel_vectors": 2, "out_channels_per_item": 2, "kernel_size": (3, 3), "rows_per_item": 2}


def library_sub(kernel: str, gs: tuple[int, ...], local: tuple[int, ...] | None, base: int) -> SubKernel:
    """A sub-kernel of the library with placeholder arguments: buffers numbered from ``base``."""
    source, options = program_source(kernel, "fp32"), build_options("fp32", ATTRS)
    params = parse_kernel(source, options, kernel).params
    args = tuple(
        FakeBuffer(base + i) if "*" in source_text(source, options, kernel, i) else np.int32(1)
        for i in range(len(params))
    )
    return SubKernel(kernel, source, options, gs, local, args, label=f"{kernel}@{base}")


def source_text(source: str, options: tuple[str, ...], kernel: str, i: int) -> str:
    p = parse_kernel(source, options, kernel).params[i]
    return parse_kernel(source, options, kernel).text[p.start : p.end]


def test_the_fused_source_follows_figures_5_and_6() -> None:
    subs = [library_sub("conv2d_1x1", (5, 6), (4, 2), 100), library_sub("pool2d", (3, 4), (2, 4), 200)]
    fused = fuse(subs, wave_size=8)
    src = fused.source
    assert fused.kernel_name == "fused_conv2d_1x1_pool2d"
    assert "#define GLOBAL_SIZE_2_DIMS(i) const uint global_size_dim0_##i, const uint global_size_dim1_##i" in src
    assert "#define GLOBAL_ID_CONDITION_2_DIMS(i) (get_global_id(0) < (size_t)offset_##i + global_size_dim0_##i)" in src
    assert (
        "#define SKIP_ID_2_DIMS(i, id0, id1) if ((id0) >= global_size_dim0_##i || (id1) >= global_size_dim1_##i)" in src
    )
    assert src.index("    if GLOBAL_ID_CONDITION_2_DIMS(0) {") < src.index(
        "    else if GLOBAL_ID_CONDITION_2_DIMS(1) {"
    )
    assert "SKIP_ID_2_DIMS(1, get_global_id(0) - (size_t)offset_1, get_global_id(1));" in src
    assert "const int i0 = (get_global_id(0) - (size_t)offset_0);" in src  # table 2 in the bodies
    assert "const int i0 = (get_global_id(0) - (size_t)offset_1);" in src
    assert "const int i1 = get_global_id(1);" in src  # dimension 1 is not offset
    assert src.count("float4 ll_store(") + src.count("void ll_store(") == 1  # a shared helper, once
    assert src.count("ll_act_any(float4 v") == 1

    again = parse_kernel(src, (), fused.kernel_name)  # the fused kernel is valid (OpenCL) C
    names = [q.name for q in again.params]
    own = len(parse_kernel(subs[0].source, subs[0].options, "conv2d_1x1").params)
    assert names[:5] == ["offset_0", "global_size_dim0_0", "global_size_dim1_0", "gs0_0", "gs1_0"]
    assert names[3 + own : 3 + own + 5] == ["offset_1", "global_size_dim0_1", "global_size_dim1_1", "gs0_1", "gs1_1"]
    assert len(names) == len(fused.args)


def test_the_arguments_are_offset_extents_then_the_sub_kernels_own() -> None:
    subs = [library_sub("softmax", (3, 5), (1, 4), 10), library_sub("transpose", (13, 7), (4, 2), 20)]
    fused = fuse(subs, wave_size=8)
    assert fused.offsets == (0, 8) and fused.sizes == ((8, 5), (16, 7)) and fused.global_size == (24, 7)
    n0 = len(subs[0].args)
    assert fused.args[:3] == (0, 8, 5) and fused.args[3 : 3 + n0] == subs[0].args
    assert fused.args[3 + n0 : 6 + n0] == (8, 16, 7) and fused.args[6 + n0 :] == subs[1].args
    assert all(isinstance(a, np.uint32) for a in fused.args[:3])
    assert fused.labels == ("softmax@10", "transpose@20")
    assert fused.padding == 24 * 7 - 8 * 5 - 16 * 7


def test_rounding_off_changes_the_launch_not_the_source() -> None:
    subs = [library_sub("softmax", (3, 5), (1, 4), 10), library_sub("transpose", (13, 7), (4, 2), 20)]
    on, off = fuse(subs, 8), fuse(subs, 8, round_to_wave=False)
    assert on.source == off.source and on.rounded and not off.rounded
    assert off.offsets == (0, 3) and off.sizes == ((3, 5), (13, 7)) and off.global_size == (16, 7)


def test_the_same_kernel_twice_gets_suffixed_parameters() -> None:
    subs = [library_sub("copy_slice", (7, 1), (8, 1), 10), library_sub("copy_slice", (9, 2), (8, 1), 20)]
    fused = fuse(subs, 8)
    names = [q.name for q in parse_kernel(fused.source, (), fused.kernel_name).params]
    assert "src_0" in names and "src_1" in names and "src" not in names


def test_sub_kernels_that_share_a_written_buffer_are_not_independent() -> None:
    a = library_sub("softmax", (3, 5), (1, 4), 10)
    b = library_sub("transpose", (13, 7), (4, 2), 20)
    reads_a_output = SubKernel(
        b.name, b.source, b.options, b.global_size, b.local_size, (b.args[0], b.args[1], a.args[3], *b.args[3:]), "t"
    )
    with pytest.raises(FusionError, match="not independent"):
        fuse([a, reads_a_output], 8)
    same_input = SubKernel(
        b.name, b.source, b.options, b.global_size, b.local_size, (*b.args[:2], a.args[2], *b.args[3:]), "t"
    )
    fuse([a, same_input], 8)  # both only read it: independent


def test_argument_counts_and_options_must_match() -> None:
    a = library_sub("softmax", (3, 5), (1, 4), 10)
    short = SubKernel(a.name, a.source, a.options, a.global_size, a.local_size, a.args[:-1])
    with pytest.raises(FusionError, match="takes 6 arguments, 5 were given"):
        fuse([short], 8)
    other = SubKernel(a.name, a.source, (*a.options, "-cl-fast-relaxed-math"), a.global_size, a.local_size, a.args)
    with pytest.raises(FusionError, match="different compiler options"):
        fuse([a, other], 8)
    with pytest.raises(FusionError, match="nothing to fuse"):
        fuse([], 8)


GROUPED = """__kernel void grouped(const int n, __global int* y)
{
    if (get_global_id(0) >= n) return;
    y[get_global_id(0)] = (int)get_local_id(0);
}
"""


def test_work_group_builtins_need_rounding_and_the_own_work_group() -> None:
    sub = SubKernel("grouped", GROUPED, (), (13, 1), (8, 1), (np.int32(13), FakeBuffer(1)))
    fuse([sub], wave_size=8)
    with pytest.raises(FusionError, match="without rounding"):
        fuse([sub], wave_size=8, round_to_wave=False)
    with pytest.raises(FusionError, match="get_local_id"):
        fuse([sub], wave_size=16)  # the fused work-group would be 16 wide


def test_a_helper_calling_a_work_item_builtin_is_refused() -> None:
    src = "int where(void) { return (int)get_global_id(0); }\n__kernel void k(__global int* y) { y[where()] = 1; }\n"
    with pytest.raises(FusionError, match="helper 'where' calls get_global_id"):
        fuse([SubKernel("k", src, (), (4, 1), None, (FakeBuffer(1),))], 8)


def test_a_kernel_with_attributes_is_refused() -> None:
    src = "__kernel __attribute__((reqd_work_group_size(8, 1, 1))) void k(__global int* y) { y[0] = 1; }\n"
    with pytest.raises(FusionError, match="attributes"):
        fuse([SubKernel("k", src, (), (4, 1), None, (FakeBuffer(1),))], 8)

"""The fused kernel's source (figures 5 and 6) and arguments, and what ``fuse`` refuses. No OpenCL
driver is needed: the source is checked by parsing it again."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from devicelab.backends.opencl.programs import build_options, program_source
from devicelab.fusion.errors import FusionError
from devicelab.fusion.fuse import SubKernel, fuse
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
    fused = fuse(subs, wave_size=8, layout="paper")
    src = fused.source
    assert fused.kernel_name == "fused_conv2d_1x1_pool2d" and fused.layout == "paper"
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
    fused = fuse(subs, wave_size=8, layout="paper")
    assert fused.offsets == (0, 8) and fused.sizes == ((8, 5), (16, 7)) and fused.global_size == (24, 7)
    n0 = len(subs[0].args)
    assert fused.args[:3] == (0, 8, 5) and fused.args[3 : 3 + n0] == subs[0].args
    assert fused.args[3 + n0 : 6 + n0] == (8, 16, 7) and fused.args[6 + n0 :] == subs[1].args
    assert all(isinstance(a, np.uint32) for a in fused.args[:3])
    assert fused.labels == ("softmax@10", "transpose@20")
    assert fused.padding == 24 * 7 - 3 * 5 - 13 * 7  # the other dimension's, and rounding's


def test_rounding_off_changes_the_launch_not_the_source() -> None:
    subs = [library_sub("softmax", (3, 5), (1, 4), 10), library_sub("transpose", (13, 7), (4, 2), 20)]
    on, off = fuse(subs, 8, layout="paper"), fuse(subs, 8, round_to_wave=False, layout="paper")
    assert on.source == off.source and on.rounded and not off.rounded
    assert off.offsets == (0, 3) and off.sizes == ((3, 5), (13, 7)) and off.global_size == (16, 7)
    packed_on, packed_off = fuse(subs, 8), fuse(subs, 8, round_to_wave=False)
    assert packed_on.source == packed_off.source != on.source  # a program per layout, not per size
    assert packed_off.offsets == (0, 15) and packed_off.global_size == (112,)  # 15 + 91, up to the group of 8


def test_the_packed_source_recovers_each_sub_kernels_ids_from_its_linear_id() -> None:
    subs = [library_sub("conv2d_1x1", (5, 6), (4, 2), 100), library_sub("pool2d", (3, 4), (2, 4), 200)]
    fused = fuse(subs, wave_size=8)
    src = fused.source
    assert fused.layout == "packed" and fused.layout_note == "" and "packed layout" in src
    assert "#define WORK_ITEMS_2_DIMS(i) (global_size_dim0_##i * global_size_dim1_##i)" in src
    assert "GLOBAL_ID_CONDITION" not in src and "SKIP_ID" not in src
    first, second = src.index("    if (get_global_id(0) < (size_t)offset_1) {"), src.index("    else {")
    assert first < second  # the last part's branch needs no condition
    assert "const uint linear_id_1 = (uint)(get_global_id(0) - (size_t)offset_1);" in src
    assert "if (linear_id_1 >= WORK_ITEMS_2_DIMS(1)) { return; }" in src
    assert "const uint global_id1_1 = linear_id_1 / global_size_dim0_1;" in src  # one division for both ids
    assert "const uint global_id0_1 = linear_id_1 - global_id1_1 * global_size_dim0_1;" in src
    assert "const int i0 = ((size_t)global_id0_0);" in src  # packed table 2
    assert "const int i1 = ((size_t)global_id1_1);" in src
    again = parse_kernel(src, (), fused.kernel_name)  # valid (OpenCL) C, with the paper's parameters
    assert [q.name for q in again.params][:5] == [
        "offset_0",
        "global_size_dim0_0",
        "global_size_dim1_0",
        "gs0_0",
        "gs1_0",
    ]
    assert len(again.params) == len(fused.args)


def test_the_packed_launch_is_one_dimension_of_whole_ranges() -> None:
    subs = [library_sub("softmax", (3, 5), (1, 4), 10), library_sub("transpose", (13, 7), (4, 2), 20)]
    fused = fuse(subs, wave_size=8)
    # 15 and 91 work-items, rounded to units of 8 (the wave; each work-group holds 4 or 8 items)
    assert fused.units == (8, 8) and fused.offsets == (0, 16) and fused.global_size == (16 + 96,)
    assert fused.sizes == ((3, 5), (13, 7)) and fused.local_size == (8,) and fused.padding == 112 - 15 - 91
    n0 = len(subs[0].args)
    assert fused.args[:3] == (0, 3, 5) and fused.args[3 + n0 : 6 + n0] == (16, 13, 7)
    paper = fuse(subs, wave_size=8, layout="paper")
    assert paper.padding == 24 * 7 - 3 * 5 - 13 * 7 > fused.padding
    wide = fuse([subs[0], dataclasses.replace(subs[1], local_size=(16, 2))], wave_size=8)
    assert wide.units == (8, 32) and wide.local_size == (8,)  # a work-group of 4 waves: its unit
    both = fuse([dataclasses.replace(s, local_size=(16, 2)) for s in subs], wave_size=8)
    assert both.local_size == (32,)  # as many work-items per group as each kernel's own


def test_a_row_or_a_column_needs_no_division() -> None:
    rows = [library_sub("softmax", (13, 1), (8, 1), 10), library_sub("transpose", (13, 7), (4, 2), 20)]
    fused = fuse(rows, wave_size=8)
    src = fused.source
    assert "const uint global_id0_0 = linear_id_0;" in src and "global_id1_0" not in src
    assert "const int i1 = ((size_t)0);" in src  # its row id is the constant 0
    assert "const uint global_id1_1 = linear_id_1 / global_size_dim0_1;" in src
    taller = fuse([dataclasses.replace(rows[0], global_size=(13, 2)), rows[1]], wave_size=8)
    assert taller.source != src  # a program per combination and which dimensions have extent 1
    column = fuse([dataclasses.replace(rows[0], global_size=(1, 13)), rows[1]], wave_size=8).source
    assert "const uint global_id1_0 = linear_id_0;" in column and "const int i0 = ((size_t)0);" in column


def test_layouts_by_name() -> None:
    subs = [library_sub("softmax", (3, 5), (1, 4), 10), library_sub("transpose", (13, 7), (4, 2), 20)]
    assert fuse(subs, 8, layout="packed").layout == "packed" and fuse(subs, 8, layout="paper").layout == "paper"
    assert fuse(subs, 8, True, layout="auto") == fuse(subs, 8, layout="packed")
    with pytest.raises(ValueError, match="layout must be one of"):
        fuse(subs, 8, layout="rows")


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
    for layout in ("packed", "paper"):
        fused = fuse([sub], wave_size=8, layout=layout)
        assert fused.work_group_fixed and fused.local_size[0] == 8
        with pytest.raises(FusionError, match="without rounding"):
            fuse([sub], wave_size=8, round_to_wave=False, layout=layout)
        with pytest.raises(FusionError, match="get_local_id"):
            fuse([sub], wave_size=16, layout=layout)  # the fused work-group would be 16 wide


GROUPED_2D = """__kernel void grouped2(const int gs0, const int gs1, __global int* y)
{
    const int i0 = get_global_id(0), i1 = get_global_id(1);
    if (i0 >= gs0 || i1 >= gs1) return;
    y[i1 * gs0 + i0] = (int)(get_group_id(0) * 100 + get_group_id(1));
}
"""
LOCAL_MEMORY = """__kernel void scratch(const int n, __global float* y)
{
    __local float tmp[64];
    const int i = get_global_id(0);
    if (i >= n) return;
    tmp[i % 64] = 2.0f * i;
    y[i] = tmp[i % 64];
}
"""


def test_a_kernel_that_tells_its_work_group_is_packed_only_when_its_groups_stay_whole() -> None:
    rows = SubKernel("grouped2", GROUPED_2D, (), (13, 3), (8, 1), (np.int32(13), np.int32(3), FakeBuffer(1)))
    packed = fuse([rows], wave_size=8)
    assert packed.layout == "packed" and packed.work_group_fixed
    assert packed.sizes == ((16, 3),) and packed.global_size == (48,)  # linearised over whole groups
    assert "((size_t)global_id1_0 / get_local_size(1))" in packed.source  # packed table 2: group ids from own ids

    square = dataclasses.replace(rows, local_size=(4, 2))  # its groups span two rows: packing would split them
    with pytest.raises(FusionError, match="packed layout is not exact here: kernel 'grouped2' uses get_group_id"):
        fuse([square], wave_size=4, layout="packed")
    with pytest.raises(FusionError, match=r"work-group \[4, 2\].*; nor in the packed layout: .*spans more than"):
        fuse([square], wave_size=4)  # and the paper layout's work-groups are one row high
    unknown = dataclasses.replace(rows, local_size=None)
    with pytest.raises(FusionError, match="work-group is the driver's choice"):
        fuse([unknown], wave_size=8, layout="packed")


def test_local_memory_tells_the_work_group_too() -> None:
    sub = SubKernel("scratch", LOCAL_MEMORY, (), (50,), (8,), (np.int32(50), FakeBuffer(1)))
    assert parse_kernel(LOCAL_MEMORY, (), "scratch").group_dependence() == ("__local memory",)
    assert fuse([sub], wave_size=8).work_group_fixed
    with pytest.raises(FusionError, match=r"uses \['__local memory'\].*without rounding"):
        fuse([sub], wave_size=8, round_to_wave=False)  # a work-group could hold two parts' work-items


def test_work_group_blind_kernels_pack_whatever_their_work_group() -> None:
    sub = library_sub("transpose", (13, 7), (2, 4), 20)  # a 2-D work-group, no group built-in
    assert parse_kernel(sub.source, sub.options, sub.name).group_dependence() == ()
    fused = fuse([sub], wave_size=8, round_to_wave=False)
    assert fused.layout == "packed" and not fused.work_group_fixed


def test_a_helper_reading_a_global_id_the_packed_layout_would_rewrite_falls_back() -> None:
    src = (
        "int row(void) { return (int)get_global_id(1); }\n"
        "__kernel void k(__global int* y) { y[get_global_id(0) + 4 * row()] = 1; }\n"
    )
    sub = SubKernel("k", src, (), (4, 2), None, (FakeBuffer(1),))
    auto = fuse([sub], 8)
    assert auto.layout == "paper" and "helper 'row' calls get_global_id" in auto.layout_note
    with pytest.raises(FusionError, match="helper 'row' calls get_global_id"):
        fuse([sub], 8, layout="packed")


def test_a_helper_calling_a_work_item_builtin_is_refused() -> None:
    src = "int where(void) { return (int)get_global_id(0); }\n__kernel void k(__global int* y) { y[where()] = 1; }\n"
    with pytest.raises(FusionError, match="helper 'where' calls get_global_id"):
        fuse([SubKernel("k", src, (), (4, 1), None, (FakeBuffer(1),))], 8)


def test_a_kernel_with_attributes_is_refused() -> None:
    src = "__kernel __attribute__((reqd_work_group_size(8, 1, 1))) void k(__global int* y) { y[0] = 1; }\n"
    with pytest.raises(FusionError, match="attributes"):
        fuse([SubKernel("k", src, (), (4, 1), None, (FakeBuffer(1),))], 8)


CUBE = """__kernel void cube(const int n0, const int n1, const int n2, __global int* y)
{
    const int i0 = get_global_id(0), i1 = get_global_id(1), i2 = get_global_id(2);
    if (i0 >= n0 || i1 >= n1 || i2 >= n2) return;
    y[(i2 * n1 + i1) * n0 + i0] = 1;
}
"""


@pytest.mark.parametrize("size", [(3, 4, 5), (3, 1, 5), (1, 4, 5), (7, 1, 1)])
def test_the_packed_ids_enumerate_an_n_d_range_dimension_0_fastest(size) -> None:
    """The id lines the packed branch declares, evaluated for every linear id of the part (C's
    unsigned division is Python's floor division here), give every id of the range once, in the
    order a linear id runs."""
    import itertools
    import re

    args = (np.int32(size[0]), np.int32(size[1]), np.int32(size[2]), FakeBuffer(1))
    fused = fuse([SubKernel("cube", CUBE, (), size, None, args)], wave_size=4)
    lines = re.findall(r"const uint (global_id\d_0) = ([^;]+);", fused.source)
    assert lines, fused.source
    sizes = {f"global_size_dim{d}_0": x for d, x in enumerate(size)}
    seen = []
    for linear in range(int(np.prod(size))):
        ids: dict[str, int] = {"linear_id_0": linear, **sizes}
        for name, expr in lines:
            ids[name] = eval(expr.replace("/", "//"), {}, dict(ids))  # noqa: S307 (our own generated text)
        seen.append(tuple(ids.get(f"global_id{d}_0", 0) for d in range(3)))
    want = [(i0, i1, i2) for i2, i1, i0 in itertools.product(range(size[2]), range(size[1]), range(size[0]))]
    assert seen == want

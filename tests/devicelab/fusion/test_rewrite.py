"""Renaming colliding identifiers (with shared helpers kept once) and table 2's rewriting of the
work-item built-ins."""

from __future__ import annotations

import pytest

from devicelab.fusion.errors import FusionError
from devicelab.fusion.parse import BuiltinCall, parse_kernel
from devicelab.fusion.rewrite import (
    Edit,
    FusedNames,
    apply_edits,
    fused_names,
    plan_renames,
    rename_edits,
    rewrite_builtin,
    shared_file_scope_names,
)

HELPERS = """
float half_of(float v) { return v * 0.5f; }
float scaled(float v) { return half_of(v) * SCALE; }
"""


def kernel(name: str, body: str, params: str = "const int n, __global const float* x, __global float* y") -> str:
    return f"__kernel void {name}({params})\n{{\n{body}\n}}\n"


def parsed(source: str, name: str, options: tuple[str, ...] = ("-DSCALE=2.0f",)):
    return parse_kernel(source, options, name)


def test_identical_helpers_are_shared_and_colliding_parameters_renamed() -> None:
    a = parsed(HELPERS + kernel("a", "    y[0] = scaled(x[0]) + n;"), "a")
    b = parsed(HELPERS + kernel("b", "    y[1] = half_of(x[1]);"), "b")
    plan = plan_renames([a, b])
    assert plan.shared == {"half_of", "scaled"}
    assert plan.file_scope == ({}, {})
    assert plan.params == ({"n": "n_0", "x": "x_0", "y": "y_0"}, {"n": "n_1", "x": "x_1", "y": "y_1"})


def test_helpers_that_differ_are_renamed_and_so_are_the_helpers_that_call_them() -> None:
    a = parsed(HELPERS + kernel("a", "    y[0] = scaled(x[0]);"), "a", ("-DSCALE=2.0f",))
    b = parsed(HELPERS + kernel("b", "    y[0] = scaled(x[0]);"), "b", ("-DSCALE=3.0f",))
    assert shared_file_scope_names([a, b]) == {"half_of"}  # 'scaled' differs by its expanded SCALE
    plan = plan_renames([a, b])
    assert plan.file_scope == ({"scaled": "scaled_0"}, {"scaled": "scaled_1"})

    calls_differing = "float twice(float v) { return scaled(v) * 2.0f; }\n"
    a2 = parsed(HELPERS + calls_differing + kernel("a", "    y[0] = twice(x[0]);"), "a", ("-DSCALE=2.0f",))
    b2 = parsed(HELPERS + calls_differing + kernel("b", "    y[0] = twice(x[0]);"), "b", ("-DSCALE=3.0f",))
    assert shared_file_scope_names([a2, b2]) == {"half_of"}  # 'twice' is the same text but calls 'scaled'


def test_names_only_one_sub_kernel_spells_are_left_alone() -> None:
    a = parsed(kernel("a", "    y[0] = x[0];", "__global const float* x, __global float* y"), "a")
    b = parsed(kernel("b", "    out[0] = in0[0];", "__global const float* in0, __global float* out"), "b")
    assert plan_renames([a, b]).params == ({}, {})


def test_a_new_name_avoids_every_identifier_of_every_sub_kernel() -> None:
    a = parsed(kernel("a", "    const int x_0 = 1; y[0] = x[x_0];"), "a")
    b = parsed(kernel("b", "    y[0] = x[0];"), "b")
    plan = plan_renames([a, b])
    assert plan.params[0]["x"] == "x_0_1"
    assert plan.params[1]["x"] == "x_1"


def test_a_parameter_that_shadows_another_sub_kernels_helper_is_renamed() -> None:
    a = parsed("float scale(float v) { return v * 3.0f; }\n" + kernel("a", "    y[0] = scale(x[0]);"), "a")
    b = parsed(
        kernel("b", "    y[0] = x[0] * scale;", "const float scale, __global const float* x, __global float* y"), "b"
    )
    plan = plan_renames([a, b])
    assert plan.file_scope[0] == {"scale": "scale_0"}
    assert plan.params[1]["scale"] == "scale_1"


def test_renaming_edits_declarations_and_uses_but_not_components() -> None:
    src = kernel("a", "    float4 x4 = vload4(0, x); float n2 = x4.x + n;\n    { const int n = 2; y[n] = n2; }")
    p = parsed(src, "a")
    edits = rename_edits(p, p.kernel_item, {"n": "n_0", "x": "x_0"})
    body = apply_edits(p.text, p.body_start, p.body_end, edits)
    assert "vload4(0, x_0)" in body and "x4.x + n_0" in body  # the component '.x' is kept
    assert "{ const int n_0 = 2; y[n_0] = n2; }" in body  # a shadowing local, consistently renamed
    header = [apply_edits(p.text, q.start, q.end, edits) for q in p.params]
    assert header == ["const int n_0", "__global const float* x_0", "__global float* y"]


def test_overlapping_edits_are_refused() -> None:
    with pytest.raises(FusionError, match="overlapping"):
        apply_edits("abcdef", 0, 6, [Edit(1, 4, "x"), Edit(3, 5, "y")])
    assert apply_edits("abcdef", 1, 5, [Edit(2, 3, "XY"), Edit(0, 1, "no")]) == "bXYde"


NAMES = FusedNames(prefix="", kernel="fused_a_b", dims=2)


@pytest.mark.parametrize(
    "builtin,dim,want",
    [
        ("get_global_id", 0, "(get_global_id(0) - (size_t)offset_1)"),
        ("get_global_id", 1, None),
        ("get_global_size", 0, "((size_t)global_size_dim0_1)"),
        ("get_global_size", 1, "((size_t)global_size_dim1_1)"),
        ("get_global_size", 2, "((size_t)1)"),
        ("get_num_groups", 0, "((size_t)global_size_dim0_1 / get_local_size(0))"),
        ("get_num_groups", 1, "((size_t)global_size_dim1_1 / get_local_size(1))"),
        ("get_group_id", 0, "(get_group_id(0) - (size_t)offset_1 / get_local_size(0))"),
        ("get_group_id", 1, None),
        ("get_local_id", 0, None),
        ("get_local_size", 0, None),
        ("get_work_dim", None, "((uint)1)"),
    ],
)
def test_table_2(builtin, dim, want) -> None:
    assert rewrite_builtin(BuiltinCall(0, 0, builtin, dim, 0), 1, 1, NAMES) == want


@pytest.mark.parametrize(
    "builtin,dim,want",
    [
        ("get_global_id", 0, "((size_t)global_id0_1)"),
        ("get_global_id", 1, "((size_t)global_id1_1)"),
        ("get_global_id", 2, "((size_t)0)"),  # past its own two dimensions
        ("get_global_size", 0, "((size_t)global_size_dim0_1)"),
        ("get_global_size", 1, "((size_t)global_size_dim1_1)"),
        ("get_global_size", 2, "((size_t)1)"),
        ("get_num_groups", 0, "((size_t)global_size_dim0_1 / get_local_size(0))"),
        ("get_num_groups", 1, "((size_t)global_size_dim1_1 / get_local_size(1))"),
        ("get_group_id", 0, "((size_t)global_id0_1 / get_local_size(0))"),
        ("get_group_id", 1, "((size_t)global_id1_1 / get_local_size(1))"),  # a 1-D launch: get_local_size(1) is 1
        ("get_group_id", 2, "((size_t)0)"),
        ("get_local_id", 0, None),
        ("get_local_size", 1, None),
        ("get_work_dim", None, "((uint)2)"),
    ],
)
def test_table_2_in_the_packed_layout(builtin, dim, want) -> None:
    assert rewrite_builtin(BuiltinCall(0, 0, builtin, dim, 0), 1, 2, NAMES, "packed") == want


def test_a_dimension_of_extent_1_has_id_0_in_the_packed_layout() -> None:
    def packed(builtin: str, dim: int, live: tuple[int, ...]) -> str | None:
        return rewrite_builtin(BuiltinCall(0, 0, builtin, dim, 0), 1, 2, NAMES, "packed", live_dims=live)

    assert packed("get_global_id", 0, (0,)) == "((size_t)global_id0_1)"  # a row
    assert packed("get_global_id", 1, (0,)) == "((size_t)0)" and packed("get_group_id", 1, (0,)) == "((size_t)0)"
    assert packed("get_global_size", 1, (0,)) == "((size_t)global_size_dim1_1)"  # 1, its own
    assert packed("get_global_id", 0, (1,)) == "((size_t)0)"  # a column
    assert packed("get_global_id", 1, (1,)) == "((size_t)global_id1_1)"


@pytest.mark.parametrize(
    "builtin",
    [
        "barrier",
        "work_group_barrier",
        "get_global_linear_id",
        "work_group_reduce_add",
        "get_sub_group_local_id",
        "get_num_sub_groups",
        "async_work_group_copy",
        "wait_group_events",
    ],
)
def test_builtins_that_cannot_run_fused_are_refused(builtin) -> None:
    with pytest.raises(FusionError, match=builtin):
        rewrite_builtin(BuiltinCall(0, 0, builtin, 0, 0), 0, 2, NAMES)


def test_a_dimension_that_is_not_a_constant_is_refused() -> None:
    with pytest.raises(FusionError, match="constant dimension"):
        rewrite_builtin(BuiltinCall(0, 0, "get_global_id", None, 0), 0, 2, NAMES)


def test_fused_names_take_a_prefix_when_a_sub_kernel_spells_one() -> None:
    assert fused_names("fused_a", 2, 2, {"x", "y"}).prefix == ""
    names = fused_names("fused_a", 2, 2, {"x", "offset_1"})
    assert names.prefix == "pf1_" and names.offset(1) == "pf1_offset_1" and names.kernel == "pf1_fused_a"
    assert names.macro("SKIP_ID") == "pf1_SKIP_ID_2_DIMS"
    assert fused_names("fused_a", 2, 2, {"SKIP_ID_2_DIMS"}).prefix == "pf1_"
    assert fused_names("fused_a", 2, 2, {"linear_id_1"}).linear_id(1) == "pf1_linear_id_1"  # the packed layout's
    assert fused_names("fused_a", 2, 2, {"global_id1_0"}).global_id(1, 0) == "pf1_global_id1_0"
    assert fused_names("fused_a", 2, 2, {"WORK_ITEMS_2_DIMS"}).prefix == "pf1_"

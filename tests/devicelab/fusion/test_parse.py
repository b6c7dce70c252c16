"""Parsing an OpenCL C kernel source: preprocessing with its build options, file-scope items,
the kernel's parameters and body, identifier occurrences and work-item built-in calls."""

from __future__ import annotations

import pytest

from devicelab.backends.opencl.plan import KERNELS
from devicelab.backends.opencl.programs import build_options, program_source
from devicelab.fusion.errors import FusionError
from devicelab.fusion.parse import parse_kernel, preprocess, split_options, tokenize

SOURCE = """// a kernel in the library's style
#pragma OPENCL EXTENSION cl_khr_fp16 : enable
__constant float SCALE = 2.0f;

/* a helper */
__attribute__((always_inline)) real_v twice(const real_v v) { return v * (real_v)SCALE; }

__kernel void k(const int n, __global const real* x, __global real* restrict y, __local float* tmp)
{
    const size_t i = get_global_id(0), j = get_global_id(1);
    float4 v = (float4)(1.0f, 2.0f, 3.0f, 4.0f);
    if (i >= n) return;
#pragma unroll
    for (int r = 0; r < VW; ++r) y[i] = x[i] * v.s1 + twice((real_v)(x[i])).x;
}

__kernel void other(__global float* z) { z[0] = 1.0f; }
"""
OPTIONS = ("-cl-mad-enable", "-Dreal=float", "-Dreal_v=float4", "-DVW=4")


def test_split_options_separates_macros_from_compiler_options() -> None:
    defines, others = split_options(("-cl-mad-enable", "-Dreal=float", "-D", "FLAG", "-DLANES=(int2)(0,1)"))
    assert defines == [("real", "float"), ("FLAG", "1"), ("LANES", "(int2)(0,1)")]
    assert others == ("-cl-mad-enable",)


def test_preprocessing_expands_the_build_options_and_drops_comments() -> None:
    text = preprocess(SOURCE, OPTIONS)
    assert "float4 twice(const float4 v)" in text
    assert "r < 4" in text and "#pragma unroll" in text and "#pragma OPENCL EXTENSION" in text
    assert "//" not in text and "/*" not in text and "real" not in text.replace("restrict", "")


def test_preprocessing_errors_are_fusion_errors() -> None:
    with pytest.raises(FusionError, match="preprocessing failed.*Misplaced #else"):
        preprocess("#else\n__kernel void k() {}", ())
    with pytest.raises(FusionError, match="preprocessing failed"):
        preprocess("#if\n#endif\n__kernel void k() {}", ())  # pcpp raises here rather than reporting


@pytest.mark.parametrize(
    "condition", ["#ifdef cl_khr_fp16", "#if __OPENCL_VERSION__ >= 200", "#if defined(__IMAGE_SUPPORT__)"]
)
def test_conditionals_on_what_only_the_compiler_defines_are_refused(condition) -> None:
    with pytest.raises(FusionError, match="only the OpenCL compiler defines"):
        preprocess(f"{condition}\nint a;\n#endif\n", ())
    assert "int b" in preprocess("#ifdef OUR_OWN\nint a;\n#else\nint b;\n#endif\n", ())  # C's answer: undefined


def test_tokens_know_their_offsets() -> None:
    text = "int a;\n  float b = 1.5f;"
    assert [(t.offset, t.value) for t in tokenize(text)][3:6] == [(9, "float"), (15, "b"), (17, "=")]


def test_items_of_the_file_scope() -> None:
    p = parse_kernel(SOURCE, OPTIONS, "k")
    assert [(i.kind, i.name, i.is_kernel) for i in p.items] == [
        ("pragma", None, False),
        ("declaration", "SCALE", False),
        ("function", "twice", False),
        ("function", "k", True),
        ("function", "other", True),
    ]
    assert p.kernel_item == 3 and p.file_scope_names == {"SCALE", "twice"}
    twice = p.items[2]
    assert p.text[twice.start : twice.end].startswith("__attribute__((always_inline)) float4 twice")
    assert p.text[twice.end - 1] == "}" and "SCALE" in twice.refs and not p.kernel_attributes


def test_kernel_parameters_body_and_what_it_writes() -> None:
    p = parse_kernel(SOURCE, OPTIONS, "k")
    assert [(q.name, q.writes) for q in p.params] == [("n", False), ("x", False), ("y", True), ("tmp", True)]
    assert [p.text[q.start : q.end] for q in p.params][1:3] == ["__global const float* x", "__global float* restrict y"]
    body = p.text[p.body_start : p.body_end]
    assert body.startswith("{") and body.endswith("}") and "return;" in body


def test_identifiers_are_found_but_not_fields_or_vector_components() -> None:
    p = parse_kernel(SOURCE, OPTIONS, "k")
    in_kernel = [n for n in p.names if n.item == p.kernel_item]
    xs = [n for n in in_kernel if n.name == "x"]
    assert len(xs) == 3  # the parameter and two uses; '.x' is a component
    assert all(p.text[n.offset : n.offset + 1] == "x" for n in xs)
    assert not any(n.name in ("s1",) for n in p.names)
    assert {n.name for n in in_kernel} >= {"n", "y", "i", "j", "v", "r", "twice", "get_global_id"}


def test_work_item_builtin_calls_with_their_dimension() -> None:
    p = parse_kernel(SOURCE, OPTIONS, "k")
    calls = [(c.builtin, c.dim, p.text[c.offset : c.end]) for c in p.builtins]
    assert calls == [("get_global_id", 0, "get_global_id(0)"), ("get_global_id", 1, "get_global_id(1)")]


def test_a_kernel_that_is_not_in_the_source_is_refused() -> None:
    with pytest.raises(FusionError, match="no __kernel function 'missing'.*'k', 'other'"):
        parse_kernel(SOURCE, OPTIONS, "missing")
    with pytest.raises(FusionError, match="no __kernel function 'twice'"):
        parse_kernel(SOURCE, OPTIONS, "twice")  # a helper, not a kernel


def test_what_the_fuser_cannot_carry_is_refused() -> None:
    with pytest.raises(FusionError, match="struct"):
        parse_kernel("struct s { int a; };\n__kernel void k(__global int* y) { y[0] = 1; }", (), "k")
    with pytest.raises(FusionError, match="Typedef"):
        parse_kernel("typedef int myint;\n__kernel void k(__global int* y) { y[0] = 1; }", (), "k")
    with pytest.raises(FusionError, match="does not parse"):
        parse_kernel("__kernel void k(__global int* y) { y[0] = ; }", (), "k")
    attributed = parse_kernel(
        "__kernel __attribute__((reqd_work_group_size(8,1,1))) void k(__global int* y) {}", (), "k"
    )
    assert attributed.kernel_attributes


@pytest.mark.parametrize("precision", ["fp32", "fp16"])
@pytest.mark.parametrize("kernel", KERNELS)
def test_every_library_kernel_parses(kernel, precision) -> None:
    attrs = {
        "vector_width": 8,
        "pixel_vectors": 2,
        "out_channels_per_item": 4,
        "kernel_size": (3, 3),
        "rows_per_item": 2,
    }
    p = parse_kernel(program_source(kernel, precision), build_options(precision, attrs), kernel)
    assert [q.name for q in p.params][:2] == ["gs0", "gs1"]
    assert p.builtins_used() == {"get_global_id"}
    assert {c.dim for c in p.builtins} == {0, 1}
    assert any(q.writes for q in p.params)
    assert ("half" in p.text) == (precision == "fp16")

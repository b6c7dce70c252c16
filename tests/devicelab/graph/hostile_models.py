"""Small model files that describe huge work: the corpus of issue 18 (finding 6), built with onnx.helper.

Each builder returns the serialized bytes (a few hundred bytes at most) and is paired in ``ONNX_CASES``
with the node and op type the refusal must name. ``import_in_subprocess`` imports a file in a fresh
interpreter and reports the refusal and the process's peak RSS, so a test can show that the import
stayed small (the old importer folded these with numpy: 4 GB and more).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 17


def onnx_model(
    nodes: list[onnx.NodeProto],
    inits: list[onnx.TensorProto] | None = None,
    input_shape: list[int] | None = None,
    functions: list[onnx.FunctionProto] | None = None,
) -> bytes:
    """A model reading ``x`` (``input_shape``, default [1, 4]) and writing ``y``, serialized."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, input_shape or [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "hostile", [x], [y], initializer=inits or [])
    opsets = [helper.make_opsetid("", OPSET)] + ([helper.make_opsetid("local", 1)] if functions else [])
    model = helper.make_model(graph, opset_imports=opsets, functions=functions or [])
    return model.SerializeToString()  # type: ignore[no-any-return]


def i64(name: str, value: Any) -> onnx.TensorProto:
    """An int64 initializer."""
    return numpy_helper.from_array(np.array(value, dtype=np.int64), name)


def relu() -> onnx.NodeProto:
    """The one node that makes ``y`` an activation: Relu(x)."""
    return helper.make_node("Relu", ["x"], ["y"], name="relu")


def range_2_28() -> bytes:
    """Range(0, 2**28): 2 GiB of int64 once folded (4 GB at numpy's peak)."""
    node = helper.make_node("Range", ["start", "limit", "delta"], ["r"], name="r")
    return onnx_model([node, relu()], [i64("start", 0), i64("limit", 2**28), i64("delta", 1)])


def constant_of_shape_1g() -> bytes:
    """Four ConstantOfShape nodes of [1024, 1024, 1024]: 4 GiB each as float32."""
    nodes = [helper.make_node("ConstantOfShape", ["shape"], [f"c{i}"], name=f"fill{i}") for i in range(4)]
    return onnx_model([*nodes, relu()], [i64("shape", [1024, 1024, 1024])])


def expand_huge() -> bytes:
    """Expand of one float to [32768, 32768]: 4 GiB."""
    one = numpy_helper.from_array(np.ones(1, np.float32), "one")
    node = helper.make_node("Expand", ["one", "target"], ["e"], name="grow")
    return onnx_model([node, relu()], [one, i64("target", [1 << 15, 1 << 15])])


def folds_under_a_per_node_bound() -> bytes:
    """Sixteen ConstantOfShape nodes of 2**21 elements each: every one small, all of them 2**25."""
    nodes = [helper.make_node("ConstantOfShape", ["shape"], [f"c{i}"], name=f"fill{i}") for i in range(16)]
    return onnx_model([*nodes, relu()], [i64("shape", [2**21])])


def huge_input() -> bytes:
    """An input declared [1, 3, 100000, 100000]: 3e10 elements, 112 GiB of float32."""
    return onnx_model([relu()], input_shape=[1, 3, 100000, 100000])


def huge_activation() -> bytes:
    """A Pad whose output is [1, 1, 200001, 200001] from a [1, 1, 1, 1] input."""
    pad = helper.make_node("Pad", ["x", "pads"], ["y"], name="pad", mode="constant")
    return onnx_model([pad], [i64("pads", [0, 0, 100000, 100000, 0, 0, 100000, 100000])], input_shape=[1, 1, 1, 1])


def huge_initializer() -> bytes:
    """A Conv weight declared [65536, 65536, 3, 3] with no data at all."""
    w = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[65536, 65536, 3, 3])
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="conv", pads=[1, 1, 1, 1])
    return onnx_model([conv], [w], input_shape=[1, 65536, 1, 1])


def nested_functions(depth: int = 30) -> bytes:
    """Local functions that each call the one below twice: 2**29 nodes once inlined, from 2 kB."""
    opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid("local", 1)]
    functions = [helper.make_function("local", "f0", ["a"], ["b"], [helper.make_node("Relu", ["a"], ["b"])], opsets)]
    for k in range(1, depth):
        calls = [
            helper.make_node(f"f{k - 1}", ["a"], ["m"], domain="local"),
            helper.make_node(f"f{k - 1}", ["m"], ["b"], domain="local"),
        ]
        functions.append(helper.make_function("local", f"f{k}", ["a"], ["b"], calls, opsets))
    top = helper.make_node(f"f{depth - 1}", ["x"], ["y"], domain="local", name="top")
    return onnx_model([top], functions=functions)


# (case, builder, node the refusal names, op type it names, ImportLimits field it is over)
ONNX_CASES: list[tuple[str, Callable[[], bytes], str | None, str | None, str]] = [
    ("Range(0, 2**28)", range_2_28, "r", "Range", "max_folded_elements"),
    ("ConstantOfShape [1024]*3", constant_of_shape_1g, "fill0", "ConstantOfShape", "max_folded_elements"),
    ("Expand to [32768, 32768]", expand_huge, "grow", "Expand", "max_folded_elements"),
    ("16 folds of 2**21", folds_under_a_per_node_bound, "fill8", "ConstantOfShape", "max_folded_elements"),
    ("input [1,3,100000,100000]", huge_input, "x", None, "max_tensor_elements"),
    ("Pad to [1,1,200001,200001]", huge_activation, "pad", "Pad", "max_tensor_elements"),
    ("initializer [65536,65536,3,3]", huge_initializer, "w", None, "max_tensor_elements"),
    ("2**29 nodes once inlined", nested_functions, None, None, "max_operators"),
]

_CHILD = textwrap.dedent(
    """
    import json, resource, sys
    # a second guard for this machine: with the old importer these files allocate 4 GB and more
    cap = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    from devicelab.graph import GraphError, LimitExceeded, load_graph
    data = open(sys.argv[1], "rb").read()
    out = {"refused": False}
    try:
        load_graph(data, filename="hostile.onnx")
    except GraphError as exc:
        out = {"refused": True, "node": exc.node, "op": exc.op, "message": str(exc),
               "limit": exc.limit if isinstance(exc, LimitExceeded) else None}
    # The peak RSS of this process since it started: VmHWM, not ru_maxrss, which Linux carries over
    # exec from the forked parent (a big pytest process would count as this import's peak).
    status = open("/proc/self/status").read()
    out["maxrss_kb"] = int(status.split("VmHWM:")[1].split()[0])
    print(json.dumps(out))
    """
)


def import_in_subprocess(data: bytes, tmp: Path, address_space: int = 2 * 1024**3) -> dict[str, Any]:
    """Import ``data`` in a fresh interpreter (its address space capped at ``address_space``) and
    return what happened: refused or not, node, op, message, the limit, and peak RSS in kB."""
    path = tmp / "hostile.onnx"
    path.write_bytes(data)
    return _run_child(_CHILD, path, address_space)


def _run_child(source: str, argument: Path, address_space: int) -> dict[str, Any]:
    """Run ``source`` in a fresh interpreter of this checkout with ``argument`` and the address
    space cap; what it printed last, as JSON."""
    root = Path(__file__).resolve().parents[3]
    proc = subprocess.run(
        [sys.executable, "-c", source, str(argument), str(address_space)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "OPENBLAS_NUM_THREADS": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


# -- issue 32: a generated family, each operator that can grow a tensor followed by each cheap one --
#
# The grower writes ``g`` of 2**28 elements (2 GiB of int64, 1 GiB of float32) from a file of a
# few hundred bytes; the follower reads ``g`` and writes ``y``. Before issue 32 the importer ran
# onnx's whole-model shape inference with data propagation first, which makes one protobuf message
# per element of a 1-D value of known length read by Cast, Add, Mul, Concat...: Range -> Cast ->
# Add took a web worker to 10.7 GB. Every member must now be refused at the grower.

BIG = 2**28
SIDE = 2**14  # SIDE * SIDE == BIG


def f32(name: str, value: Any) -> onnx.TensorProto:
    """A float32 initializer."""
    return numpy_helper.from_array(np.array(value, dtype=np.float32), name)


# grower -> (its nodes writing "g", initializers, input shape, opset)
Grower = tuple[list[onnx.NodeProto], list[onnx.TensorProto], list[int], int]


def _grow(op: str, inputs: list[str], **attrs: Any) -> onnx.NodeProto:
    return helper.make_node(op, inputs, ["g"], name="grow", **attrs)


GROWERS: dict[str, Callable[[], Grower]] = {
    "Range": lambda: (
        [_grow("Range", ["start", "limit", "delta"])],
        [i64("start", 0), i64("limit", BIG), i64("delta", 1)],
        [1],
        OPSET,
    ),
    "ConstantOfShape": lambda: ([_grow("ConstantOfShape", ["shape"])], [i64("shape", [BIG])], [1], OPSET),
    "ConstantOfShape of a folded shape": lambda: (
        [
            helper.make_node("Shape", ["x"], ["s"], name="shape"),
            helper.make_node("Mul", ["s", "k"], ["target"], name="scale"),
            _grow("ConstantOfShape", ["target"]),
        ],
        [i64("k", [BIG])],
        [1],
        OPSET,
    ),
    "Expand of a constant": lambda: (
        [_grow("Expand", ["one", "target"])],
        [f32("one", [1.0]), i64("target", [BIG])],
        [1],
        OPSET,
    ),
    "Expand of the input": lambda: ([_grow("Expand", ["x", "target"])], [i64("target", [BIG])], [1], OPSET),
    "Tile": lambda: ([_grow("Tile", ["x", "repeats"])], [i64("repeats", [BIG])], [1], OPSET),
    "Pad": lambda: ([_grow("Pad", ["x", "pads"], mode="constant")], [i64("pads", [0, BIG])], [1], OPSET),
    "Resize": lambda: (
        [_grow("Resize", ["x", "", "", "sizes"], mode="nearest")],
        [i64("sizes", [1, 1, SIDE, SIDE])],
        [1, 1, 1, 1],
        OPSET,
    ),
    "Upsample": lambda: (
        [_grow("Upsample", ["x", "scales"], mode="nearest")],
        [f32("scales", [1, 1, SIDE, SIDE])],
        [1, 1, 1, 1],
        9,
    ),
}

# follower -> its nodes reading "g" and writing "y"
FOLLOWERS: dict[str, Callable[[], list[onnx.NodeProto]]] = {
    "Cast": lambda: [helper.make_node("Cast", ["g"], ["y"], name="then", to=TensorProto.FLOAT)],
    "Cast->Add": lambda: [
        helper.make_node("Cast", ["g"], ["c"], name="then", to=TensorProto.FLOAT),
        helper.make_node("Add", ["c", "x"], ["y"], name="add"),
    ],
    "Add": lambda: [helper.make_node("Add", ["g", "x"], ["y"], name="then")],
    "Mul": lambda: [helper.make_node("Mul", ["g", "g"], ["y"], name="then")],
    "Relu": lambda: [helper.make_node("Relu", ["g"], ["y"], name="then")],
    "Identity": lambda: [helper.make_node("Identity", ["g"], ["y"], name="then")],
    "Concat": lambda: [helper.make_node("Concat", ["g", "g"], ["y"], name="then", axis=0)],
}

# grower -> (the op type the refusal names, the ImportLimits field, or None and words of the reason)
GROWER_REFUSALS: dict[str, tuple[str, str | None, str]] = {
    "Range": ("Range", "max_folded_elements", f"would fold {BIG} elements"),
    "ConstantOfShape": ("ConstantOfShape", "max_folded_elements", f"would fold {BIG} elements"),
    "ConstantOfShape of a folded shape": ("ConstantOfShape", "max_folded_elements", f"would fold {BIG} elements"),
    "Expand of a constant": ("Expand", "max_folded_elements", f"would fold {BIG} elements"),
    "Expand of the input": ("Expand", None, "not in the vocabulary"),
    "Tile": ("Tile", None, "not in the LatencyLab operator vocabulary"),
    "Pad": ("Pad", "max_tensor_elements", f"{BIG + 1} elements"),
    "Resize": ("Resize", "max_tensor_elements", f"{BIG} elements"),
    "Upsample": ("Upsample", "max_tensor_elements", f"{BIG} elements"),
}


def family_member(grower: str, follower: str) -> bytes:
    """The model of ``grower`` followed by ``follower``, serialized."""
    nodes, inits, input_shape, opset = GROWERS[grower]()
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, input_shape)
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph([*nodes, *FOLLOWERS[follower]()], "hostile", [x], [y], initializer=inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()  # type: ignore[no-any-return]


def reshape_to_a_long_runtime_target() -> bytes:
    """Reshape whose target is an activation of 2**26 values: onnx's rank inference made one
    message per value (3 GB) before the importer said the target is computed at run time."""
    nodes = [
        helper.make_node("Pad", ["x", "pads"], ["long"], name="pad", mode="constant"),
        helper.make_node("Reshape", ["x", "long"], ["y"], name="reshape"),
    ]
    return onnx_model(nodes, [i64("pads", [0, 2**26 - 1])], input_shape=[1])


# (case, bytes) of the whole family, grower x follower
FAMILY: list[tuple[str, str, str]] = [(f"{g} -> {f}", g, f) for g in GROWERS for f in FOLLOWERS]

_FAMILY_CHILD = textwrap.dedent(
    """
    import json, resource, sys, time
    cap = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    from devicelab.graph import GraphError, LimitExceeded, load_graph
    cases = json.loads(open(sys.argv[1]).read())
    results = {}
    for case, path in cases.items():
        data = open(path, "rb").read()
        started = time.perf_counter()
        out = {"refused": False}
        try:
            load_graph(data, filename="hostile.onnx")
        except GraphError as exc:
            out = {"refused": True, "node": exc.node, "op": exc.op, "message": str(exc),
                   "limit": exc.limit if isinstance(exc, LimitExceeded) else None}
        out["seconds"] = time.perf_counter() - started
        results[case] = out
    status = open("/proc/self/status").read()
    print(json.dumps({"cases": results, "maxrss_kb": int(status.split("VmHWM:")[1].split()[0])}))
    """
)


def import_many_in_subprocess(files: dict[str, bytes], tmp: Path, address_space: int = 2 * 1024**3) -> dict[str, Any]:
    """Import every file of ``files`` (case -> bytes) in one fresh interpreter, its address space
    capped at ``address_space``: each case's refusal and time, and the process's peak RSS in kB."""
    paths = {}
    for i, (case, data) in enumerate(files.items()):
        path = tmp / f"case{i}.onnx"
        path.write_bytes(data)
        paths[case] = str(path)
    listing = tmp / "cases.json"
    listing.write_text(json.dumps(paths))
    return _run_child(_FAMILY_CHILD, listing, address_space)

"""NAS-Bench-201 networks from cell strings: skeleton, published costs, strict parsing, sampling, export.

Reference numbers are the benchmark's own cost tables (NAS-Bench-201 API, ``get_cost_info``;
"params" in millions, "flops" in millions of multiply-adds):

* all-``nor_conv_3x3`` cell, CIFAR-10: params 1.531546, FLOPs 220.11969 — the maximum over the
  space; all-``none``: 0.073306 and 7.78305 — the minimum (min/max tables quoted in evoxbench's
  NAS-Bench-201 benchmark, ``min_max_values['cifar10']``); CIFAR-100 min 0.079156, max 1.537396;
  ImageNet16-120 (120 classes, 16x16) min 0.080456.
* ``|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|``
  (arch index 1): "FLOP=113.95 M, Params=0.802 MB" on CIFAR-10 (D-X-Y/NATS-Bench issue #18);
  the three-conv cells all have 0.802426 (D-X-Y/NATS-Bench issue #36).

The benchmark's FLOP counter also counts the classifier's 10 bias additions, so our MACs are
10 lower; the test allows that.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from devicelab.graph import GraphError, graph_from_json, graph_to_json
from devicelab.graph.nas import nb201

ALL_CONV3 = "|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|+|nor_conv_3x3~0|nor_conv_3x3~1|nor_conv_3x3~2|"
ALL_NONE = "|none~0|+|none~0|none~1|+|none~0|none~1|none~2|"
ALL_SKIP = "|skip_connect~0|+|skip_connect~0|skip_connect~1|+|skip_connect~0|skip_connect~1|skip_connect~2|"
ARCH_1 = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"


@pytest.mark.parametrize(
    ("arch", "classes", "size", "params", "mflops"),
    [
        (ALL_CONV3, 10, 32, 1_531_546, 220.11969),
        (ALL_NONE, 10, 32, 73_306, 7.78305),
        (ARCH_1, 10, 32, 802_426, 113.95),
        (ALL_CONV3, 100, 32, 1_537_396, None),
        (ALL_NONE, 100, 32, 79_156, None),
        (ALL_NONE, 120, 16, 80_456, None),
    ],
)
def test_costs_match_the_benchmark_tables(
    arch: str, classes: int, size: int, params: int, mflops: float | None
) -> None:
    graph = nb201.from_string(arch, num_classes=classes, input_size=size)
    assert graph.params == params
    if mflops is not None:
        assert graph.macs / 1e6 == pytest.approx(mflops, abs=0.006)


def test_skeleton_shapes_and_reduction_blocks() -> None:
    graph = nb201.from_string(ALL_CONV3)
    assert graph.input_shape() == (1, 3, 32, 32)
    assert graph.tensors[graph.outputs[0]].shape == (1, 10)
    convs = [o for o in graph.operators if o.type == "conv2d"]
    assert len(convs) == 1 + 3 * 5 * 6 + 2 * 3  # stem, 15 cells x 6 edges, 2 reductions x 3 convs
    for stage, (channels, size) in enumerate([(16, 32), (32, 16), (64, 8)]):
        cell_convs = [o for o in convs if o.name.startswith(f"stage{stage}/")]
        assert {graph.output_shapes(o)[0] for o in cell_convs} == {(1, channels, size, size)}
    reduce1 = [o for o in graph.operators if o.name.startswith("reduce1/")]
    assert [o.type for o in reduce1] == [
        "relu",
        "conv2d",
        "batch_norm",
        "relu",
        "conv2d",
        "batch_norm",
        "avg_pool2d",
        "conv2d",
        "add",
    ]
    assert reduce1[1].attrs["stride"] == [2, 2]
    assert reduce1[6].attrs["kernel"] == [2, 2] and reduce1[6].attrs["stride"] == [2, 2]


def test_cell_ops_are_the_benchmark_ops() -> None:
    arch = "|avg_pool_3x3~0|+|nor_conv_1x1~0|skip_connect~1|+|none~0|none~1|skip_connect~2|"
    graph = nb201.from_string(arch, N=1)
    cell = [o for o in graph.operators if o.name.startswith("stage0/cell0/")]
    pool = next(o for o in cell if o.type == "avg_pool2d")
    assert pool.attrs == {
        "kernel": [3, 3],
        "stride": [1, 1],
        "pads": [1, 1, 1, 1],
        "ceil_mode": False,
        "count_include_pad": False,
    }
    conv = next(o for o in cell if o.type == "conv2d")
    assert conv.attrs["kernel"] == [1, 1] and not conv.attrs["bias"]
    assert [o.type for o in cell] == ["avg_pool2d", "relu", "conv2d", "batch_norm", "add"]


def test_none_and_dead_edges_are_dropped() -> None:
    # Node 1 computes a conv but nothing reaches the output from it: no conv in any cell.
    dead_branch = "|nor_conv_3x3~0|+|none~0|none~1|+|skip_connect~0|none~1|none~2|"
    graph = nb201.from_string(dead_branch)
    assert not [o for o in graph.operators if o.name.startswith("stage") and o.type == "conv2d"]
    assert graph.params == 73_306
    # Node 1 has no live input, so the conv on edge 1->3 reads zeros and is dropped too.
    zero_source = "|none~0|+|skip_connect~0|none~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"
    assert not [
        o for o in nb201.from_string(zero_source).operators if o.name.startswith("stage") and o.type == "conv2d"
    ]


def test_disconnected_cell_outputs_zeros_but_the_network_is_valid() -> None:
    for arch in (ALL_NONE, "|nor_conv_3x3~0|+|nor_conv_3x3~1|none~0|+|none~0|none~1|none~2|"):
        graph = nb201.from_string(arch).check()
        zeros = [o for o in graph.operators if o.name.endswith("/zero")]
        assert len(zeros) == 15 and all(o.type == "mul" and o.attrs["const_value"] == 0.0 for o in zeros)
        assert graph.params == 73_306


def test_all_skip_cell_is_only_additions() -> None:
    graph = nb201.from_string(ALL_SKIP, N=1)
    cell = [o for o in graph.operators if o.name.startswith("stage0/cell0/")]
    assert [o.type for o in cell] == ["add", "add", "add"]  # node 2: 2 terms, node 3: 3 terms
    assert graph.params == 73_306  # identity and addition carry no weights


def test_parse_and_to_string_round_trip() -> None:
    ops = nb201.parse(ARCH_1)
    assert ops == ("nor_conv_3x3", "nor_conv_3x3", "avg_pool_3x3", "skip_connect", "nor_conv_3x3", "skip_connect")
    assert nb201.to_string(ops) == ARCH_1
    reordered = "|nor_conv_3x3~0|+|avg_pool_3x3~1|nor_conv_3x3~0|+|skip_connect~2|skip_connect~0|nor_conv_3x3~1|"
    assert nb201.parse(f"  {reordered}\n") == ops


@pytest.mark.parametrize(
    ("arch", "words"),
    [
        ("", "has 1 node groups"),
        ("|nor_conv_3x3~0|+|nor_conv_3x3~0|nor_conv_3x3~1|", "has 2 node groups"),
        (ALL_CONV3 + "+|none~0|none~1|none~2|none~3|", "has 4 node groups"),
        ("nor_conv_3x3~0|+|none~0|none~1|+|none~0|none~1|none~2|", "must start and end with '|'"),
        ("|nor_conv_3x3~0|+|none~0|+|none~0|none~1|none~2|", "has 1 edges, expected 2"),
        ("|conv_5x5~0|+|none~0|none~1|+|none~0|none~1|none~2|", "unknown op 'conv_5x5'"),
        ("|none0|+|none~0|none~1|+|none~0|none~1|none~2|", "must be 'op~source'"),
        ("|none~1|+|none~0|none~1|+|none~0|none~1|none~2|", "source '1'"),
        ("|none~x|+|none~0|none~1|+|none~0|none~1|none~2|", "source 'x'"),
        ("|none~0|+|none~0|none~0|+|none~0|none~1|none~2|", "edge from node 0 twice"),
        ("|none~0|+|none~0|none~1|+|none~0|none~1||", "edge '' of node 3"),
    ],
)
def test_malformed_strings_raise_graph_error_saying_what(arch: str, words: str) -> None:
    with pytest.raises(GraphError) as err:
        nb201.from_string(arch)
    assert words in str(err.value)


def test_bad_sizes_and_types_raise_graph_error() -> None:
    with pytest.raises(GraphError, match="must be a string"):
        nb201.from_string(None)  # type: ignore[arg-type]
    with pytest.raises(GraphError, match="multiple of 4"):
        nb201.from_string(ALL_CONV3, input_size=30)
    with pytest.raises(GraphError, match="C must be a positive integer"):
        nb201.from_string(ALL_CONV3, C=0)
    with pytest.raises(GraphError, match="6 ops"):
        nb201.to_string(["none"] * 5)


def test_sampling_is_reproducible_and_uniform_over_ops() -> None:
    assert nb201.sample_strings(50, seed=3) == nb201.sample_strings(50, seed=3)
    assert nb201.sample_strings(50, seed=3) != nb201.sample_strings(50, seed=4)
    assert nb201.sample_strings(80, seed=3)[:50] == nb201.sample_strings(50, seed=3)
    strings = nb201.sample_strings(1000, seed=0)
    assert len(set(strings)) > 900  # 1000 draws from 15625 cells collide ~31 times
    counts = Counter(op for s in strings for op in nb201.parse(s))
    expected = 6000 / 5
    chi2 = sum((counts[op] - expected) ** 2 / expected for op in nb201.OPS)
    assert chi2 < 18.47, counts  # chi-square, 4 degrees of freedom, p = 0.001
    # Every edge position, not only the pooled count, sees every op.
    for k in range(6):
        assert {nb201.parse(s)[k] for s in strings} == set(nb201.OPS)


def test_sampled_graphs_check_and_round_trip_through_json() -> None:
    graphs = nb201.sample(10, seed=1)
    assert [g.name for g in graphs] == [f"nb201-1-{i}" for i in range(10)]
    assert graphs == nb201.sample(10, seed=1)
    for graph, arch in zip(graphs, nb201.sample_strings(10, seed=1), strict=True):
        graph.check()
        assert graph.tensors[graph.outputs[0]].shape == (1, 10)
        assert graph_from_json(graph_to_json(graph)) == graph
        assert nb201.from_string(arch, name=graph.name) == graph
    assert nb201.NUM_CELLS == 15625


def test_every_sample_exports_to_onnx_and_runs() -> None:
    """The issue's demand: 10 samples (and the corner cells) export to ONNX and run in onnxruntime."""
    ort = pytest.importorskip("onnxruntime")
    from devicelab.graph.onnx import graph_to_onnx_bytes

    rng = np.random.default_rng(0)
    graphs = nb201.sample(10, seed=0) + [nb201.from_string(a) for a in (ALL_CONV3, ALL_NONE, ALL_SKIP)]
    for graph in graphs:
        session = ort.InferenceSession(graph_to_onnx_bytes(graph, opset=17, seed=0), providers=["CPUExecutionProvider"])
        (inp,) = session.get_inputs()
        (y,) = session.run(None, {inp.name: rng.standard_normal(graph.input_shape()).astype(np.float32)})
        assert y.shape == (1, 10), graph.name
        assert np.isfinite(y).all(), graph.name

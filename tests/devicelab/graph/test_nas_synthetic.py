"""The latency paper's synthetic NAS space (001, section 4.3.2): sampling, specs, graphs, export."""

from __future__ import annotations

import copy
import json
import math
from collections import Counter

import numpy as np
import pytest

from devicelab.graph import GraphError, graph_from_json, graph_to_json, nas
from devicelab.graph.nas import synthetic

# Chi-square critical values at p = 0.001, by degrees of freedom: a correct uniform sampler
# fails these bounds once in a thousand seeds, and the seeds below are fixed.
CHI2_CRIT = {1: 10.83, 2: 13.82, 4: 18.47, 5: 20.52}


def chi_square(counts: Counter, categories: tuple) -> float:
    """Pearson's statistic of observed counts against a uniform distribution over categories."""
    total = sum(counts[c] for c in categories)
    expected = total / len(categories)
    return sum((counts[c] - expected) ** 2 / expected for c in categories)


@pytest.fixture(scope="module")
def specs() -> list[dict]:
    """100 architectures = 900 blocks."""
    return synthetic.sample_specs(100, seed=0)


def test_same_seed_gives_identical_graphs_and_names() -> None:
    first, again = synthetic.sample(4, seed=7), synthetic.sample(4, seed=7)
    assert first == again
    assert [g.name for g in first] == [f"synthetic-7-{i}" for i in range(4)]


def test_different_seeds_differ_and_samples_are_a_prefix() -> None:
    a, b = synthetic.sample_specs(5, seed=1), synthetic.sample_specs(5, seed=2)
    assert all(x["blocks"] != y["blocks"] for x, y in zip(a, b, strict=True))
    assert synthetic.sample_specs(8, seed=1)[:5] == a


def test_block_kinds_are_uniform(specs: list[dict]) -> None:
    blocks = [blk for s in specs for blk in s["blocks"]]
    assert len(blocks) == 900
    kinds = Counter(blk["kind"] for blk in blocks)
    assert set(kinds) == set(synthetic.KINDS)
    assert chi_square(kinds, synthetic.KINDS) < CHI2_CRIT[4], kinds


def test_block_parameters_are_uniform(specs: list[dict]) -> None:
    blocks = [blk for s in specs for blk in s["blocks"]]
    kernels = Counter(blk["kernel"] for blk in blocks if "kernel" in blk)
    assert chi_square(kernels, synthetic.KERNELS) < CHI2_CRIT[2], kernels
    grouped = Counter(blk["group_size"] is not None for blk in blocks if blk["kind"] == "conv")
    assert chi_square(grouped, (True, False)) < CHI2_CRIT[1], grouped
    se = Counter(blk["se"] for blk in blocks if blk["kind"] == "bottleneck")
    assert chi_square(se, (True, False)) < CHI2_CRIT[1], se
    splits = Counter(blk["splits"] for blk in blocks if blk["kind"] == "split")
    assert chi_square(splits, synthetic.SPLITS) < CHI2_CRIT[2], splits
    ops = Counter(op for blk in blocks if blk["kind"] == "split" for op in blk["ops"])
    assert chi_square(ops, synthetic.SPLIT_OPS) < CHI2_CRIT[5], ops


def test_channels_stay_in_the_paper_ranges(specs: list[dict]) -> None:
    for spec in specs:
        graph = synthetic.build(spec)
        channels = spec["stem_channels"]
        for i, blk in enumerate(spec["blocks"]):
            lo, hi = (8, 80) if i < 5 else (80, 400)
            if "out_channels" in blk:
                assert lo <= blk["out_channels"] <= hi
                assert blk["out_channels"] % 4 == 0
                channels = blk["out_channels"]
            else:
                assert blk["kind"] in ("pool", "split")  # these keep their input's channels
            # The graph agrees: the block's last operator writes `channels` channels.
            last = [o for o in graph.operators if o.name.startswith(f"block{i}/")][-1]
            assert graph.tensors[last.outputs[0]].shape[1] == channels
        assert 1200 <= spec["final_channels"] <= 1800
        head_conv = next(o for o in graph.operators if o.name.startswith("head/") and o.type == "conv2d")
        assert head_conv.attrs["out_channels"] == spec["final_channels"]


def test_grouped_convs_have_4k_channels_per_group(specs: list[dict]) -> None:
    seen = 0
    for spec in specs:
        graph = synthetic.build(spec)
        for i, blk in enumerate(spec["blocks"]):
            if blk["kind"] == "conv" and blk["group_size"] is not None:
                conv = next(o for o in graph.operators if o.name.startswith(f"block{i}/") and o.type == "conv2d")
                cin = graph.input_shapes(conv)[0][1]
                assert conv.attrs["groups"] >= 2
                assert cin // conv.attrs["groups"] == blk["group_size"]
                assert blk["group_size"] in range(4, 65, 4)
                seen += 1
    assert seen > 50  # ~900 / 5 / 2 grouped convs


def test_graphs_have_the_mobilenetv2_layout() -> None:
    for graph in synthetic.sample(10, seed=3):
        graph.check()
        assert graph.input_shape() == (1, 3, 224, 224)
        assert graph.tensors[graph.outputs[0]].shape == (1, 1000)
        head_conv = next(o for o in graph.operators if o.name.startswith("head/") and o.type == "conv2d")
        assert graph.input_shapes(head_conv)[0][2:] == (7, 7)  # total stride 32
        ops = graph.op_table()
        stem = ops[0]
        assert stem["type"] == "conv2d" and stem["output_shapes"][0] == [1, 32, 112, 112]


def test_input_size_and_classes_are_parameters() -> None:
    graph = synthetic.sample(1, seed=0, input_size=160, num_classes=10)[0]
    assert graph.input_shape() == (1, 3, 160, 160)
    assert graph.tensors[graph.outputs[0]].shape == (1, 10)


def test_bottleneck_has_se_and_residual_when_asked() -> None:
    spec = synthetic.sample_spec(0, 0)
    spec["blocks"][0] = {
        "kind": "bottleneck",
        "stride": 1,
        "kernel": 5,
        "expansion": 6,
        "se": True,
        "out_channels": 32,
    }  # 32 in, 32 out, stride 1: residual
    graph = synthetic.build(spec)
    block = [o for o in graph.operators if o.name.startswith("block0/")]
    types = [o.type for o in block]
    assert types.count("conv2d") == 4  # expand, SE reduce, SE expand, project
    assert "global_avg_pool" in types and "mul" in types and "sigmoid" in types
    assert types[-1] == "add"
    dw = next(o for o in block if o.type == "depthwise_conv2d")
    assert dw.attrs["kernel"] == [5, 5] and graph.input_shapes(dw)[0][1] == 32 * 6


def test_split_block_at_a_stride_position_downsamples_first() -> None:
    spec = synthetic.sample_spec(0, 0)
    spec["blocks"][1] = {"kind": "split", "stride": 2, "splits": 3, "ops": ["relu", "tanh", "swish"]}
    graph = synthetic.build(spec)
    block = [o for o in graph.operators if o.name.startswith("block1/")]
    assert [o.type for o in block] == ["max_pool2d", "split", "relu", "tanh", "swish", "concat"]
    assert graph.output_shapes(block[0])[0][2:] == (56, 56)


def test_build_rebuilds_from_a_json_spec() -> None:
    for spec, graph in zip(synthetic.sample_specs(5, seed=11), synthetic.sample(5, seed=11), strict=True):
        assert synthetic.build(json.loads(json.dumps(spec))) == graph


def test_graph_json_round_trip() -> None:
    for graph in synthetic.sample(10, seed=5):
        back = graph_from_json(graph_to_json(graph))
        assert back == graph
        assert back.macs == graph.macs and back.params == graph.params


@pytest.mark.parametrize(
    ("block", "words"),
    [
        ({"kind": "deconv", "stride": 1}, "unknown block kind"),
        ({"kind": "conv", "stride": 1, "kernel": 4, "group_size": None, "out_channels": 40}, "'kernel' is 4"),
        ({"kind": "conv", "stride": 1, "kernel": 3, "group_size": 12, "out_channels": 40}, "does not divide"),
        ({"kind": "conv", "stride": 1, "kernel": 3, "group_size": None, "out_channels": 100}, "[8, 80]"),
        ({"kind": "pool", "stride": 3, "pool": "avg", "window": 3}, "'stride' is 3"),
        ({"kind": "pool", "stride": 1, "pool": "avg", "window": 3, "out_channels": 8}, "unknown spec keys"),
        ({"kind": "split", "stride": 1, "splits": 2, "ops": ["relu"]}, "'ops' must list 2"),
        (
            {"kind": "bottleneck", "stride": 1, "kernel": 3, "expansion": 6, "se": "yes", "out_channels": 40},
            "'se' must be",
        ),
    ],
)
def test_bad_specs_raise_graph_error_naming_the_block(block: dict, words: str) -> None:
    spec = synthetic.sample_spec(0, 0)
    spec["blocks"][0] = block  # block 0 reads the 32-channel stem
    with pytest.raises(GraphError) as err:
        synthetic.build(spec)
    assert err.value.node == "block0"
    assert words in str(err.value)


def test_bad_top_level_specs_raise_graph_error() -> None:
    spec = synthetic.sample_spec(0, 0)
    short = copy.deepcopy(spec)
    short["blocks"] = short["blocks"][:8]
    with pytest.raises(GraphError, match="9 blocks"):
        synthetic.build(short)
    with pytest.raises(GraphError, match="final_channels"):
        synthetic.build({**spec, "final_channels": 900})
    with pytest.raises(GraphError, match="must be an object"):
        synthetic.build([1, 2])  # type: ignore[arg-type]
    with pytest.raises(GraphError, match="non-negative integer"):
        synthetic.sample_specs(-1, seed=0)


def test_dispatcher_reaches_both_spaces_and_rejects_unknown() -> None:
    assert nas.sample("synthetic", 2, 4) == synthetic.sample(2, 4)
    assert [g.name for g in nas.sample("nb201", 2, 4)] == ["nb201-4-0", "nb201-4-1"]
    with pytest.raises(GraphError, match="unknown NAS space 'darts'"):
        nas.sample("darts", 1, 0)


def test_every_sample_exports_to_onnx_and_runs() -> None:
    """The issue's demand: 20 samples export to ONNX and run in onnxruntime with the right shape."""
    ort = pytest.importorskip("onnxruntime")
    from devicelab.graph.onnx import graph_to_onnx_bytes

    rng = np.random.default_rng(0)
    for graph in synthetic.sample(20, seed=0):
        session = ort.InferenceSession(graph_to_onnx_bytes(graph, opset=17, seed=0), providers=["CPUExecutionProvider"])
        (inp,) = session.get_inputs()
        x = rng.standard_normal(graph.input_shape()).astype(np.float32)
        (y,) = session.run(None, {inp.name: x})
        assert y.shape == (1, 1000), graph.name
        assert np.isfinite(y).all() and not math.isclose(float(np.abs(y).sum()), 0.0), graph.name

"""Zoo part B (MobileNetV3, EfficientNet, DenseNet, RegNet, SE-ResNet, ProxylessNAS, FBNet, GhostNet):
every model builds, checks, round-trips through JSON and matches its published size.
"""

from __future__ import annotations

import functools
from collections import Counter
from typing import NamedTuple

import pytest

from devicelab.graph import zoo
from devicelab.graph.ir import Graph
from devicelab.graph.jsonio import graph_from_json, graph_to_dict, graph_to_json
from devicelab.graph.zoo.blocks import make_divisible
from devicelab.graph.zoo.regnet import regnet_stages


class Ref(NamedTuple):
    """A published parameter count, published multiply-adds (or None) and the MACs tolerance."""

    params: int
    macs: int | None
    macs_tol: float = 0.03


# Every number below is copied from the source named beside it.
REFERENCES: dict[str, Ref] = {
    # torchvision MobileNet_V3_Large_Weights.IMAGENET1K_V1: num_params 5483032, _ops 0.217 (GMACs)
    "mobilenet_v3_large": Ref(5_483_032, 217_000_000),
    # torchvision MobileNet_V3_Small_Weights.IMAGENET1K_V1: num_params 2542856, _ops 0.057
    "mobilenet_v3_small": Ref(2_542_856, 57_000_000),
    # torchvision EfficientNet_B0_Weights.IMAGENET1K_V1: num_params 5288548, _ops 0.386 (224 px)
    "efficientnet_b0": Ref(5_288_548, 386_000_000),
    # torchvision EfficientNet_B1_Weights.IMAGENET1K_V1: num_params 7794184, _ops 0.687 (240 px)
    "efficientnet_b1": Ref(7_794_184, 687_000_000),
    # torchvision DenseNet121_Weights.IMAGENET1K_V1: num_params 7978856, _ops 2.834
    "densenet121": Ref(7_978_856, 2_834_000_000),
    # torchvision RegNet_X_400MF_Weights.IMAGENET1K_V1: num_params 5495976, _ops 0.414
    "regnetx_400mf": Ref(5_495_976, 414_000_000),
    # torchvision RegNet_Y_400MF_Weights.IMAGENET1K_V1: num_params 4344144, _ops 0.402
    "regnety_400mf": Ref(4_344_144, 402_000_000),
    # params: Cadene pretrainedmodels se_resnet50 = 28,088,024 (ResNet-50's 25,557,032 + SE);
    # MACs: SENet paper (Hu et al.) Table 2, SE-ResNet-50 3.87 GFLOPs (multiply-adds)
    "se_resnet50": Ref(28_088_024, 3_870_000_000),
    # params: pytorchcv proxylessnas_mobile 4,080,512 (official mit-han-lab weights; paper: 4.1M).
    # No MACs reference: pytorchcv's 332.46M "FLOPs/2" also counts element-wise work.
    "proxylessnas_mobile": Ref(4_080_512, None),
    # params: pytorchcv fbnet_cb 5,572,200; MACs: FBNet paper (Wu et al.) Table 2, FBNet-C 375M FLOPs
    "fbnet_c": Ref(5_572_200, 375_000_000),
    # params: pytorchcv ghostnet 5,180,840 (paper: 5.2M; the official code has 1,668 more: 5x5 shortcut
    # depthwise convs, SE widths rounded to 4, a biased conv head without BN);
    # MACs: GhostNet paper (Han et al.) Table 7, GhostNet 1.0x 141M FLOPs
    "ghostnet_1.0": Ref(5_180_840, 141_000_000),
}
NAMES = sorted(REFERENCES)


@functools.cache
def _graph(name: str) -> Graph:
    return zoo.build(name)


def test_registry_holds_the_cited_numbers():
    entries = zoo.entries()
    for name, ref in REFERENCES.items():
        entry = entries[name]
        assert (entry.reference_params, entry.reference_macs) == (ref.params, ref.macs), name
        assert entry.source and not entry.table1


@pytest.mark.parametrize("name", NAMES)
def test_builds_checks_and_classifies(name):
    g = _graph(name)
    assert g.name == name
    g.check()
    assert g.input_shape() == zoo.entries()[name].input_shape
    assert [g.tensors[t].shape for t in g.outputs] == [(1, 1000)]


@pytest.mark.parametrize("name", NAMES)
def test_params_within_one_percent(name):
    ref = REFERENCES[name].params
    assert _graph(name).params == pytest.approx(ref, rel=0.01)


@pytest.mark.parametrize("name", [n for n in NAMES if REFERENCES[n].macs is not None])
def test_macs_within_tolerance(name):
    ref = REFERENCES[name]
    assert _graph(name).macs == pytest.approx(ref.macs, rel=ref.macs_tol)


@pytest.mark.parametrize("name", NAMES)
def test_json_round_trip(name):
    g = _graph(name)
    back = graph_from_json(graph_to_json(g))
    assert back == g
    assert graph_to_dict(back) == graph_to_dict(g)


def _types(name: str) -> Counter[str]:
    return Counter(o.type for o in _graph(name).operators)


def test_family_signatures():
    """The activations and gates each reference uses, which param counts alone would not catch."""
    mbv3 = _types("mobilenet_v3_large")
    assert mbv3["hard_swish"] and mbv3["hard_sigmoid"] == mbv3["mul"] == 8  # SE in 8 of 15 blocks
    eff = _types("efficientnet_b0")
    assert eff["swish"] and eff["sigmoid"] == eff["mul"] == 16 and not eff["relu"]  # SE in all 16 MBConvs
    assert _types("efficientnet_b1")["mul"] == 23  # depth 1.1: ceil(1.1 * n) blocks per stage
    assert _types("regnety_400mf")["mul"] == 16 and not _types("regnetx_400mf")["mul"]
    # one concat per dense layer but each block's first, plus one closing each block
    assert _types("densenet121")["concat"] == sum(n - 1 for n in (6, 12, 24, 16)) + 4
    ghost = _types("ghostnet_1.0")
    assert ghost["concat"] == 32 and ghost["hard_sigmoid"] == 7  # two ghost modules per bottleneck
    assert _types("proxylessnas_mobile")["relu6"] and _types("se_resnet50")["sigmoid"] == 16


def test_se_resnet_strides_on_the_first_1x1():
    """SENet's (Caffe) bottleneck puts the stride on conv1, not on the 3x3 as torchvision does."""
    g = _graph("se_resnet50")
    first = next(o for o in g.operators if o.name.startswith("layer2/block0/") and o.type == "conv2d")
    assert first.attrs["kernel"] == [1, 1] and first.attrs["stride"] == [2, 2]


def test_make_divisible_matches_torchvision():
    assert [make_divisible(v, 8) for v in (16, 12, 18, 20, 72 * 0.75, 240 // 4)] == [16, 16, 24, 24, 56, 64]
    assert make_divisible(18, 4) == 20 and make_divisible(3, 8) == 8


def test_regnet_stage_widths_match_torchvision():
    assert regnet_stages(22, 24, 24.48, 2.54, 16) == [(32, 1, 16), (64, 2, 16), (160, 7, 16), (400, 12, 16)]
    assert regnet_stages(16, 48, 27.89, 2.09, 8) == [(48, 1, 8), (104, 3, 8), (208, 6, 8), (440, 6, 8)]


@pytest.mark.parametrize("name", ["mobilenet_v3_small", "ghostnet_1.0"])
def test_onnx_export_runs_in_onnxruntime(name):
    """The two cheapest part-B models (fewest MACs) export to ONNX and run."""
    onnx_io = pytest.importorskip("devicelab.graph.onnx")
    ort = pytest.importorskip("onnxruntime")
    np = pytest.importorskip("numpy")
    g = _graph(name)
    session = ort.InferenceSession(onnx_io.graph_to_onnx_bytes(g), providers=["CPUExecutionProvider"])
    feed = {g.inputs[0]: np.random.default_rng(0).standard_normal(g.input_shape(), dtype=np.float32)}
    (out,) = session.run(None, feed)
    assert out.shape == (1, 1000)
    assert np.isfinite(out).all()

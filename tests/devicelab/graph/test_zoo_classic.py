"""Zoo part A (MobileNet-V1/V2, SqueezeNet, ResNets, Inception-V3, GoogLeNet, ShuffleNet-V2,
MnasNet, mobile DeepLab-V3): every model builds, checks, round-trips through JSON and matches its
published size; the six networks of ParallelFusion's Table 1 are flagged.

Counting convention (``devicelab/graph/ops/costs.py``): batch norm has 2 parameters per channel (gamma,
beta; the running statistics are buffers); MACs are conv / FC multiply-adds with BN folded.
torchvision counts the same way, so its numbers match exactly. Keras counts BN moving statistics
as parameters too, and TF-slim's MobileNet-V2 table leaves BN out and has 1001 classes; the
``test_*_convention`` tests below pin those differences down exactly.

ParallelFusion's Table 1 numbers are rough and are *not* what we test against: it lists
DeepLab-V3 at 39M parameters (the published model has 2.11M), Inception-V3 at 23M (Keras: 23.85M),
ResNet-V2 at 25.56M (that is ResNet-50 v1's 25,557,032; Keras ResNet50V2 has 25,613,800),
SqueezeNet-V1 at 1.25M, MobileNet-V1 at 4.2M and MobileNet-V2 at 3.4M (torchvision: 3,504,872).
Its "FLOPs" are multiply-adds: 575M / 300M for the MobileNets, 833M for SqueezeNet, 5.73G for
Inception-V3 and 734M for DeepLab-V3 at 257x257 (we count 720M; no published source gives MACs at
257, so that entry is checked at 513x513 instead).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import pytest

from devicelab.graph import zoo
from devicelab.graph.ir import Graph
from devicelab.graph.jsonio import graph_from_json, graph_to_dict, graph_to_json
from devicelab.graph.zoo.blocks import make_divisible
from devicelab.graph.zoo.mnasnet import round_to_multiple_of


class Ref(NamedTuple):
    """A published parameter count, published multiply-adds (or None) and the MACs tolerance."""

    params: int
    macs: int | None
    macs_tol: float = 0.03


# Every number below is copied from the source named beside it. "torchvision X: num_params N,
# _ops G" is the weights enum's meta in torchvision/models/*.py (the docs' "GFLOPS" column; the
# value is multiply-adds).
REFERENCES: dict[str, Ref] = {
    # --- ParallelFusion Table 1 ---
    # TF-slim research/slim/nets/mobilenet_v1.md: MobileNet_v1_1.0_224, 569 Million MACs, 4.24 Million
    # Parameters (paper, Howard et al. 2017 Table 8: 569M Mult-Adds, 4.2M)
    "mobilenet_v1": Ref(4_240_000, 569_000_000),
    # torchvision mobilenet_v2: num_params 3504872, _ops 0.301
    "mobilenet_v2": Ref(3_504_872, 301_000_000),
    # torchvision squeezenet1_0: num_params 1248424, _ops 0.819
    "squeezenet_1_0": Ref(1_248_424, 819_000_000),
    # keras.applications.ResNet50V2 summary: Total params 25,613,800 (Keras applications table: 25.6M);
    # no published MACs
    "resnet_v2_50": Ref(25_613_800, None),
    # params: keras.applications.InceptionV3 summary, Total params 23,851,784 (no aux head; table 23.9M);
    # MACs: torchvision inception_v3 _ops 5.713 (measured in eval mode, where the aux head does not run)
    "inception_v3": Ref(23_851_784, 5_713_000_000),
    # MobileNetV2 paper (Sandler et al. 2018) Table 7, "MNet V2*" OS=16 without ASPP/MF: 2.11M params
    "deeplab_v3_mnv2": Ref(2_110_000, None),
    # same source, 2.75B MAdds; TF DeepLab g3doc/model_zoo.md mobilenetv2_coco_voc_trainaug: eval OS 16,
    # 2.75B Multiply-Adds at the 513x513 eval crop
    "deeplab_v3_mnv2_513": Ref(2_110_000, 2_750_000_000),
    # --- the rest of part A ---
    # TF-slim mobilenet_v1.md: MobileNet_v1_0.50_224, 150 Million MACs, 1.34 Million Parameters
    "mobilenet_v1_0.5": Ref(1_340_000, 150_000_000),
    # TF-slim mobilenet_v1.md: MobileNet_v1_0.25_224, 41 Million MACs, 0.47 Million Parameters
    "mobilenet_v1_0.25": Ref(470_000, 41_000_000),
    # TF-slim research/slim/nets/mobilenet/README.md: mobilenet_v2_0.5_224, 97 MACs (M), 1.95 Parameters (M)
    "mobilenet_v2_0.5": Ref(1_950_000, 97_000_000),
    # TF-slim mobilenet/README.md: mobilenet_v2_1.4_224, 582 MACs (M), 6.06 Parameters (M)
    "mobilenet_v2_1.4": Ref(6_060_000, 582_000_000),
    # torchvision squeezenet1_1: num_params 1235496, _ops 0.349
    "squeezenet_1_1": Ref(1_235_496, 349_000_000),
    # torchvision resnet18: num_params 11689512, _ops 1.814
    "resnet18": Ref(11_689_512, 1_814_000_000),
    # torchvision resnet34: num_params 21797672, _ops 3.664
    "resnet34": Ref(21_797_672, 3_664_000_000),
    # torchvision resnet50: num_params 25557032, _ops 4.089
    "resnet50": Ref(25_557_032, 4_089_000_000),
    # torchvision resnext50_32x4d: num_params 25028904, _ops 4.23
    "resnext50_32x4d": Ref(25_028_904, 4_230_000_000),
    # params: torchvision shufflenet_v2_x1_0 num_params 2278604 (its _ops 0.14 is too coarse);
    # MACs: ShuffleNet V2 paper (Ma et al. 2018) Table 5, 1x: 146M FLOPs (multiply-adds)
    "shufflenet_v2_x1_0": Ref(2_278_604, 146_000_000),
    # params: torchvision shufflenet_v2_x0_5 num_params 1366792; MACs: ShuffleNet V2 paper, 0.5x: 41M
    "shufflenet_v2_x0_5": Ref(1_366_792, 41_000_000),
    # torchvision mnasnet1_0: num_params 4383312, _ops 0.314
    "mnasnet1_0": Ref(4_383_312, 314_000_000),
    # torchvision mnasnet0_5: num_params 2218512, _ops 0.104
    "mnasnet0_5": Ref(2_218_512, 104_000_000),
    # torchvision googlenet: num_params 6624904 (pretrained model without aux heads), _ops 1.498
    "googlenet": Ref(6_624_904, 1_498_000_000),
}
NAMES = sorted(REFERENCES)
TABLE1 = {"mobilenet_v1", "mobilenet_v2", "squeezenet_1_0", "resnet_v2_50", "inception_v3", "deeplab_v3_mnv2"}


@functools.cache
def _graph(name: str) -> Graph:
    return zoo.build(name)


def _bn_channels(g: Graph) -> int:
    """Channels over all batch norms: each is 2 parameters here, 4 in Keras, 0 in TF-slim's table."""
    return sum(g.input_shapes(o)[0][1] for o in g.operators if o.type == "batch_norm")


def test_registry_holds_the_cited_numbers():
    entries = zoo.entries()
    for name, ref in REFERENCES.items():
        entry = entries[name]
        assert (entry.reference_params, entry.reference_macs) == (ref.params, ref.macs), name
        assert entry.source


def test_published_accuracy_is_a_cited_percentage():
    # ImageNet top-1/top-5 for every zoo model whose source publishes them (both parts of the zoo).
    with_accuracy = {name: e for name, e in zoo.entries().items() if e.top1 is not None or e.top5 is not None}
    for name, e in with_accuracy.items():
        assert e.top1 is not None and e.top5 is not None, name
        assert 0 < e.top1 < 100 and 0 < e.top5 < 100, name
        assert e.top5 >= e.top1, name
        assert e.accuracy_source, name
    required = {
        "resnet18",
        "resnet34",
        "resnet50",
        "mobilenet_v1",
        "mobilenet_v2",
        "mobilenet_v3_large",
        "mobilenet_v3_small",
        "squeezenet_1_0",
        "densenet121",
        "inception_v3",
        "googlenet",
        "shufflenet_v2_x1_0",
        "mnasnet1_0",
        "efficientnet_b0",
    }
    assert required <= set(with_accuracy)
    # Spot checks against the cited sources: torchvision's ResNet18_Weights.IMAGENET1K_V1 meta and
    # TF-slim's mobilenet_v1.md MobileNet_v1_0.25_224 row.
    assert (zoo.entries()["resnet18"].top1, zoo.entries()["resnet18"].top5) == (69.758, 89.078)
    assert (zoo.entries()["mobilenet_v1_0.25"].top1, zoo.entries()["mobilenet_v1_0.25"].top5) == (49.8, 74.2)


def test_accuracy_without_a_source_is_refused():
    from devicelab.graph.zoo.registry import register

    with pytest.raises(ValueError, match="accuracy_source"):
        register("uncited", "x", (1, 3, 8, 8), params=1, macs=None, source="s", top1=50.0, top5=70.0)


def test_the_six_table1_networks_are_flagged():
    flagged = {name for name, entry in zoo.entries().items() if entry.table1}
    assert flagged == TABLE1


@pytest.mark.parametrize("name", NAMES)
def test_builds_checks_and_has_the_expected_output(name):
    g = _graph(name)
    entry = zoo.entries()[name]
    assert g.name == name
    g.check()
    assert g.input_shape() == entry.input_shape
    outputs = [g.tensors[t].shape for t in g.outputs]
    if entry.family == "deeplab_v3":
        side = entry.input_shape[2]
        assert outputs == [(1, 21, side, side)]  # per-pixel logits of the 21 PASCAL classes
    else:
        assert outputs == [(1, 1000)]


@pytest.mark.parametrize("name", NAMES)
def test_params_match_the_published_count(name):
    ref = REFERENCES[name]
    assert _graph(name).params == pytest.approx(ref.params, rel=0.01)


@pytest.mark.parametrize("name", [n for n in NAMES if REFERENCES[n].macs is not None])
def test_macs_match_the_published_count(name):
    ref = REFERENCES[name]
    assert _graph(name).macs == pytest.approx(ref.macs, rel=ref.macs_tol)


def test_torchvision_models_match_their_published_counts_exactly():
    # Same counting convention as torchvision, same architecture: not approximately but exactly.
    for name in (
        "mobilenet_v2",
        "squeezenet_1_0",
        "squeezenet_1_1",
        "resnet18",
        "resnet34",
        "resnet50",
        "resnext50_32x4d",
        "shufflenet_v2_x1_0",
        "shufflenet_v2_x0_5",
        "mnasnet1_0",
        "mnasnet0_5",
        "googlenet",
    ):
        assert _graph(name).params == REFERENCES[name].params, name


@pytest.mark.parametrize("name", NAMES)
def test_json_round_trip_is_lossless(name):
    g = _graph(name)
    back = graph_from_json(graph_to_json(g))
    assert back == g
    assert graph_to_dict(back) == graph_to_dict(g)


def test_keras_counts_differ_only_by_batch_norm_statistics():
    # Keras summaries ("Trainable params" / "Total params") count BN moving mean and variance too.
    mnv1, rv2, inc = _graph("mobilenet_v1"), _graph("resnet_v2_50"), _graph("inception_v3")
    # keras.applications.MobileNet: Total 4,253,864, Trainable 4,231,976
    assert mnv1.params == 4_231_976
    assert mnv1.params + 2 * _bn_channels(mnv1) == 4_253_864
    # keras.applications.ResNet50V2: Total 25,613,800, Trainable 25,568,360
    assert rv2.params == 25_568_360
    assert rv2.params + 2 * _bn_channels(rv2) == 25_613_800
    # keras.applications.InceptionV3: Total 23,851,784, Trainable 23,817,352 -- its BN has no gamma
    # (scale=False), so it has 3 numbers per channel where we have 2.
    assert inc.params + _bn_channels(inc) == 23_851_784
    assert inc.params - _bn_channels(inc) == 23_817_352


def test_inception_v3_is_torchvisions_without_the_aux_head():
    # torchvision inception_v3 num_params 27,161,264 includes InceptionAux(768): 1x1 conv 768->128 + BN,
    # 5x5 conv 128->768 + BN, FC 768->1000.
    aux = 768 * 128 + 2 * 128 + 128 * 768 * 25 + 2 * 768 + 768 * 1000 + 1000
    assert aux == 3_326_696
    assert _graph("inception_v3").params == 27_161_264 - aux


@pytest.mark.parametrize("name", ["mobilenet_v2", "mobilenet_v2_0.5", "mobilenet_v2_1.4"])
def test_tf_slim_mobilenet_v2_table_convention(name):
    # TF-slim's README counts conv and FC weights without batch norm, with 1001 classes (one more
    # FC row of 1280 or 1792 inputs plus its bias): that reproduces its 3.47M / 1.95M / 6.06M exactly.
    published = {"mobilenet_v2": 3.47, "mobilenet_v2_0.5": 1.95, "mobilenet_v2_1.4": 6.06}[name]
    g = _graph(name)
    last = g.input_shapes(next(o for o in g.operators if o.type == "fully_connected"))[0][-1]
    assert round((g.params - 2 * _bn_channels(g) + last + 1) / 1e6, 2) == published


def test_width_multipliers_follow_each_familys_rule():
    def conv_channels(name: str) -> list[int]:
        g = _graph(name)
        return [o.attrs["out_channels"] for o in g.operators if o.type == "conv2d"]

    # MobileNet-V2: make_divisible(c * width, 8); the last conv is never narrowed below 1280.
    assert make_divisible(32 * 1.4) == 48 and make_divisible(24 * 1.4) == 32 and make_divisible(64 * 1.4) == 88
    ch = conv_channels("mobilenet_v2_1.4")
    assert (ch[0], ch[-1]) == (48, 1792)
    ch = conv_channels("mobilenet_v2_0.5")
    assert (ch[0], ch[-1]) == (16, 1280) and 8 in ch
    # MobileNet-V1: int(c * width).
    assert conv_channels("mobilenet_v1_0.25")[-1] == 256
    # MnasNet 0.5: torchvision's _round_to_multiple_of on every depth, stem included.
    depths = [round_to_multiple_of(d * 0.5) for d in (32, 16, 24, 40, 80, 96, 192, 320)]
    assert depths == [16, 8, 16, 24, 40, 48, 96, 160]
    assert conv_channels("mnasnet0_5")[0] == 16


def test_shufflenet_units_split_and_shuffle():
    g = _graph("shufflenet_v2_x1_0")
    types = [o.type for o in g.operators]
    assert types.count("channel_shuffle") == 4 + 8 + 4  # one per unit
    assert types.count("split") == 3 + 7 + 3  # the stride-1 units
    assert all(o.attrs["groups"] == 2 for o in g.operators if o.type == "channel_shuffle")


def test_torchvision_details_that_the_counts_depend_on():
    squeeze = _graph("squeezenet_1_0")
    pools = [o for o in squeeze.operators if o.type == "max_pool2d"]
    assert pools and all(o.attrs["ceil_mode"] for o in pools)
    assert all(o.attrs["bias"] for o in squeeze.operators if o.type == "conv2d")
    goog = _graph("googlenet")
    # no 5x5 convolutions: torchvision's "5x5" branch is 3x3
    assert {tuple(o.attrs["kernel"]) for o in goog.operators if o.type == "conv2d"} == {(7, 7), (1, 1), (3, 3)}
    assert not any(o.attrs["bias"] for o in goog.operators if o.type == "conv2d")


def test_resnet_v2_is_pre_activation():
    g = _graph("resnet_v2_50")
    first, last_bn = g.operators[0], [o for o in g.operators if o.type == "batch_norm"][-1]
    assert first.type == "conv2d" and first.attrs["bias"]  # the stem has no BN of its own
    assert g.operators[1].type == "max_pool2d"
    assert last_bn.name == "post_bn"
    # the stride sits on the last unit of each of the first three stages, its shortcut a 1x1 max pool
    shortcut_pools = [o for o in g.operators if o.type == "max_pool2d" and o.attrs["kernel"] == [1, 1]]
    assert len(shortcut_pools) == 3


def test_deeplab_is_the_mobile_configuration():
    g = _graph("deeplab_v3_mnv2")
    convs = [o for o in g.operators if o.type == "conv2d"]
    # output stride 16: the 320-channel backbone output is 17x17 at 257x257
    backbone_out = next(o for o in convs if o.attrs["out_channels"] == 320)
    assert g.output_shapes(backbone_out)[0] == (1, 320, 17, 17)
    assert not any(o.attrs["out_channels"] == 1280 for o in convs)  # layer_19 is not used
    # past the output stride the depthwise convolutions are dilated by 2 (the last 3 blocks)
    dilated = [o for o in g.operators if o.type == "depthwise_conv2d" and o.attrs["dilation"] == [2, 2]]
    assert len(dilated) == 3
    # the mobile head: image pooling and a 1x1 branch only (no atrous 3x3 ASPP branches)
    assert not any(o.attrs["kernel"] != [1, 1] for o in convs if o.name.startswith(("aspp", "concat", "image")))
    resizes = [o for o in g.operators if o.type == "resize"]
    assert [o.attrs["mode"] for o in resizes] == ["linear", "linear"]
    assert all(o.attrs["align_corners"] for o in resizes)
    assert g.output_shapes(resizes[-1])[0] == (1, 21, 257, 257)


@pytest.mark.parametrize("name", ["mobilenet_v1_0.25", "squeezenet_1_1"])  # the two smallest here
def test_smallest_models_run_in_onnxruntime(name):
    np = pytest.importorskip("numpy")
    ort = pytest.importorskip("onnxruntime")
    from devicelab.graph.onnx import graph_to_onnx_bytes

    g = _graph(name)
    session = ort.InferenceSession(graph_to_onnx_bytes(g), providers=["CPUExecutionProvider"])
    feed = {session.get_inputs()[0].name: np.random.default_rng(0).standard_normal(g.input_shape(), dtype=np.float32)}
    (out,) = session.run(None, feed)
    assert out.shape == (1, 1000)
    assert np.isfinite(out).all()

"""Mobile DeepLab-V3 with a MobileNet-V2 backbone, as TensorFlow's DeepLab builds it.

The configuration of ``mobilenetv2_coco_voc_trainaug`` in TensorFlow's DeepLab model zoo
(research/deeplab/g3doc/model_zoo.md) and of "Mobile DeepLabv3" in the MobileNet-V2 paper
(Section 6.3, Table 7, row "MNet V2*, OS 16, no ASPP, no MF"):

* backbone: MobileNet-V2 depth multiplier 1.0 up to ``layer_18`` (the 320-channel output, the
  "second to last feature map"; the 1280-channel 1x1 layer is dropped), TensorFlow SAME padding,
  output stride 16 -- the last stride-2 block keeps the resolution and the depthwise convolutions
  after it are dilated by 2 (TF-slim ``mobilenet_base(output_stride=16)``);
* head (``model.py: _extract_features`` with ``aspp_with_batch_norm`` and
  ``add_image_level_feature``, no ``atrous_rates``): an image-pooling branch (average pool over the
  whole map, 1x1 conv 256 + BN + ReLU, bilinear resize back) and a 1x1 conv 256 + BN + ReLU,
  concatenated, projected by a 1x1 conv 256 + BN + ReLU, then 1x1 logits with bias (21 PASCAL
  classes);
* the logits are resized bilinearly (align_corners) to the input size, as TF's exported graph and
  the TFLite segmentation model do before the arg-max.

ParallelFusion's Table 1 runs it at 257x257 (the TFLite input size). The same graph at 513x513,
the model zoo's evaluation crop, is registered too because that is where the published
multiply-adds (2.75B) were counted.
"""

from __future__ import annotations

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.graph.zoo.blocks import conv_bn_act
from devicelab.graph.zoo.mobilenet_v2 import mobilenet_v2_features
from devicelab.graph.zoo.registry import register

NUM_CLASSES = 21  # PASCAL VOC 2012: 20 classes and background
ASPP_DEPTH = 256


def build_deeplab_v3_mnv2(name: str, resolution: int, output_stride: int = 16) -> Graph:
    """Mobile DeepLab-V3 (MobileNet-V2 1.0 backbone, image pooling + 1x1 branch) at a square input."""
    b = GraphBuilder(name, (1, 3, resolution, resolution))
    with b.scope("backbone"):
        features = mobilenet_v2_features(b, b.input, 1.0, output_stride=output_stride, pad="same_tf", final_conv=False)
    fh, fw = b.shape(features)[2:4]
    with b.scope("image_pooling"):
        pooled = b.avg_pool(features, (fh, fw), (fh, fw))
        pooled = conv_bn_act(b, pooled, ASPP_DEPTH, 1, act="relu")
        pooled = b.resize(pooled, (fh, fw), mode="linear", align_corners=True)
    with b.scope("aspp0"):
        branch = conv_bn_act(b, features, ASPP_DEPTH, 1, act="relu")
    with b.scope("concat_projection"):
        x = conv_bn_act(b, b.concat([pooled, branch]), ASPP_DEPTH, 1, act="relu")
    with b.scope("logits"):
        x = b.conv(x, NUM_CLASSES, 1, bias=True)
        x = b.resize(x, (resolution, resolution), mode="linear", align_corners=True)
    return b.build(x)


# The MobileNet-V2 paper's Table 7 counts this model at 2.11M parameters and 2.75B
# multiply-adds; the model zoo repeats 2.75B for an eval crop of 513x513 at OS 16.
_SOURCE = (
    "MobileNetV2 paper (Sandler et al. 2018) Table 7, Mobile DeepLabv3 'MNet V2*' OS=16 without "
    "ASPP/MF: 2.11M params, 2.75B MAdds; TF DeepLab model_zoo.md mobilenetv2_coco_voc_trainaug: "
    "eval OS 16, 2.75B multiply-adds at 513x513"
)


@register(
    "deeplab_v3_mnv2",
    "deeplab_v3",
    (1, 3, 257, 257),
    params=2_110_000,
    macs=None,
    source=_SOURCE + "; MACs published only at 513x513 (see deeplab_v3_mnv2_513)",
    table1=True,
)
def deeplab_v3_mnv2() -> Graph:
    """Mobile DeepLab-V3 at 257x257 (ParallelFusion Table 1)."""
    return build_deeplab_v3_mnv2("deeplab_v3_mnv2", 257)


@register("deeplab_v3_mnv2_513", "deeplab_v3", (1, 3, 513, 513), params=2_110_000, macs=2_750_000_000, source=_SOURCE)
def deeplab_v3_mnv2_513() -> Graph:
    """Mobile DeepLab-V3 at the model zoo's 513x513 evaluation crop."""
    return build_deeplab_v3_mnv2("deeplab_v3_mnv2_513", 513)

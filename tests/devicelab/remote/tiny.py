"""A tiny zoo-like classifier for the remote tests: quick to load and run, shaped like the zoo's."""

from __future__ import annotations

from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph

INPUT_SIZE = 64
CLASSES = 100


def tiny_classifier(softmax: bool = True) -> Graph:
    """A MobileNet-like stem (conv-bn-relu, depthwise conv-bn-relu6, pointwise) and a classifier, on 64 x 64 RGB."""
    b = GraphBuilder("tiny_classifier" if softmax else "tiny_logits", (1, 3, INPUT_SIZE, INPUT_SIZE))
    x = b.relu(b.bn(b.conv(b.input, 16, 3, stride=2)))
    x = b.relu6(b.bn(b.dwconv(x, 3)))
    x = b.relu(b.bn(b.conv(x, 32, 1)))
    return b.build(b.classifier(x, CLASSES, softmax=softmax))

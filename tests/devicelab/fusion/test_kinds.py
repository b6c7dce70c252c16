"""The paper's operator kinds of each planned kernel, and its MFLOPs (no device needed)."""

from __future__ import annotations

import pytest

from devicelab.backends.opencl.plan import canonical, kernels_for_graph
from devicelab.fusion.kinds import KINDS, check_kinds, classify_kernels
from devicelab.graph import zoo
from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph


def every_kind() -> Graph:
    """Independent branches off one input, one or more of every kind, and operators of no kind."""
    b = GraphBuilder("kinds", (1, 8, 15, 17))
    x = b.input
    outs = [
        b.relu(b.conv(x, 6, 3, name="c3")),  # an absorbed activation keeps the kind
        b.conv(x, 6, 3, stride=2, groups=2, name="grouped"),
        b.conv(x, 12, 1, name="pw"),
        b.conv(x, 12, 1, stride=2, name="pw_s2"),
        b.max_pool(x, 3, stride=2, name="pool"),
        b.dwconv(x, 3, stride=2, name="dw2"),
        b.dwconv(x, 3, name="dw1"),
        b.conv(x, 8, 3, pad=1, groups=8, name="dw_as_conv"),  # one group per channel: depthwise
        b.add(x, x, name="add"),
        b.bn(x, name="bn"),
        b.softmax(x, axis=1, name="softmax"),
        b.resize(x, [30, 34], name="resize"),
    ]
    s = b.relu(b.conv(x, 4, 1, name="squeeze"))
    outs.append(b.concat([b.relu(b.conv(s, 6, 1, name="e1")), b.relu(b.conv(s, 6, 3, pad=1, name="e3"))], name="cat"))
    reduce_once = b.conv(x, 4, 1, name="reduce_once")  # reduces, but feeds one convolution
    outs.append(b.conv(reduce_once, 4, 3, name="after_reduce"))
    widen = b.conv(x, 16, 1, name="widen")  # feeds two convolutions, but does not reduce
    outs += [b.conv(widen, 4, 3, name="w1"), b.conv(widen, 4, 3, name="w2")]
    outs.append(b.fc(b.flatten(b.global_avg_pool(x, name="gap")), 10, name="fc"))
    return b.build(outs)


@pytest.fixture(scope="module")
def kinded():
    graph = canonical(every_kind())
    return graph, {k.name: k for k in classify_kernels(graph, kernels_for_graph(graph))}


def test_every_kernel_gets_the_papers_kind(kinded) -> None:
    _, by_name = kinded
    want = {
        "c3": "C",
        "grouped": "C",
        "e3": "C",
        "after_reduce": "C",
        "w1": "C",
        "w2": "C",
        "pw": "C_1x1",
        "pw_s2": "C_1x1",
        "e1": "C_1x1",
        "reduce_once": "C_1x1",
        "widen": "C_1x1",
        "squeeze": "S",
        "pool": "P",
        "gap": "P",
        "dw2": "DWC",
        "dw1": "DWC_s1",
        "dw_as_conv": "DWC_s1",
        "fc": "FC",
        "add": "EW",
        "bn": "EW",
        "softmax": None,
        "resize": None,
        "cat#0": None,
        "cat#1": None,
    }
    assert {name: k.kind for name, k in by_name.items()} == want
    assert by_name["c3"].kernel == "conv2d_flat" and by_name["squeeze"].kernel == "conv2d_1x1"
    assert by_name["c3"].op_type == "conv2d" and by_name["c3"].anchor == "c3"
    assert by_name["dw_as_conv"].kernel.startswith("depthwise_conv2d")


def test_mflops_are_the_anchor_operators_flops(kinded) -> None:
    graph, by_name = kinded
    assert graph.tensors[graph.op("c3").outputs[0]].shape == (1, 6, 15, 17)  # "same" padding
    assert by_name["c3"].mflops == pytest.approx(2 * 6 * 15 * 17 * 8 * 9 / 1e6)  # 2 x MACs, the ReLU not added
    assert by_name["squeeze"].mflops == pytest.approx(2 * 4 * 15 * 17 * 8 / 1e6)
    assert by_name["pool"].mflops == pytest.approx(8 * 7 * 8 * 9 / 1e6)  # one per window element
    assert by_name["dw2"].mflops == pytest.approx(2 * 8 * 8 * 9 * 9 / 1e6)
    assert by_name["fc"].mflops == pytest.approx(2 * 8 * 10 / 1e6)
    assert by_name["add"].mflops == pytest.approx(8 * 15 * 17 / 1e6)  # one per element
    assert by_name["gap"].mflops == pytest.approx(8 * 15 * 17 / 1e6)  # one per input element
    for k in by_name.values():
        assert k.mflops == pytest.approx(graph.op_cost(graph.op(k.anchor)).flops / 1e6)
        assert k.as_dict()["kind"] == k.kind


def test_the_table1_networks_have_the_kinds_the_paper_names() -> None:
    found = {}
    for name, entry in zoo.entries().items():
        if entry.table1:
            graph = canonical(zoo.build(name))
            found[name] = [k.kind for k in classify_kernels(graph, kernels_for_graph(graph))]
    assert len(found) == 6
    assert found["squeezenet_1_0"].count("S") == 8  # one squeeze per fire module
    assert "S" not in found["mobilenet_v2"] and "S" not in found["resnet_v2_50"]
    assert {"DWC", "DWC_s1", "C_1x1", "EW", "FC"} <= set(found["mobilenet_v2"])
    assert all({"C", "P"} <= set(kinds) for kinds in found.values())
    assert set().union(*map(set, found.values())) - {None} == set(KINDS)


def test_kinds_are_checked_and_put_in_order() -> None:
    assert check_kinds(["EW", "C", "C", "P"]) == ("C", "P", "EW")
    with pytest.raises(ValueError, match="unknown operator kinds \\['X'\\]"):
        check_kinds(["C", "X"])

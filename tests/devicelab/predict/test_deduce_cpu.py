"""The host CPU runtime's fusion and layout rules, learned from what its profiler recorded."""

from __future__ import annotations

from devicelab.graph.jsonio import graph_to_dict
from devicelab.predict.cpu_anatomy import anatomy
from devicelab.predict.cpu_learning import learn_cpu_deducer
from devicelab.predict.cpu_rules import BLOCKED
from devicelab.predict.deduce_cpu import CpuDeducer
from devicelab.predict.deducers import deducer_from_dict
from devicelab.predict.records import ProfileRecord

# Measured (40 seeded NAS samples, 30 to learn from plus the probe graphs, 10 held out): 99-100 %
# of held-out operators get the recorded anchor and layout, 97 % of recorded reorders are deduced.
OPERATOR_FLOOR = 0.95
REORDER_FLOOR = 0.85


def _learn(cpu_records: dict[str, list[ProfileRecord]]) -> CpuDeducer:
    return learn_cpu_deducer(cpu_records["synthetic"][:30] + cpu_records["probes"], seed=0)


def test_rules_reproduce_held_out_records(cpu_records: dict[str, list[ProfileRecord]]) -> None:
    deducer = _learn(cpu_records)
    agreement = deducer.agreement(cpu_records["synthetic"][30:])
    assert agreement["operators"] > 300
    assert agreement["operator_match"] >= OPERATOR_FLOOR
    assert agreement["reorder_match"] >= REORDER_FLOOR


def test_rules_learn_the_runtimes_fusions(cpu_records: dict[str, list[ProfileRecord]]) -> None:
    deducer = _learn(cpu_records)
    # ONNX Runtime folds a batch norm and an activation into the convolution before them.
    assert any(deducer.fuses("conv2d", layout, "batch_norm", 1) for layout in ("nchw", BLOCKED))
    assert any(deducer.fuses("conv2d", layout, "relu", 1) for layout in ("nchw", BLOCKED))
    assert not deducer.fuses("conv2d", BLOCKED, "max_pool2d", 1)
    assert deducer.block in (0, 4, 8, 16, 32, 64)


def test_every_operator_is_in_one_kernel(cpu_records: dict[str, list[ProfileRecord]]) -> None:
    deducer = _learn(cpu_records)
    for rec in cpu_records["synthetic"][30:]:
        kernels = deducer.kernels(rec.graph)
        ops = sorted(i for k in kernels for i in k.ops)
        assert ops == list(range(len(rec.graph.operators)))
        measured = deducer.measured(rec)
        assert sorted(i for k in measured for i in k.ops) == ops
        assert all(k.latency_ms is not None and k.latency_ms >= 0 for k in measured)
        assert {k.type.split("/")[1] for k in kernels} <= {"nchw", BLOCKED}


def test_anatomy_reads_the_owner_map(cpu_records: dict[str, list[ProfileRecord]]) -> None:
    rec = cpu_records["synthetic"][0]
    an = anatomy(rec)
    fused = [r for r in rec.ops if r.index is not None and r.fused_into]
    assert fused, "a conv + batch norm + ReLU6 network has fused operators"
    for r in fused:
        assert an.anchor[r.index] != r.index


def test_rules_survive_plain_data(cpu_records: dict[str, list[ProfileRecord]]) -> None:
    deducer = _learn(cpu_records)
    again = deducer_from_dict(deducer.to_dict())
    for rec in cpu_records["synthetic"][30:35]:
        assert again.kernels(rec.graph) == deducer.kernels(rec.graph)


def test_activations_fused_inside_a_network_are_deduced(cpu_records: dict[str, list[ProfileRecord]]) -> None:
    # MobileNet-V3's HardSwish after a convolution: the synthetic samples have none, so the rule
    # comes from the probes, whose followers feed a consumer as inside a network (ONNX Runtime
    # fuses it into the convolution then; as a graph output it runs as HardSigmoid + Mul).
    from devicelab.backends import cpu
    from devicelab.backends.base import ProfileSettings
    from devicelab.graph import zoo
    from devicelab.predict.records import record_from_result

    graph = zoo.build("mobilenet_v3_small")
    rec = record_from_result(
        graph, cpu.profile(cpu.discover()[0], graph, ProfileSettings(threads=1, runs=1, warmup_runs=0))
    )
    deducer = _learn(cpu_records)
    agreement = deducer.agreement([rec])
    assert agreement["operator_match"] >= 0.98, agreement
    kinds = lambda ks: sorted(k.type for k in ks if not k.type.startswith("reorder"))  # noqa: E731
    assert kinds(deducer.kernels(graph)) == kinds(deducer.measured(rec))
    hard_swish = [i for i, op in enumerate(graph.operators) if op.type == "hard_swish"]
    owner = lambda ks: {i: k.type for k in ks for i in k.ops if i in hard_swish}  # noqa: E731
    assert owner(deducer.kernels(graph)) == owner(deducer.measured(rec))
    assert sum(t.startswith("conv2d") for t in owner(deducer.measured(rec)).values()) >= 10


def test_a_blocked_convolution_counts_its_padded_work() -> None:
    from devicelab.predict.deduce_cpu import blocked_raw
    from devicelab.predict.features import RAW_NAMES, raw_features

    col = {n: i for i, n in enumerate(RAW_NAMES)}
    conv = {
        "out_channels": 40,
        "groups": 1,
        "kernel": (3, 3),
        "stride": (1, 1),
        "pads": (1, 1, 1, 1),
        "dilation": (1, 1),
        "bias": False,
    }
    raw = raw_features("conv2d", [(1, 24, 14, 14)], [(1, 40, 14, 14)], conv)
    padded = blocked_raw(raw, "conv2d", 16)
    # 24 -> 32 input and 40 -> 48 output channels: 2 x 32 x 48 x 9 x 14 x 14 FLOPs, 32 x 48 x 9 weights
    assert padded[col["flops"]] == raw[col["flops"]] * (32 / 24) * (48 / 40) == 2 * 32 * 48 * 9 * 14 * 14
    assert padded[col["kernel_size"]] == 32 * 48 * 9
    kept = ("input_channels", "output_channels", "input_size", "output_size", "filters")
    assert all(padded[col[n]] == raw[col[n]] for n in kept)  # the operator's shapes stay as they are
    # fewer input channels than a block are read from the plain layout: only the output pads
    first = raw_features("conv2d", [(1, 3, 224, 224)], [(1, 40, 224, 224)], conv)
    assert blocked_raw(first, "conv2d", 16)[col["flops"]] == first[col["flops"]] * 48 / 40
    # whole blocks: nothing changes
    aligned = raw_features("conv2d", [(1, 32, 14, 14)], [(1, 48, 14, 14)], {**conv, "out_channels": 48})
    assert blocked_raw(aligned, "conv2d", 16) == aligned


def test_deduced_and_measured_blocked_kernels_carry_padded_work(cpu_records: dict[str, list[ProfileRecord]]) -> None:
    from devicelab.predict.deduce_cpu import blocked_raw
    from devicelab.predict.features import op_raw_features

    deducer = _learn(cpu_records)
    assert deducer.padded_work and deducer.block > 0
    padded = 0
    for rec in cpu_records["synthetic"][30:]:
        ops = rec.graph.operators
        for k in deducer.kernels(rec.graph) + deducer.measured(rec):
            if not k.ops:
                continue
            plain = op_raw_features(rec.graph, ops[k.ops[0]])
            kind, layout = k.type.split("/")
            if layout == BLOCKED and kind in ("conv2d", "conv2d_1x1", "depthwise_conv2d", "grouped_conv2d"):
                assert k.raw == blocked_raw(plain, kind, deducer.block)
                padded += k.raw != plain
            else:
                assert k.raw == plain
    assert padded > 0  # the NAS samples have channel counts that are not whole blocks
    # a deducer stored before padded work keeps the features its models were trained on
    old = {k: v for k, v in deducer.to_dict().items() if k != "padded_work"}
    legacy = deducer_from_dict(old)
    assert not legacy.padded_work
    g = cpu_records["synthetic"][31].graph
    assert all(k.raw == op_raw_features(g, g.operators[k.ops[0]]) for k in legacy.kernels(g) if k.ops)
    assert deducer_from_dict(deducer.to_dict()).padded_work


def test_deducing_needs_neither_scikit_learn_nor_a_runtime(cpu_records: dict[str, list[ProfileRecord]]) -> None:
    """A web process loads a CPU predictor's deducer and deduces with it; learning (scikit-learn)
    and profiling (ONNX Runtime) stay in the trainer and the worker."""
    import json
    import subprocess
    import sys

    data = {
        "deducer": _learn(cpu_records).to_dict(),
        "graph": graph_to_dict(cpu_records["synthetic"][31].graph),
    }
    code = (
        "import json, sys\n"
        "from devicelab.graph.jsonio import graph_from_dict\n"
        "from devicelab.predict.deducers import deducer_from_dict\n"
        "data = json.load(sys.stdin)\n"
        "assert deducer_from_dict(data['deducer']).kernels(graph_from_dict(data['graph']))\n"
        "print(sorted(m for m in ('sklearn', 'onnxruntime', 'onnx') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], input=json.dumps(data), capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"

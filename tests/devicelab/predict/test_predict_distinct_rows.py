"""A batch's repeated kernels are read once and tree models predict each distinct row once, with
the very numbers of predicting every kernel's row (``ScenarioPredictor.predict_kernels``)."""

from __future__ import annotations

import numpy as np
import pytest

from devicelab.graph import nas
from devicelab.graph.nas import nb201, nb201_cells
from devicelab.predict import qed
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer
from devicelab.predict.features import feature_group, feature_matrix
from devicelab.predict.kernels import Kernel
from devicelab.predict.predictor import Scenario, ScenarioPredictor, train_predictor


def every_row(p: ScenarioPredictor, kernel_lists: list[list[Kernel]]) -> list[float]:
    """Kernel sums as predicted before repeated rows were folded: every kernel's row, per model."""
    flat = [(n, k) for n, ks in enumerate(kernel_lists) for k in ks]
    sums = np.zeros(len(kernel_lists))
    by_type: dict[str, list[int]] = {}
    for i, (_, k) in enumerate(flat):
        by_type.setdefault(k.type, []).append(i)
    for ktype, idx in by_type.items():
        target = p.resolve(ktype)
        if target in (None, "overhead"):
            continue
        raws = np.asarray([flat[i][1].raw for i in idx], dtype=np.float64)
        lat = np.maximum(p.models[target].predict(feature_matrix(feature_group(target), raws)) + p.per_kernel_ms, 0.0)
        np.add.at(sums, [flat[i][0] for i in idx], lat)
    return [float(s) for s in sums]


@pytest.mark.parametrize("method", ["gbdt", "rf", "lasso"])
def test_the_same_numbers_as_predicting_every_row(method: str) -> None:
    p = train_predictor(
        qed.gpu_samples("s10"),
        TfliteGpuDeducer(qed.DEVICES["s10"][1]),
        Scenario("tflite_gpu", "qed:s10", precision="fp16", gpu=qed.DEVICES["s10"][0]),
        method,
        search="fast",
        overhead_kinds=("elementwise", "reshape", "split", "pad"),
    )
    graphs = [nb201_cells.from_string(s) for s in nb201.sample_strings(60, 4)] + nas.sample("synthetic", 20, 4)
    kernel_lists = [p.deducer.kernels(g) for g in graphs]
    assert sum(map(len, kernel_lists)) > 2 * len({k.raw for ks in kernel_lists for k in ks})  # rows repeat
    predicted = p.predict_kernels(kernel_lists, on_missing="zero", breakdown=True)
    reference = every_row(p, kernel_lists)
    # np.add.at sums in another order than bincount: equal to the last bits, not bit for bit
    assert [x.kernels_ms for x in predicted] == pytest.approx(reference, rel=1e-12)
    # and a network's kernels have the numbers of each one alone, when the model is row by row
    alone = [p.predict_kernels([ks], on_missing="zero", breakdown=True)[0] for ks in kernel_lists[:10]]
    compared = 0
    for a, x in zip(alone, predicted[:10]):
        assert a.kernels is not None and x.kernels is not None
        for ka, kx in zip(a.kernels, x.kernels):
            if kx.model in p.models and p.models[kx.model].row_by_row:
                assert ka == kx
                compared += 1
    assert compared or method == "lasso"

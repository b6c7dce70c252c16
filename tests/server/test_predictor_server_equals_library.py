"""The server's predictor of a qed phone and the library's, trained on the same data with the
same method and the library's defaults, are the same predictor: same samples, same models (the
same kernel types stood in for), same predictions. They were not: the library's
``train_predictor`` gave every kernel type a model of its own by default (``min_networks=1``)
where the server stands in for types seen in fewer than 5 networks
(``LATENCYLAB_PREDICTOR_MIN_NETWORKS_PER_KERNEL``), so every cross-validation fold that left out
a few of the 7 networks with grouped convolutions trained a different predictor (grouped 5-fold
MAPE on the Galaxy S10, fast search: GBDT 13.6 % against 15.9 %, Lasso 15.0 % against 15.3 %);
both now take ``coverage.MIN_NETWORKS_PER_KERNEL``."""

from __future__ import annotations

from typing import Any

import pytest

from devicelab.graph.nas import nb201
from devicelab.predict import qed
from devicelab.predict.coverage import MIN_NETWORKS_PER_KERNEL
from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer
from devicelab.predict.evaluate import mape
from devicelab.predict.predictor import Scenario, train_predictor

pytestmark = pytest.mark.django_db

PHONE = "s10"
# 3 of the 7 networks with grouped convolutions left out (as a cross-validation fold may): the
# type is then seen in 4 training networks, fewer than the minimum, and a stand-in prices it
HELD_OUT = {"regnetx002", "regnetx004", "regnetx006"}


def test_the_server_trains_the_predictor_the_library_trains(settings: Any) -> None:
    from server.predictors.qed_import import ensure_qed_device, import_qed, qed_samples
    from server.predictors.services import request_predictor
    from server.predictors.training import fitter

    assert settings.LATENCYLAB_PREDICTOR_MIN_NETWORKS_PER_KERNEL == MIN_NETWORKS_PER_KERNEL
    import_qed()
    device = ensure_qed_device(PHONE)[0]
    row = request_predictor(None, device, method="lasso", search="fast", enqueue=False)
    deducer = TfliteGpuDeducer(qed.DEVICES[PHONE][1])

    # the data: the server's stored rows give the samples the library reads from the files
    stored = sorted(qed_samples(device), key=lambda s: s.name)
    files = sorted(qed.gpu_samples(PHONE), key=lambda s: s.name)
    assert [(s.name, s.e2e_ms, s.measured, s.deduced) for s in stored] == [
        (s.name, s.e2e_ms, s.measured, s.deduced) for s in files
    ]

    # the server's final training (what ``train_from_qed`` stores) and the library's, its defaults
    server = fitter(row, Scenario.from_dict(row.scenario))([s for s in stored if s.name not in HELD_OUT], deducer)
    scenario = Scenario("tflite_gpu", PHONE, precision="fp16", gpu=qed.DEVICES[PHONE][0])
    library = train_predictor(
        [s for s in files if s.name not in HELD_OUT],
        deducer,
        scenario,
        "lasso",
        search="fast",
        overhead_kinds=qed.OVERHEAD_KINDS,
    )
    assert "grouped_conv2d" in server.meta["stood_in"]
    assert sorted(server.models) == sorted(library.models)
    assert server.meta["stood_in"].keys() == library.meta["stood_in"].keys()
    assert server.t_overhead_ms == pytest.approx(library.t_overhead_ms, rel=1e-12)

    inputs = [s.prediction_input() for s in files]
    cells = [deducer.kernels(nb201.from_string(c)) for c in nb201.sample_strings(5, seed=1)]
    mine = [p.latency_ms for p in server.predict_kernels(inputs + cells, on_missing="zero")]
    theirs = [p.latency_ms for p in library.predict_kernels(inputs + cells, on_missing="zero")]
    assert mine == pytest.approx(theirs, rel=1e-9)
    measured = [s.e2e_ms for s in files]
    assert mape(mine[: len(files)], measured) == pytest.approx(mape(theirs[: len(files)], measured), rel=1e-9)

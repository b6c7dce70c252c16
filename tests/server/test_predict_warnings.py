"""Every prediction answer names the predictor (id, version), its test MAPE, and per architecture the
warnings: kernels outside the predictor's training range, or, for a predictor trained before ranges
were recorded, that the range is unknown. ``POST /api/predict/``, the side-by-side answer, and the
CLI's printing of them, on a real predictor of the qed Mali G76 phone."""

from __future__ import annotations

from typing import Any

import pytest

from devicelab.graph import Graph, GraphBuilder, graph_to_dict
from tests.server.predictor_data import qed_predictor, ready_predictor

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    """Rows get the same ids in every test (the database is rolled back): forget loaded ones."""
    from server.predictors.serving import clear_cache

    clear_cache()


@pytest.fixture
def phone() -> Any:
    from server.predictors.qed_import import ensure_qed_device

    return ensure_qed_device("s10")[0]


def one_conv(name: str, size: int, channels: int, filters: int) -> Graph:
    """A network of one 1x1 convolution (a ``conv2d`` kernel on the phone's GPU)."""
    b = GraphBuilder(name, (1, channels, size, size))
    return b.build(b.conv(b.input, filters, 1, bias=False))


ARCHS = [
    {"name": "inside", "graph": graph_to_dict(one_conv("inside", 56, 64, 64))},  # like the phone's training convs
    {"name": "huge", "graph": graph_to_dict(one_conv("huge", 224, 512, 2048))},  # 105 GFLOPs, 34x the largest
]


def test_predictions_carry_the_version_the_test_mape_and_out_of_range_warnings(
    api: Any, phone: Any, capsys: Any
) -> None:
    from latencylab.client import Predictions
    from latencylab.commands.client_cmds import print_predictions

    row = ready_predictor(phone)
    resp = api.post("/api/predict/", {"device": phone.pk, "architectures": ARCHS}, format="json")
    assert resp.status_code == 200, resp.content
    answer = resp.json()
    p = answer["predictor"]
    assert (p["id"], p["version"], p["e2e_mape"], p["n_test"], p["rankable"]) == (row.pk, row.version, 0.1, 67, True)
    inside, huge = answer["results"]
    assert inside["warnings"] == []
    (warning,) = huge["warnings"]
    assert (warning["code"], warning["kernel_type"], warning["model"], warning["kernels"]) == (
        "outside_training_range",
        "conv2d",
        "conv2d",
        1,
    )
    flops = next(f for f in warning["outside"] if f["feature"] == "flops")
    assert flops["value"] == 2 * 224 * 224 * 512 * 2048 > 30 * flops["train_max"]
    assert "outside its model's training range" in warning["message"] and "flops up to" in warning["message"]

    # The side-by-side answer carries the same.
    resp = api.post("/api/predict/side-by-side/", {"device": phone.pk, "architectures": ARCHS}, format="json")
    assert resp.status_code == 200, resp.content
    (mine,) = [a for a in resp.json()["answers"] if a["device"]["id"] == phone.pk]
    assert mine["predictor"]["e2e_mape"] == 0.1 and mine["predictor"]["chosen_as"] == "best"
    assert [r["warnings"] for r in mine["results"]] == [inside["warnings"], huge["warnings"]]

    # ``latencylab predict`` prints the predictor's version and test MAPE, and the warnings on stderr.
    print_predictions(Predictions(answer["results"], answer["predictor"]))
    out, err = capsys.readouterr()
    assert f"predictor #{row.pk} v{row.version} (lasso) of device #{phone.pk}: test MAPE 10.00 % on 67 networks" in out
    assert "warnings" in out.splitlines()[1]  # a column of the table
    # the huge convolution is nearly all of the network's time, and the warning says so
    assert warning["share"] > 0.5 and warning["kernels_ms"] > 0
    effect = f"(those kernels: up to {100 * warning['share']:.2f} % of a predicted latency)"
    assert err.splitlines() == [f"warning: {warning['message']} {effect} [huge]"]


def test_a_predictor_trained_before_ranges_warns_that_its_range_is_unknown(api: Any, phone: Any) -> None:
    import dataclasses

    old = ready_predictor(phone, predictor=dataclasses.replace(qed_predictor(), training_ranges=None))
    assert old.artifact["training_ranges"] is None
    resp = api.post("/api/predict/", {"predictor": old.pk, "architectures": ARCHS}, format="json")
    assert resp.status_code == 200, resp.content
    for result in resp.json()["results"]:
        assert [w["code"] for w in result["warnings"]] == ["training_range_unknown"]
        assert result["warnings"][0]["message"].startswith("training range unknown")

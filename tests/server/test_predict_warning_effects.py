"""NB-201 cells through ``POST /api/predict/``: every cell's mean and pooling kernels are smaller
than the qed phone's training networks', and each such warning says how far outside (a factor)
and how much of the prediction those kernels are (``share``, small); the answer summarizes the
warnings per request and says what answered (the NB-201 table, or the general path while the
table is not built), and the same numbers come from either; the space's other settings are
honoured off the table, or refused with a pointer to graph JSON."""

from __future__ import annotations

from typing import Any

import pytest

from devicelab.graph.nas import nb201
from devicelab.predict.predictor import ScenarioPredictor
from tests.server.predictor_data import qed_predictor, ready_predictor

pytestmark = pytest.mark.django_db

CELLS = nb201.sample_strings(6, seed=3)


@pytest.fixture(scope="module")
def trained() -> ScenarioPredictor:
    """One qed predictor for the module (training it takes ~10 s)."""
    return qed_predictor()


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    """Rows get the same ids in every test (the database is rolled back): forget loaded ones."""
    from server.predictors.serving import clear_cache

    clear_cache()


@pytest.fixture
def row(trained: ScenarioPredictor) -> Any:
    from server.predictors.qed_import import ensure_qed_device

    return ready_predictor(ensure_qed_device("s10")[0], predictor=trained)


def _predict(api: Any, row: Any, archs: list[dict[str, Any]], **extra: Any) -> Any:
    return api.post("/api/predict/", {"predictor": row.pk, "architectures": archs, **extra}, format="json")


def _cells() -> list[dict[str, Any]]:
    return [{"name": f"cell-{i}", "nb201": c} for i, c in enumerate(CELLS)]


def test_cell_warnings_say_how_far_outside_and_how_much_of_the_prediction(api: Any, row: Any) -> None:
    resp = _predict(api, row, _cells())
    assert resp.status_code == 200, resp.content
    answer = resp.json()
    shares: dict[str, list[float]] = {}
    for r in answer["results"]:
        outside = {w["kernel_type"]: w for w in r["warnings"] if w["code"] == "outside_training_range"}
        assert {"mean", "pooling"} <= set(outside), r["warnings"]
        for kind, w in outside.items():
            assert 0 < w["kernels_ms"] < r["kernels_ms"]
            assert w["share"] == pytest.approx(w["kernels_ms"] / r["latency_ms"])
            shares.setdefault(kind, []).append(w["share"])
            for f in w["outside"]:
                # the cells' kernels are smaller than any the phone was trained on
                assert f["side"] == "below" and f["value"] < f["train_min"]
                assert f["distance"] == pytest.approx(f["train_min"] - f["value"])
                assert f["factor"] == pytest.approx(f["train_min"] / f["value"]) and f["factor"] > 1
    # the global mean is one small kernel: well under 1 % of any cell; the pools a few %
    assert max(shares["mean"]) < 0.01
    assert max(shares["pooling"]) < 0.2

    summary = answer["warning_summary"]
    assert (summary["architectures"], summary["with_warnings"]) == (len(CELLS), len(CELLS))
    kinds = {(k["code"], k["kernel_type"]): k for k in summary["by_kind"]}
    for kind in ("mean", "pooling"):
        k = kinds[("outside_training_range", kind)]
        assert k["architectures"] == len(CELLS)
        assert k["largest_share"] == pytest.approx(max(shares[kind]))
        assert k["largest_factor"] > 1
    assert summary["largest_share"] == pytest.approx(max(max(v) for v in shares.values()))
    # no table yet: every cell was computed, and the answer says so
    assert answer["answered_by"] == {"nb201_table": "not_built", "from_table": 0, "computed": len(CELLS)}


def test_the_answer_says_whether_the_table_answered_and_its_numbers_are_the_computed_ones(
    api: Any, row: Any, capsys: Any
) -> None:
    from latencylab.client import Predictions
    from latencylab.commands.client_cmds import print_prediction_warnings
    from server.predictors.serving import clear_cache
    from server.predictors.tables import build_nb201_table, nb201_index

    computed = _predict(api, row, _cells()).json()
    out = Predictions()
    out.add_answer(computed)
    print_prediction_warnings(out)
    assert "NB-201 table is not built yet" in capsys.readouterr().err

    # the table holds all but the last cell: that one is still computed
    build_nb201_table(row, indices=[nb201_index(nb201.parse(c)) for c in CELLS[:-1]])
    clear_cache()
    answer = _predict(api, row, _cells()).json()
    assert answer["answered_by"] == {"nb201_table": "used", "from_table": len(CELLS) - 1, "computed": 1}
    for got, want in zip(answer["results"], computed["results"], strict=True):
        assert got["latency_ms"] == pytest.approx(want["latency_ms"], rel=1e-9)
        assert [w["message"] for w in got["warnings"]] == [w["message"] for w in want["warnings"]]
        assert [w["kernels_ms"] for w in got["warnings"]] == pytest.approx([w["kernels_ms"] for w in want["warnings"]])
        assert [w["share"] for w in got["warnings"]] == pytest.approx([w["share"] for w in want["warnings"]])
    got_summary, want_summary = answer["warning_summary"], computed["warning_summary"]
    assert got_summary["largest_share"] == pytest.approx(want_summary["largest_share"])
    assert [k["architectures"] for k in got_summary["by_kind"]] == [k["architectures"] for k in want_summary["by_kind"]]

    breakdown = _predict(api, row, _cells()[:1], breakdown=True).json()
    assert breakdown["answered_by"] == {"nb201_table": "skipped_for_breakdown", "from_table": 0, "computed": 1}
    graphs_only = _predict(api, row, [{"name": "g", "nb201": CELLS[0], "channels": 24}]).json()
    assert graphs_only["answered_by"]["nb201_table"] == "no_nb201_cells"


def test_nb201_requests_take_the_spaces_other_settings_or_say_to_send_graph_json(api: Any, row: Any) -> None:
    cell = CELLS[0]
    base = _predict(api, row, [{"name": "c", "nb201": cell}]).json()["results"][0]
    same = _predict(api, row, [{"name": "c", "nb201": cell, "channels": 16, "cells_per_stage": 5}])
    assert same.json()["results"][0]["latency_ms"] == pytest.approx(base["latency_ms"])
    wider = _predict(api, row, [{"name": "c", "nb201": cell, "channels": 32}]).json()["results"][0]
    deeper = _predict(api, row, [{"name": "c", "nb201": cell, "cells_per_stage": 8}]).json()["results"][0]
    larger = _predict(api, row, [{"name": "c", "nb201": cell, "resolution": 64}]).json()["results"][0]
    for variant in (wider, deeper, larger):  # more work than the benchmark's network
        assert variant["kernels_ms"] > base["kernels_ms"]

    resp = _predict(api, row, [{"name": "big", "nb201": cell, "resolution": 1024}])
    assert resp.status_code == 400
    (err,) = resp.json()["errors"]
    assert err["name"] == "big" and "resolution=1024 is outside 8..512" in err["error"]
    assert "send such a variant of the space as graph JSON" in err["error"]
    resp = _predict(api, row, [{"name": "odd", "nb201": cell, "channels": 2.5}])
    assert resp.status_code == 400 and "channels must be a whole number" in resp.json()["errors"][0]["error"]

"""The predictor pages: each device's versions a team sees, and one version's evaluation charts."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from dashboard import predictor_figures
from dashboard.predictor_queries import CurvePoint, EvaluationPoint, KernelError
from server.predictors.models import PredictorState
from tests.dashboard.predictor_factories import KERNEL_MAPE, evaluation, imported_device, make_predictor


def _figure(html: str, element_id: str) -> dict[str, Any]:
    m = re.search(rf'id="{element_id}" data-figure><script type="application/json">(.*?)</script>', html, re.S)
    assert m, f"no figure {element_id}"
    return json.loads(m.group(1))


def _trace(fig: dict[str, Any], name: str) -> dict[str, Any]:
    (trace,) = [t for t in fig["data"] if t.get("name") == name]
    return trace


@pytest.mark.django_db
def test_the_list_shows_own_and_shared_versions_per_device_and_marks_the_best_ready_one(
    make_member: Callable, web_client: Callable, make_device: Callable
) -> None:
    me, other = make_member(), make_member()
    cpu, phone = make_device(name="lab-cpu"), imported_device("pixel4")
    gbdt = make_predictor(cpu, me.team, "gbdt", e2e_mape=0.05)
    lasso = make_predictor(cpu, me.team, "lasso", e2e_mape=0.03)
    failed = make_predictor(cpu, me.team, "mlp", state=PredictorState.FAILED, failure_reason="too few networks")
    theirs = make_predictor(cpu, other.team, "rf", e2e_mape=0.01)  # better, but not ours to see
    shared = make_predictor(phone, None, "gbdt", e2e_mape=0.07)

    resp = web_client(me).get("/predictors/")
    assert resp.status_code == 200
    groups = {g.device.pk: g for g in resp.context["groups"]}
    assert set(groups) == {cpu.pk, phone.pk}
    assert {p.pk for p in groups[cpu.pk].predictors} == {gbdt.pk, lasso.pk, failed.pk}
    assert groups[cpu.pk].best_id == lasso.pk and groups[phone.pk].best_id == shared.pk
    html = resp.content.decode()
    assert f'href="/predictors/{theirs.pk}/"' not in html
    assert 'href="/predictors/"' in html  # the nav link
    best_row = re.search(rf'<tr data-predictor-id="{lasso.pk}" class="best">.*?</tr>', html, re.S)
    assert best_row and "data-best" in best_row.group(0) and "3.00%" in best_row.group(0)
    assert html.count("data-best") == 2  # one per device
    assert "too few networks" in html

    # The other team sees its own rf as the best of the device, and the shared phone too.
    theirs_page = web_client(other).get("/predictors/")
    their_groups = {g.device.pk: g for g in theirs_page.context["groups"]}
    assert their_groups[cpu.pk].best_id == theirs.pk and their_groups[phone.pk].best_id == shared.pk


@pytest.mark.django_db
def test_another_teams_predictor_is_404_and_a_shared_one_opens_for_every_team(
    make_member: Callable, web_client: Callable, make_device: Callable
) -> None:
    me, other = make_member(), make_member()
    theirs = make_predictor(make_device(), other.team)
    shared = make_predictor(imported_device(), None)
    assert web_client(me).get(f"/predictors/{theirs.pk}/").status_code == 404
    assert web_client(other).get(f"/predictors/{theirs.pk}/").status_code == 200
    assert web_client(me).get("/predictors/987654/").status_code == 404
    for member in (me, other):
        resp = web_client(member).get(f"/predictors/{shared.pk}/")
        assert resp.status_code == 200 and "shared with every team" in resp.content.decode()


@pytest.mark.django_db
def test_the_predictor_page_draws_its_evaluation_and_compares_the_methods_of_its_scenario(
    make_member: Callable, web_client: Callable, make_device: Callable
) -> None:
    me, other = make_member(), make_member()
    device = make_device()
    this = make_predictor(device, me.team, "gbdt", version=2, e2e_mape=0.021)
    older = make_predictor(device, me.team, "gbdt", version=1, e2e_mape=0.03)
    lasso = make_predictor(device, me.team, "lasso", version=1, e2e_mape=0.05)
    make_predictor(device, me.team, "mlp", version=1, threads=2)  # another scenario
    make_predictor(device, me.team, "rf", version=1, state=PredictorState.TRAINING)  # not ready
    make_predictor(device, other.team, "rf", version=2, e2e_mape=0.001)  # another team's

    resp = web_client(me).get(f"/predictors/{this.pk}/")
    assert resp.status_code == 200
    html = resp.content.decode()
    assert "best on this device" in html and 'id="e2e-mape">2.10%' in html

    scatter = _figure(html, "chart-predicted-measured")
    points = this.evaluation["points"]
    networks = _trace(scatter, "test networks")
    assert networks["x"] == [p["measured_ms"] for p in points]
    assert networks["y"] == [p["predicted_ms"] for p in points]
    assert networks["hovertext"] == [p["name"] for p in points]
    line = _trace(scatter, "y = x")
    assert line["x"] == line["y"] and line["x"][0] <= 2.0 and line["x"][1] >= max(networks["y"])
    assert scatter["layout"]["xaxis"]["title"]["text"] == "measured end-to-end latency (ms)"

    bars = _figure(html, "chart-kernel-mape")["data"][0]
    assert sorted(bars["y"]) == sorted(KERNEL_MAPE)
    assert bars["x"] == pytest.approx(sorted((v * 100 for v in KERNEL_MAPE.values()), reverse=True))

    curve = _figure(html, "chart-training-size")
    assert [t["name"] for t in curve["data"]] == ["Lasso v1", "GBDT v2 (this)", "GBDT v1"]
    assert _trace(curve, "GBDT v2 (this)")["x"] == [30, 100, 160]
    assert _trace(curve, "GBDT v2 (this)")["y"] == pytest.approx([9.0, 6.0, 2.1])
    assert curve["layout"]["xaxis"].get("type") != "log"  # 30 to 160: not worth a log axis

    peers = resp.context["comparison"].peers
    assert [p.pk for p in peers] == [lasso.pk, this.pk, older.pk]
    assert [p.best for p in peers] == [False, True, False] and resp.context["comparison"].sizes == [30, 100]
    table = re.search(r'<table class="table sortable" id="method-comparison">.*?</table>', html, re.S)
    assert table and table.group(0).count("<tr data-predictor-id=") == 3 and "5.00%" in table.group(0)


@pytest.mark.django_db
def test_the_page_says_how_the_predictor_was_made(
    make_member: Callable, web_client: Callable, make_device: Callable
) -> None:
    me = make_member()
    p = make_predictor(make_device(), me.team)
    html = web_client(me).get(f"/predictors/{p.pk}/").content.decode()
    meta = re.search(r'<dl class="facts" id="meta">(.*?)</dl>', html, re.S)
    assert meta
    text = meta.group(1)
    assert p.artifact_sha256 in text and p.meta["training_data_sha256"] in text
    assert "numpy 2.2.0, scikit-learn 1.6.1" in text and "200 (#1 … #200)" in text
    assert "Seed</dt><dd>0</dd>" in text
    assert "holdout 20%" in html and "held out before training" in html
    assert f"<code>{p.scenario_key}</code>" in html


@pytest.mark.django_db
def test_the_page_says_how_steady_the_test_measurements_are(
    make_member: Callable, web_client: Callable, make_device: Callable
) -> None:
    from devicelab.predict.noise import noise_floor

    me = make_member()
    device = make_device()
    ev = evaluation()
    ev["noise_floor"] = noise_floor([[2.0 + i, 2.1 + i, 2.05 + i, 2.3 + i] for i in range(12)])
    steady = make_predictor(device, me.team, evaluation=ev)
    html = web_client(me).get(f"/predictors/{steady.pk}/").content.decode()
    line = re.search(r'<p class="small" id="noise-floor">(.*?)</p>', html, re.S)
    assert line, "no noise floor"
    text = line.group(1)
    f = ev["noise_floor"]
    assert "the 12 test networks were measured in 4 rounds" in text
    assert (
        f"fastest of 2 rounds against the fastest of the next 2 differ by {100 * f['mape_half_vs_half']:.1f}%" in text
    )
    assert f"a perfect predictor would score about {100 * f['oracle_mape']:.1f}%" in text
    two = evaluation()
    two["noise_floor"] = noise_floor([[2.0, 2.2], [3.0, 3.0]])
    html = web_client(me).get(f"/predictors/{make_predictor(device, me.team, evaluation=two).pk}/").content.decode()
    assert "differ by 4.5%" in html and "perfect predictor" not in html  # 2 rounds: no noise model
    html = web_client(me).get(f"/predictors/{make_predictor(device, me.team).pk}/").content.decode()
    assert 'id="noise-floor"' not in html  # measured once: nothing to say


@pytest.mark.django_db
def test_a_failed_predictor_shows_its_reason_and_no_charts(
    make_member: Callable, web_client: Callable, make_device: Callable
) -> None:
    me = make_member()
    reason = "team 'x' has 3 network(s) measured on device 'cpu' (#1); a predictor needs at least 5"
    p = make_predictor(make_device(), me.team, state=PredictorState.FAILED, failure_reason=reason)
    resp = web_client(me).get(f"/predictors/{p.pk}/")
    html = resp.content.decode()
    failure = re.search(r'<div class="message error" id="failure">(.*?)</div>', html, re.S)
    assert failure and "a predictor needs at least 5" in failure.group(1)
    assert "data-figure" not in html and "plotly.min.js" not in html
    assert 'http-equiv="refresh"' not in html and 'data-predictor-state="failed"' in html


@pytest.mark.django_db
def test_a_training_predictor_shows_its_progress_and_reloads(
    make_member: Callable, web_client: Callable, make_device: Callable
) -> None:
    me = make_member()
    p = make_predictor(make_device(), me.team, state=PredictorState.QUEUED)
    assert p.claim(lease_seconds=60) and p.report("evaluating: training on 30 networks")
    html = web_client(me).get(f"/predictors/{p.pk}/").content.decode()
    message = re.search(r'<p id="progress-message">(.*?)</p>', html)
    assert message and message.group(1) == "evaluating: training on 30 networks"
    assert '<meta http-equiv="refresh" content="5">' in html and 'data-predictor-state="training"' in html
    listed = web_client(me).get("/predictors/").content.decode()
    assert "evaluating: training on 30 networks" in listed


@pytest.mark.django_db
def test_the_pages_take_a_fixed_number_of_queries(
    make_member: Callable, web_client: Callable, make_device: Callable, django_assert_max_num_queries: Any
) -> None:
    me = make_member()
    devices = [make_device() for _ in range(3)]
    rows = [make_predictor(d, me.team, m) for d in devices for m in ("lasso", "rf", "gbdt", "mlp")]
    make_predictor(devices[0], me.team, state=PredictorState.FAILED, failure_reason="no data")
    make_predictor(imported_device(), None)
    client = web_client(me)
    with django_assert_max_num_queries(4):
        resp = client.get("/predictors/")
    assert sum(len(g.predictors) for g in resp.context["groups"]) == 14
    with django_assert_max_num_queries(6):
        resp = client.get(f"/predictors/{rows[0].pk}/")
    assert len(resp.context["comparison"].peers) == 4


# -- the figures alone ---------------------------------------------------------------------------


def test_the_scatter_has_the_identity_line_and_a_point_per_network() -> None:
    points = [EvaluationPoint(f"n{i}", 1.0 + i * 1.1, 1.0 + i) for i in range(50)]
    fig = json.loads(predictor_figures.predicted_vs_measured(points, "lasso"))
    networks = _trace(fig, "test networks")
    assert len(networks["x"]) == 50 and networks["customdata"][10] == pytest.approx((12.0 / 11.0 - 1) * 100)
    line = _trace(fig, "y = x")
    assert line["x"] == line["y"] and line["x"][0] < 1.0 and line["x"][1] > max(networks["y"])
    assert fig["layout"]["xaxis"]["range"] == fig["layout"]["yaxis"]["range"] == [line["x"][0], line["x"][1]]


def test_the_kernel_bars_and_training_curve_read_in_percent() -> None:
    bars = json.loads(
        predictor_figures.mape_by_kernel_type([KernelError("conv2d", 0.25, 40), KernelError("pool", 0.05, None)])
    )
    assert bars["data"][0]["x"] == pytest.approx([25.0, 5.0]) and bars["layout"]["xaxis"]["title"]["text"] == "MAPE (%)"
    curve = json.loads(
        predictor_figures.mape_vs_training_size(
            [
                predictor_figures.Curve("Lasso v1", "lasso", [CurvePoint(30, 0.065), CurvePoint(900, 0.05)]),
                predictor_figures.Curve("GBDT v1", "gbdt", [CurvePoint(30, 0.1), CurvePoint(900, 0.04)], current=True),
            ]
        )
    )
    assert [t["y"] for t in curve["data"]] == [pytest.approx([6.5, 5.0]), pytest.approx([10.0, 4.0])]
    assert curve["data"][0]["line"]["color"] != curve["data"][1]["line"]["color"]
    assert curve["layout"]["xaxis"]["type"] == "log"  # the paper's 30 to 900 networks
    assert curve["data"][1]["line"]["width"] > curve["data"][0]["line"]["width"]  # the page's own
    assert curve["layout"]["yaxis"]["title"]["text"] == "end-to-end MAPE (%)"


def test_an_evaluation_without_points_or_curve_draws_nothing_of_them() -> None:
    from dashboard.predictor_queries import evaluation_points, kernel_errors, training_curve

    empty = evaluation(points=0, kernel_mape={}, curve=[])
    assert (
        evaluation_points(empty) == []
        and kernel_errors(empty) == []
        and training_curve(empty["by_training_size"]) == []
    )
    assert training_curve([{"n": 30, "e2e_mape": float("nan")}, {"n": 100, "e2e_mape": 0.02}, "junk"]) == [
        CurvePoint(100, 0.02)
    ]


@pytest.mark.django_db
def test_a_shared_predictor_does_not_name_its_admin_to_other_teams(
    make_member: Callable, web_client: Callable, django_user_model: Any
) -> None:
    admin = django_user_model.objects.create_user("lab-admin-7", is_staff=True)
    phone = imported_device("pixel4")
    shared = make_predictor(phone, created_by=admin)
    me = make_member()
    mine = make_predictor(phone, team=me.team, created_by=me.user)
    html = web_client(me).get(f"/predictors/{shared.pk}/").content.decode()
    assert "lab-admin-7" not in html and "by a lab admin" in html
    assert f"by {me.user.username}" in web_client(me).get(f"/predictors/{mine.pk}/").content.decode()

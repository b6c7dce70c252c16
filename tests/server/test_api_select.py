"""POST /api/select/: CNNSelect over a team's models with profiles measured on the device (the
newest succeeded job's samples), T_input given or from a network profile, and clear refusals."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from devicelab.measure.stats import summarize
from devicelab.selection import PRESETS
from server.networks.services import model_graph
from server.profiling.services import claim_job, ingest_result
from tests.server import conftest as server_fixtures
from tests.server.factories import profile_result, tiny_graph

make_device = server_fixtures.make_device
make_network = server_fixtures.make_network
make_job = server_fixtures.make_job
media_in_tmp = server_fixtures.media_in_tmp

pytestmark = pytest.mark.django_db


def _measured(make_job: Callable[..., Any], team: Any, model: Any, device: Any, samples: list[float]) -> int:
    """A succeeded profile job of ``model`` on ``device`` whose warm samples are ``samples``."""
    job = make_job(team, model, device)
    assert claim_job(job.pk, "run-1") is not None
    result = dataclasses.replace(profile_result(model_graph(model)), samples_ms=samples, e2e=summarize(samples))
    ingest_result(job.pk, "run-1", result)
    return int(job.pk)


@pytest.fixture
def lab(
    member: Any,
    make_device: Callable[..., Any],
    make_network: Callable[..., Any],
    make_job: Callable[..., Any],
    api: Any,
) -> dict[str, Any]:
    """A device and two measured models: a fast, less accurate one and a slow, accurate one."""
    device = make_device()
    fast = make_network(member.team, tiny_graph("fastnet"))
    slow = make_network(member.team, tiny_graph("slownet", channels=16))
    for model, top1 in ((fast, 60.0), (slow, 80.0)):
        assert api.patch(f"/api/models/{model.pk}/", {"top1_accuracy": top1}, format="json").status_code == 200
    jobs = {
        "fast": _measured(make_job, member.team, fast, device, [9.8, 10.0, 10.2, 10.0]),
        "slow": _measured(make_job, member.team, slow, device, [95.0, 100.0, 105.0, 100.0]),
    }
    return {"device": device, "fast": fast, "slow": slow, "jobs": jobs}


def _select(api: Any, lab: dict[str, Any], **body: Any) -> Any:
    return api.post(
        "/api/select/",
        {"device": lab["device"].pk, "models": [lab["fast"].pk, lab["slow"].pk], **body},
        format="json",
    )


def test_a_roomy_budget_explores_both_models_with_their_measured_profiles(api: Any, lab: dict[str, Any]) -> None:
    answer = _select(api, lab, sla_ms=400, input_ms=20, threshold_ms=50, seed=3, policy="paper")
    assert answer.status_code == 200, answer.json()
    body = answer.json()
    assert body["t_budget"] == pytest.approx(400 - 2 * 20) and body["t_upper"] == body["t_budget"]
    assert body["t_lower"] == pytest.approx(body["t_upper"] - 50)
    assert body["base"] == "slownet" and not body["fallback"]
    assert sum(body["probabilities"].values()) == pytest.approx(1.0)
    # M_E as printed: here T_E starts past the base model, so M_E is empty and m* runs
    assert body["chosen"]["name"] in body["exploration"] or (
        not body["exploration"] and body["chosen"]["name"] == "slownet"
    )
    assert body["probabilities"][body["chosen"]["name"]] > 0
    assert body["chosen"]["model"] == {"fastnet": lab["fast"].pk, "slownet": lab["slow"].pk}[body["chosen"]["name"]]
    by_name = {c["name"]: c for c in body["candidates"]}
    assert by_name["slownet"]["mu_ms"] == pytest.approx(100.0) and by_name["slownet"]["samples"] == 4
    assert by_name["fastnet"]["latency_source"] == {"kind": "measured", "job": lab["jobs"]["fast"]}
    assert by_name["fastnet"]["accuracy"] == 60.0 and by_name["fastnet"]["accuracy_source"] == "model"
    assert body["why"]


def test_a_budget_no_model_fits_falls_back_to_the_fastest(api: Any, lab: dict[str, Any]) -> None:
    body = _select(api, lab, sla_ms=30, input_ms=20, seed=1).json()
    assert body["fallback"] and body["base"] == "fastnet" and body["chosen"]["name"] == "fastnet"
    assert body["probabilities"]["fastnet"] == pytest.approx(1.0)


def test_the_input_time_can_come_from_a_network_preset(api: Any, lab: dict[str, Any]) -> None:
    body = _select(api, lab, sla_ms=900, network_profile="lte", input_bytes=200_000, seed=0, policy="paper").json()
    assert body["input_source"] == {
        "kind": "network_profile",
        "profile": "lte",
        "input_bytes": 200_000,
        "output_bytes": 1_000,
    }
    assert body["input_ms"] == pytest.approx(PRESETS["lte"].transfer_ms(200_000))
    assert body["t_budget"] == pytest.approx(900 - 2 * body["input_ms"])
    # The lab's reading prices the round trip as upload + the profile's download of the answer.
    lab_body = _select(api, lab, sla_ms=900, network_profile="lte", input_bytes=200_000, output_bytes=50_000).json()
    lte = PRESETS["lte"]
    assert lab_body["policy"] == "lab"
    assert lab_body["t_budget"] == pytest.approx(900 - lte.transfer_ms(200_000) - lte.transfer_ms(50_000))


def test_the_default_threshold_is_the_simulations_and_the_policy_is_the_labs(api: Any, lab: dict[str, Any]) -> None:
    from devicelab.selection import paper_scenario

    body = _select(api, lab, sla_ms=300, input_ms=10, seed=0).json()
    assert body["threshold_ms"] == paper_scenario().threshold_ms == 20.0
    assert body["policy"] == "lab" and body["warnings"] == []
    assert all(c["noisy"] is False for c in body["candidates"])
    refused = _select(api, lab, sla_ms=300, input_ms=10, policy="greedy")
    assert refused.status_code == 400 and "lab" in str(refused.json()["policy"])


def test_a_noisy_latency_profile_is_named_in_the_warnings(
    api: Any, lab: dict[str, Any], member: Any, make_network: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    shaky = make_network(member.team, tiny_graph("shakynet"))
    api.patch(f"/api/models/{shaky.pk}/", {"top1_accuracy": 70.0}, format="json")
    job = _measured(make_job, member.team, shaky, lab["device"], [20.0, 40.0, 25.0, 60.0])  # cv ~ 0.5
    body = _select(api, lab, sla_ms=300, input_ms=10, models=[lab["fast"].pk, shaky.pk], seed=0).json()
    assert next(c for c in body["candidates"] if c["name"] == "shakynet")["noisy"] is True
    assert len(body["warnings"]) == 1 and "shakynet" in body["warnings"][0] and f"#{job}" in body["warnings"][0]


@pytest.mark.parametrize(
    ("change", "field", "says"),
    [
        ({"sla_ms": -5, "input_ms": 1}, "sla_ms", ">= 0"),
        ({"sla_ms": 100}, "input_ms", "exactly one of input_ms and network_profile"),
        ({"sla_ms": 100, "input_ms": 5, "network_profile": "lte"}, "input_ms", "exactly one"),
        ({"sla_ms": 100, "network_profile": "moon"}, "network_profile", "campus_wifi"),
        ({"sla_ms": 100, "input_ms": 5, "colour": "red"}, "detail", "unknown field"),
        ({"sla_ms": 100, "input_ms": 5, "models": []}, "models", "at least one"),
        ({"sla_ms": 100, "input_ms": 5, "models": [999_999]}, "models", "no model [999999]"),
        ({"sla_ms": 100, "input_ms": 5, "device": 999_999}, "device", "no device"),
    ],
)
def test_bad_requests_say_what_is_wrong(
    api: Any, lab: dict[str, Any], change: dict[str, Any], field: str, says: str
) -> None:
    response = _select(api, lab, **change)
    assert response.status_code == 400, response.json()
    assert field in response.json() and says in str(response.json()[field]), response.json()


def test_a_model_without_accuracy_or_profile_is_refused_with_the_way_out(
    api: Any, lab: dict[str, Any], member: Any, make_network: Callable[..., Any]
) -> None:
    unscored = make_network(member.team, tiny_graph("unscored"))
    response = _select(api, lab, sla_ms=100, input_ms=5, models=[lab["fast"].pk, unscored.pk])
    assert response.status_code == 400 and f"PATCH /api/models/{unscored.pk}/" in str(response.json()["models"])
    api.patch(f"/api/models/{unscored.pk}/", {"top1_accuracy": 50}, format="json")
    response = _select(api, lab, sla_ms=100, input_ms=5, models=[lab["fast"].pk, unscored.pk])
    assert response.status_code == 400 and "never profiled" in str(response.json()["models"])


def test_another_teams_models_are_not_candidates(
    lab: dict[str, Any], make_member: Callable[..., Any], client_for: Callable[..., Any]
) -> None:
    stranger = client_for(make_member())
    response = _select(stranger, lab, sla_ms=100, input_ms=5)
    assert response.status_code == 400 and "no model" in str(response.json()["models"])


def test_a_model_named_like_a_zoo_model_takes_its_published_accuracy(
    api: Any, lab: dict[str, Any], member: Any, make_network: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    from devicelab.graph import zoo

    entry = zoo.entries()["mobilenet_v2"]
    named = make_network(member.team, tiny_graph("mobilenet_v2"))
    _measured(make_job, member.team, named, lab["device"], [20.0, 21.0, 22.0])
    body = _select(api, lab, sla_ms=300, input_ms=10, models=[lab["fast"].pk, named.pk], seed=0).json()
    zoo_candidate = next(c for c in body["candidates"] if c["name"] == "mobilenet_v2")
    assert zoo_candidate["accuracy"] == entry.top1 and entry.accuracy_source in zoo_candidate["accuracy_source"]
    api.patch(f"/api/models/{named.pk}/", {"top1_accuracy": 12.5}, format="json")  # its own number wins
    body = _select(api, lab, sla_ms=300, input_ms=10, models=[lab["fast"].pk, named.pk], seed=0).json()
    assert next(c for c in body["candidates"] if c["name"] == "mobilenet_v2")["accuracy"] == 12.5


def test_a_null_seed_and_a_zero_accuracy_are_refused(api: Any, lab: dict[str, Any]) -> None:
    assert "seed" in _select(api, lab, sla_ms=100, input_ms=5, seed=None).json()
    api.patch(f"/api/models/{lab['fast'].pk}/", {"top1_accuracy": 0.0}, format="json")
    response = _select(api, lab, sla_ms=100, input_ms=5)
    assert response.status_code == 400 and "0 %" in str(response.json()["models"])


def test_a_null_beside_the_other_input_time_is_a_mistake(api: Any, lab: dict[str, Any]) -> None:
    response = _select(api, lab, sla_ms=300, network_profile="lte", input_ms=None)
    assert response.status_code == 400 and "exactly one" in str(response.json()["input_ms"])


def _table(api: Any, lab: dict[str, Any], **body: Any) -> Any:
    return api.post(
        "/api/select/table/",
        {"device": lab["device"].pk, "models": [lab["fast"].pk, lab["slow"].pk], **body},
        format="json",
    )


def test_the_table_answers_per_model_and_policy_over_the_slas_with_an_on_device_option(
    api: Any, lab: dict[str, Any], member: Any, make_device: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    phone = make_device()
    _measured(make_job, member.team, lab["fast"], phone, [30.0, 30.5, 29.5, 30.0])
    _measured(make_job, member.team, lab["slow"], phone, [300.0, 305.0, 295.0, 300.0])
    slas = [20.0, 50.0, 200.0, 400.0]
    response = _table(api, lab, network_profile="prototype_wifi", sla_targets_ms=slas, on_device=phone.pk, seed=1)
    assert response.status_code == 200, response.json()
    body = response.json()
    rows = {(r["option"], r["kind"], r["sla_ms"]): r for r in body["rows"]}
    assert body["sla_targets_ms"] == slas and body["threshold_ms"] == 20.0 and body["policy"] == "lab"
    # Warm on the phone: fastnet takes 30 ms, so it misses 20 ms and meets 50 ms; no network to pay.
    assert rows[("fastnet", "on_device", 20.0)]["p_meet"] == 0.0
    assert rows[("fastnet", "on_device", 50.0)]["p_meet"] == 1.0
    assert rows[("slownet", "on_device", 400.0)]["p_meet"] == 1.0
    # Remote, the 63 ms WiFi round trip comes first: nothing meets 20 ms, few requests 50 ms.
    assert rows[("fastnet", "remote", 20.0)]["p_meet"] == 0.0
    assert rows[("fastnet", "remote", 50.0)]["p_meet"] < 0.1
    assert rows[("fastnet", "remote", 400.0)]["p_meet"] == 1.0
    slow_200 = rows[("slownet", "remote", 200.0)]
    assert slow_200["accuracy_within_sla"] == pytest.approx(80.0 * slow_200["p_meet"])
    assert {("cnnselect_lab", "policy"), ("greedy", "policy")} <= {(o, k) for o, k, _ in rows}
    # Loading the model per request prices each one with its measured cold start (load + first run).
    cold = _table(
        api,
        lab,
        network_profile="prototype_wifi",
        sla_targets_ms=slas,
        on_device=phone.pk,
        load_per_request=True,
    ).json()
    on_phone = {c["name"]: c for c in cold["on_device_candidates"]}
    assert on_phone["fastnet"]["cold_starts"] == 1 and on_phone["fastnet"]["mu_ms"] == pytest.approx(15.75)
    cold_rows = {(r["option"], r["kind"], r["sla_ms"]): r for r in cold["rows"]}
    assert cold_rows[("fastnet", "on_device", 20.0)]["p_meet"] == 1.0


def test_the_table_refuses_what_it_cannot_price(api: Any, lab: dict[str, Any], make_device: Callable[..., Any]) -> None:
    unmeasured = make_device()
    base = {"network_profile": "lte", "sla_targets_ms": [100.0]}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"sla_targets_ms": []}, "sla_targets_ms"),
        ({"sla_targets_ms": [100.0], "network_profile": None}, "network_profile"),
        ({"on_device": unmeasured.pk}, "on_device"),
        ({"load_per_request": True}, "load_per_request"),
        ({"requests": 5}, "requests"),
        ({"output_bytes": 2.5}, "output_bytes"),  # a count of bytes: 2.5 is a mistake, not 2
        ({"requests": 20_000, "sla_targets_ms": [float(t) for t in range(10, 130, 10)]}, "requests"),  # 240,000
    ]
    for change, field in cases:
        response = _table(api, lab, **{**base, **change})
        assert response.status_code == 400 and field in response.json(), (change, response.json())
    assert "never profiled" in str(_table(api, lab, **base, on_device=unmeasured.pk).json()["on_device"])

"""The predictor API: listing and requesting versions, and POST /api/predict/ on real predictors."""

from __future__ import annotations

import base64
import dataclasses
import time
from typing import Any

import pytest

from devicelab.graph import graph_to_dict
from devicelab.graph.nas import nb201
from tests.server.factories import tiny_graph
from tests.server.predictor_data import qed_predictor, ready_predictor

pytestmark = pytest.mark.django_db

CELL = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_3x3~1|skip_connect~2|"


@pytest.fixture(autouse=True)
def fresh_cache() -> None:
    """Rows get the same ids in every test (the database is rolled back): forget loaded ones."""
    from server.predictors.serving import clear_cache

    clear_cache()


@pytest.fixture
def phone() -> Any:
    from server.predictors.qed_import import ensure_qed_device

    return ensure_qed_device("s10")[0]


def _predict(api: Any, **body: Any) -> Any:
    return api.post("/api/predict/", body, format="json")


# -- POST /api/predict/ --------------------------------------------------------------------------


def test_a_batch_of_1000_nb201_architectures_is_answered(api: Any, phone: Any) -> None:
    from server.predictors.tables import build_nb201_table, nb201_index

    row = ready_predictor(phone)
    # 200 distinct cells, each asked five times (the table for 200 cells is quick to compute;
    # benchmarks/predict_api.py asks 1,000 distinct ones of the full table).
    cells = sorted(set(nb201.sample_strings(210, 5)))[:200]
    archs = [cells[(i * 7) % 200] for i in range(1000)]
    table = build_nb201_table(row, [nb201_index(nb201.parse(a)) for a in cells])
    assert table.computed == 200
    body = {"device": phone.pk, "architectures": [{"name": f"a{i}", "nb201": a} for i, a in enumerate(archs)]}
    _predict(api, device=phone.pk, architectures=body["architectures"][:1])  # loads the predictor once
    started = time.perf_counter()
    resp = api.post("/api/predict/", body, format="json")
    seconds = time.perf_counter() - started
    print(f"1000 NB201 architectures answered in {seconds:.3f} s")
    assert resp.status_code == 200, resp.content
    answer = resp.json()
    assert answer["predictor"] == {
        "id": row.pk,
        "version": row.version,
        "method": "lasso",
        "device": phone.pk,
        "scenario": row.scenario,
        "e2e_mape": row.e2e_mape,
        "n_test": row.n_test,
        "rankable": True,
        "rank_reason": "",
        "chosen_as": "best",
    }
    results = answer["results"]
    assert [r["name"] for r in results] == [f"a{i}" for i in range(1000)]
    assert all(r["latency_ms"] > 0 and r["kernels_ms"] > 0 for r in results)
    assert all(r["latency_ms"] == pytest.approx(r["kernels_ms"] + r["overhead_ms"]) for r in results)
    assert "kernels" not in results[0]
    assert seconds < 5  # the benchmark (benchmarks/predict_api.py) checks the 1 s target on a quiet machine
    # The table's answers are the predictor's own: the same as predicting the graphs directly.
    predictor = qed_predictor()
    direct = predictor.predict([nb201.from_string(a) for a in archs[:25]])
    for r, d in zip(results, direct):
        assert r["latency_ms"] == pytest.approx(d.latency_ms, rel=1e-9)
        # stored with the table, each with its kernels' time: the same share of this latency
        want = [w.to_dict(d.latency_ms) for w in d.warnings]
        assert [{**w, "kernels_ms": 0, "share": 0} for w in r["warnings"]] == [
            {**w, "kernels_ms": 0, "share": 0} for w in want
        ]
        assert [w["share"] for w in r["warnings"]] == pytest.approx([w["share"] for w in want], rel=1e-9)


def test_graph_onnx_and_nb201_with_breakdown(api: Any, phone: Any) -> None:
    from devicelab.graph.onnx import graph_to_onnx_bytes

    ready_predictor(phone)
    graph = tiny_graph("tiny-net", channels=16)
    onnx_b64 = base64.b64encode(graph_to_onnx_bytes(graph)).decode()
    archs = [
        {"name": "as-json", "graph": graph_to_dict(graph)},
        {"name": "as-onnx", "onnx_base64": onnx_b64},
        {"name": "cell", "nb201": CELL},
    ]
    resp = _predict(api, device=phone.pk, architectures=archs, breakdown=True)
    assert resp.status_code == 200, resp.content
    results = resp.json()["results"]
    assert [r["name"] for r in results] == ["as-json", "as-onnx", "cell"]
    for r in results:
        assert r["kernels"], r
        assert sum(k["latency_ms"] for k in r["kernels"]) == pytest.approx(r["kernels_ms"])
        assert r["kernels_ms"] + r["overhead_ms"] == pytest.approx(r["latency_ms"])
        assert all({"name", "type", "ops", "latency_ms", "model"} <= set(k) for k in r["kernels"])
    assert results[0]["latency_ms"] == pytest.approx(results[1]["latency_ms"])
    conv = next(k for k in results[0]["kernels"] if k["ops"][:1] == [0])
    assert conv["type"] in ("conv2d", "winograd") and conv["model"] == conv["type"]
    # The same cell without the breakdown (no table: the graph is built and predicted) agrees.
    plain = _predict(api, device=phone.pk, architectures=[{"nb201": CELL}]).json()["results"][0]
    assert plain["name"] == "architecture-0" and plain["latency_ms"] == pytest.approx(results[2]["latency_ms"])
    assert "kernels" not in plain


def test_a_large_batch_is_split_over_processes_with_the_same_answers(api: Any, phone: Any, settings: Any) -> None:
    from devicelab.graph import nas
    from server.predictors.serving import batch_pool

    ready_predictor(phone)
    archs = [{"name": f"g{i}", "graph": graph_to_dict(g)} for i, g in enumerate(nas.sample("synthetic", 30, 11))]
    archs += [{"name": "cell", "nb201": CELL}]
    settings.LATENCYLAB_PREDICT_PROCESSES = 1
    alone = _predict(api, device=phone.pk, architectures=archs, breakdown=True)
    assert alone.status_code == 200, alone.content
    settings.LATENCYLAB_PREDICT_PROCESSES = 2
    settings.LATENCYLAB_PREDICT_PARALLEL_MIN = 10
    before = batch_pool().chunks_answered["worker"]
    split = _predict(api, device=phone.pk, architectures=archs, breakdown=True)
    assert split.status_code == 200, split.content
    assert batch_pool().chunks_answered["worker"] == before + 1  # the second half came from a worker process
    for a, b in zip(alone.json()["results"], split.json()["results"]):
        assert a["name"] == b["name"] and a["latency_ms"] == pytest.approx(b["latency_ms"], rel=1e-12)
        assert [k["name"] for k in a["kernels"]] == [k["name"] for k in b["kernels"]]
    # A bad architecture in the worker's half is named as in one process.
    archs[25] = {"name": "broken", "graph": {"schema_version": 1, "name": "x"}}
    resp = _predict(api, device=phone.pk, architectures=archs)
    assert resp.status_code == 400
    assert [(e["index"], e["name"]) for e in resp.json()["errors"]] == [(25, "broken")]


def test_bad_architectures_are_named_by_index_and_reason(api: Any, phone: Any) -> None:
    ready_predictor(phone)
    archs = [
        {"name": "fine", "nb201": CELL},
        {"name": "typo", "nb201": "|nor_conv_3x3~0|+|bogus~0|none~1|+|none~0|none~1|none~2|"},
        "not an object",
        {"name": "two", "nb201": CELL, "graph": {}},
        {"name": "badgraph", "graph": {"schema_version": 1, "name": "x"}},
        {"name": "badb64", "onnx_base64": "%%%"},
        {"name": "notonnx", "onnx_base64": base64.b64encode(b"hello").decode()},
        {"name": "extra", "nb201": CELL, "colour": "red"},
    ]
    resp = _predict(api, device=phone.pk, architectures=archs)
    assert resp.status_code == 400, resp.content
    body = resp.json()
    assert "results" not in body and "7 architecture(s)" in body["detail"]
    errors = {e["index"]: e for e in body["errors"]}
    assert sorted(errors) == [1, 2, 3, 4, 5, 6, 7]
    assert errors[1]["name"] == "typo" and "bogus" in errors[1]["error"]
    assert "JSON object" in errors[2]["error"]
    assert "exactly one of" in errors[3]["error"]
    assert errors[4]["name"] == "badgraph" and errors[4]["error"].startswith("graph:")
    assert "base64" in errors[5]["error"]
    assert errors[6]["error"].startswith("onnx_base64:")
    assert "colour" in errors[7]["error"]


def test_a_malformed_body_is_400_and_the_collector_comes_back(api: Any, phone: Any) -> None:
    import gc

    ready_predictor(phone)
    assert gc.isenabled()
    resp = api.post("/api/predict/", b'{"device": 1, "architectures": [', content_type="application/json")
    assert resp.status_code == 400 and "JSON parse error" in resp.json()["detail"]
    assert gc.isenabled()  # paused while a batch is read and predicted, even one that fails
    resp = api.post("/api/predict/", b'{"device": NaN}', content_type="application/json")
    assert resp.status_code == 400
    ok = _predict(api, device=phone.pk, architectures=[{"nb201": CELL}])
    assert ok.status_code == 200 and gc.isenabled()


def test_repeated_operators_in_a_batch_are_each_checked(api: Any, phone: Any) -> None:
    """Operator checks are remembered per configuration; a bad operator is still named, and a
    good architecture sent twice gets the same answer twice."""
    ready_predictor(phone)
    good = graph_to_dict(tiny_graph("tiny-net", channels=16))
    bad = graph_to_dict(tiny_graph("tiny-bad", channels=16))
    bad["operators"][0]["attrs"] = {**bad["operators"][0]["attrs"], "kernel": [0, 0]}
    archs = [{"name": "a", "graph": good}, {"name": "b", "graph": good}]
    resp = _predict(api, device=phone.pk, architectures=archs)
    assert resp.status_code == 200, resp.content
    first, second = resp.json()["results"]
    assert first["latency_ms"] == second["latency_ms"]
    resp = _predict(api, device=phone.pk, architectures=[*archs, {"name": "c", "graph": bad}])
    assert resp.status_code == 400
    (error,) = resp.json()["errors"]
    assert error["index"] == 2 and error["name"] == "c"
    assert bad["operators"][0]["name"] in error["error"] and "kernel" in error["error"]


def test_kernels_without_a_model_fail_the_architecture(api: Any, phone: Any) -> None:
    p = qed_predictor()
    # A predictor trained on networks without fully connected layers.
    assert p.training_ranges is not None
    partial = dataclasses.replace(
        p,
        models={k: m for k, m in p.models.items() if k != "fully_connected"},
        training_ranges={k: r for k, r in p.training_ranges.items() if k != "fully_connected"},
    )
    row = ready_predictor(phone, predictor=partial)
    resp = _predict(api, predictor=row.pk, architectures=[{"name": "with-fc", "graph": graph_to_dict(tiny_graph())}])
    assert resp.status_code == 400, resp.content
    (error,) = resp.json()["errors"]
    assert error["index"] == 0 and error["name"] == "with-fc"
    assert "'fully_connected'" in error["error"] and "no model" in error["error"]


def test_the_best_ready_predictor_of_the_device_answers(api: Any, phone: Any) -> None:
    worse = ready_predictor(phone, e2e_mape=0.2)
    better = ready_predictor(phone, e2e_mape=0.05)
    rf = dataclasses.replace(qed_predictor(), method="rf")
    other_method = ready_predictor(phone, predictor=rf, e2e_mape=0.3)
    arch = [{"nb201": CELL}]
    assert _predict(api, device=phone.pk, architectures=arch).json()["predictor"]["id"] == better.pk
    assert _predict(api, device=phone.pk, method="rf", architectures=arch).json()["predictor"]["id"] == other_method.pk
    assert _predict(api, predictor=worse.pk, architectures=arch).json()["predictor"]["id"] == worse.pk


def test_no_ready_predictor_answers_409_and_unknown_ones_404(api: Any, phone: Any, make_device: Any) -> None:
    arch = [{"nb201": CELL}]
    cpu = make_device("cpu")
    resp = _predict(api, device=cpu.pk, architectures=arch)
    assert resp.status_code == 409 and "no ready predictor" in resp.json()["detail"]
    assert "POST /api/predictors/" in resp.json()["detail"]
    ready_predictor(phone)
    resp = _predict(api, device=phone.pk, method="mlp", architectures=arch)
    assert resp.status_code == 409 and "no ready mlp predictor" in resp.json()["detail"]
    queued = ready_predictor(phone, state="queued", artifact=None, artifact_sha256="")
    resp = _predict(api, predictor=queued.pk, architectures=arch)
    assert resp.status_code == 409 and f"predictor #{queued.pk} is queued" in resp.json()["detail"]
    assert _predict(api, device=999999, architectures=arch).status_code == 404
    assert _predict(api, predictor=999999, architectures=arch).status_code == 404
    assert _predict(api, architectures=arch).status_code == 400
    assert _predict(api, device=phone.pk, architectures=[]).status_code == 400


def test_a_predictor_not_ready_says_its_state(api: Any, phone: Any) -> None:
    row = ready_predictor(phone, state="failed", artifact=None, artifact_sha256="", failure_reason="too few networks")
    resp = _predict(api, predictor=row.pk, architectures=[{"nb201": CELL}])
    assert resp.status_code == 409
    assert "failed" in resp.json()["detail"] and "too few networks" in resp.json()["detail"]


def test_the_batch_size_has_a_limit(api: Any, phone: Any, settings: Any) -> None:
    ready_predictor(phone)
    settings.LATENCYLAB_PREDICT_MAX_BATCH = 3
    resp = _predict(api, device=phone.pk, architectures=[{"nb201": CELL}] * 4)
    assert resp.status_code == 400
    assert "LATENCYLAB_PREDICT_MAX_BATCH" in str(resp.json()["architectures"])


# -- predictors: team scoping, listing, requesting --------------------------------------------------


def test_another_teams_predictor_is_404(make_member: Any, client_for: Any, phone: Any) -> None:
    a, b = make_member(), make_member()
    api_a, api_b = client_for(a), client_for(b)
    mine = ready_predictor(phone, team=a.team)
    shared = ready_predictor(phone)
    assert api_a.get(f"/api/predictors/{mine.pk}/").status_code == 200
    assert api_b.get(f"/api/predictors/{mine.pk}/").status_code == 404
    assert api_b.get(f"/api/predictors/{shared.pk}/").status_code == 200
    arch = [{"nb201": CELL}]
    assert _predict(api_b, predictor=mine.pk, architectures=arch).status_code == 404
    assert _predict(api_a, predictor=mine.pk, architectures=arch).status_code == 200
    assert {p["id"] for p in api_b.get("/api/predictors/").json()["results"]} == {shared.pk}
    assert {p["id"] for p in api_a.get("/api/predictors/").json()["results"]} == {mine.pk, shared.pk}
    # B's default for the device is the shared one, even when A's is better.
    mine.e2e_mape = 0.001
    mine.save(update_fields=["e2e_mape"])
    assert _predict(api_b, device=phone.pk, architectures=arch).json()["predictor"]["id"] == shared.pk


def test_list_and_detail_show_the_evaluation(api: Any, phone: Any, make_device: Any) -> None:
    row = ready_predictor(phone)
    ready_predictor(phone, predictor=dataclasses.replace(qed_predictor(), method="rf"))
    listed = api.get("/api/predictors/", {"device": phone.pk, "method": "lasso"}).json()
    assert {"count", "next", "previous", "results"} <= set(listed) and listed["count"] == 1
    item = listed["results"][0]
    for key in ("id", "device", "device_name", "method", "version", "state", "scenario", "e2e_mape", "kernel_mape"):
        assert key in item
    assert {"n_train", "created_at", "trained_at", "failure_reason"} <= set(item)
    assert item["device_name"] == "s10" and item["kernel_mape"] == {"conv2d": 0.1} and "evaluation" not in item
    detail = api.get(f"/api/predictors/{row.pk}/").json()
    assert detail["evaluation"]["protocol"] == "test"
    assert detail["meta"]["training_data_sha256"] == row.artifact["meta"]["training_data_sha256"]
    assert "artifact" not in detail and detail["artifact_sha256"] == row.artifact_sha256
    assert api.get("/api/predictors/", {"device": make_device("cpu").pk}).json()["count"] == 0
    assert api.get("/api/predictors/", {"method": "svm"}).status_code == 400


def test_requesting_a_predictor_queues_it_or_says_why_not(api: Any, phone: Any, make_device: Any) -> None:
    from server.predictors.qed_import import import_qed

    cpu = make_device("cpu")
    resp = api.post("/api/predictors/", {"device": cpu.pk, "method": "gbdt"}, format="json")
    assert resp.status_code == 400 and "0 network(s)" in resp.json()["device"][0]
    assert api.post("/api/predictors/", {"device": 999999}, format="json").status_code == 400
    assert api.post("/api/predictors/", {"device": cpu.pk, "method": "svm"}, format="json").status_code == 400
    import_qed()
    resp = api.post("/api/predictors/", {"device": phone.pk, "method": "rf", "seed": 2}, format="json")
    assert resp.status_code == 202, resp.content
    body = resp.json()
    # A team member's predictor of a shared phone is the team's own: only lab admins make shared ones.
    assert body["state"] == "queued" and not body["shared"] and body["version"] == 1
    assert body["params"]["seed"] == 2 and body["scenario"]["backend"] == "tflite_gpu"


def test_only_a_lab_admin_trains_a_shared_predictor_and_versions_count_per_owner(
    make_member: Any, client_for: Any, phone: Any
) -> None:
    from server.predictors.qed_import import import_qed
    from server.predictors.services import request_predictor

    import_qed()
    a, b = make_member(), make_member()
    api_a, api_b = client_for(a), client_for(b)
    mine = api_a.post("/api/predictors/", {"device": phone.pk, "method": "lasso"}, format="json").json()
    again = api_a.post("/api/predictors/", {"device": phone.pk, "method": "lasso"}, format="json").json()
    theirs = api_b.post("/api/predictors/", {"device": phone.pk, "method": "lasso"}, format="json").json()
    assert (mine["shared"], mine["version"], again["version"]) == (False, 1, 2)
    assert (theirs["shared"], theirs["version"]) == (False, 1)  # A's versions are not B's to count
    assert {p["id"] for p in api_b.get("/api/predictors/").json()["results"]} == {theirs["id"]}
    assert api_b.get(f"/api/predictors/{mine['id']}/").status_code == 404

    a.user.is_staff = True
    a.user.save()
    shared = request_predictor(a.team, phone, method="lasso", user=a.user, enqueue=False)
    assert shared.is_shared and shared.version == 1
    assert request_predictor(None, phone, method="lasso", enqueue=False).version == 2  # the server's CLI


def test_a_team_predictor_never_answers_another_team(make_member: Any, client_for: Any, phone: Any) -> None:
    a, b = make_member(), make_member()
    ready_predictor(phone, team=a.team, e2e_mape=0.001)  # A's, however good, is A's alone
    arch = [{"name": "cell", "nb201": nb201.sample_strings(1, 0)[0]}]
    refused = _predict(client_for(b), device=phone.pk, architectures=arch)
    assert refused.status_code == 409, refused.content  # no predictor of its own or shared: nothing to answer with
    assert _predict(client_for(a), device=phone.pk, architectures=arch).status_code == 200


def test_a_loaded_predictor_is_kept_per_process_until_its_table_arrives(phone: Any, member: Any) -> None:
    from server.predictors.serving import loaded, resolve
    from server.predictors.tables import build_nb201_table

    row = ready_predictor(phone)
    first = loaded(resolve(member.team, device_id=phone.pk))
    assert loaded(resolve(member.team, device_id=phone.pk)) is first  # no second parse of the artifact
    assert first.nb201 is None
    build_nb201_table(row, [0])
    with_table = loaded(resolve(member.team, device_id=phone.pk))
    assert with_table is not first and with_table.nb201 is not None
    assert with_table.predictor.scenario == first.predictor.scenario


def test_overlapping_prediction_requests_do_not_hold_the_collector_off_for_ever(monkeypatch: Any) -> None:
    import gc
    import weakref

    from server.predictors import serving

    class Node:
        pass

    assert gc.isenabled()
    with serving.gc_paused():  # a long request holds the pause
        cycle = Node()
        cycle.me = cycle  # type: ignore[attr-defined]
        ref = weakref.ref(cycle)
        del cycle
        with serving.gc_paused():  # a short one, ending soon after the long one began
            pass
        assert ref() is not None and not gc.isenabled()  # no pass yet: the pause is young
        monkeypatch.setattr(serving, "_gc_last_pass", serving._gc_last_pass - serving.MAX_GC_PAUSE_SECONDS - 1)
        with serving.gc_paused():  # another ends while the long one still runs, long after the last pass
            pass
        assert ref() is None, "the cycle made during a long pause was never collected"
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_small_batch_leaves_the_collector_on_and_a_large_one_pauses_it() -> None:
    import gc

    from server.predictors import serving

    assert gc.isenabled()
    with serving.gc_paused(600):  # a few NB-201 cells
        assert gc.isenabled()
    with serving.gc_paused(serving.GC_PAUSE_MIN_BYTES):  # a batch of thousands
        assert not gc.isenabled()
    with serving.gc_paused(None):  # a chunked body of unknown length is taken for a large one
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_predict_endpoint_pauses_the_collector_by_the_body_s_length(
    member: Any, client_for: Any, phone: Any, monkeypatch: Any
) -> None:
    from server.predictors import serving

    seen: list[int | None] = []
    real = serving.gc_paused

    def spy(body_bytes: int | None = None) -> Any:
        seen.append(body_bytes)
        return real(body_bytes)

    monkeypatch.setattr("server.predictors.api.views.gc_paused", spy)
    ready_predictor(phone)
    arch = [{"name": "cell", "nb201": nb201.sample_strings(1, 0)[0]}]
    assert _predict(client_for(member), device=phone.pk, architectures=arch).status_code == 200
    assert len(seen) == 1 and seen[0] is not None and 0 < seen[0] < serving.GC_PAUSE_MIN_BYTES

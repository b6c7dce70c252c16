"""``Client.predict`` / ``Client.predictors`` and ``latencylab predict`` against a live server, with a
predictor trained on real host-CPU profiles that the client itself had a worker process measure."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from devicelab.graph import graph_to_json
from devicelab.graph.nas import nb201
from devicelab.graph.onnx import graph_to_onnx_bytes
from latencylab.cli import main
from latencylab.client import Client, ClientError
from tests.e2e.live_clients import LiveClients

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def connect(live_server: Any) -> Iterator[LiveClients]:
    """Factory: ``connect(token)`` -> a client of the live server; all closed at teardown."""
    clients = LiveClients(live_server.url)
    yield clients
    clients.close()


# Six training cells that use every NB-201 edge op, so the predictor has a model for each kernel.
TRAIN_CELLS = [
    "|nor_conv_3x3~0|+|nor_conv_1x1~0|avg_pool_3x3~1|+|skip_connect~0|none~1|nor_conv_3x3~2|",
    "|nor_conv_1x1~0|+|nor_conv_3x3~0|skip_connect~1|+|avg_pool_3x3~0|nor_conv_1x1~1|nor_conv_3x3~2|",
    "|avg_pool_3x3~0|+|nor_conv_3x3~0|nor_conv_1x1~1|+|nor_conv_3x3~0|skip_connect~1|none~2|",
    "|skip_connect~0|+|nor_conv_1x1~0|nor_conv_3x3~1|+|nor_conv_3x3~0|avg_pool_3x3~1|nor_conv_1x1~2|",
    "|nor_conv_3x3~0|+|avg_pool_3x3~0|nor_conv_3x3~1|+|nor_conv_1x1~0|nor_conv_3x3~1|skip_connect~2|",
    "|nor_conv_1x1~0|+|skip_connect~0|avg_pool_3x3~1|+|nor_conv_3x3~0|nor_conv_1x1~1|avg_pool_3x3~2|",
]
CELL = "|nor_conv_3x3~0|+|nor_conv_3x3~0|avg_pool_3x3~1|+|skip_connect~0|nor_conv_1x1~1|nor_conv_3x3~2|"
BAD_CELL = "|nor_conv_3x3~0|+|bogus_op~0|none~1|+|skip_connect~0|none~1|none~2|"
SETTINGS = {"runs": 3, "warmup_runs": 1, "threads": 1}


@dataclass
class Trained:
    """A client, the host CPU device row, and the id of its ready predictor."""

    lab: Client
    device: Any
    predictor_id: int
    token: str


@pytest.fixture
def trained(connect: Any, start_worker: Any, make_member: Any, settings: Any) -> Iterator[Trained]:
    """A client of a team with a ready Lasso predictor of the host CPU, trained on the team's real
    profiles of ``TRAIN_CELLS`` (measured through the client by a worker process)."""
    from server.predictors.services import request_predictor, run_training

    settings.LATENCYLAB_PREDICT_NB201_TABLE = False  # no trainer process here: predict through the graphs
    device = start_worker().device()
    member = make_member()
    lab = connect(member.key)
    jobs = [lab.profile(nb201.from_string(c, name=f"train{i}"), device.pk, SETTINGS) for i, c in enumerate(TRAIN_CELLS)]
    for job in jobs:
        job.wait(timeout=120, poll=0.1)
    row = request_predictor(member.team, device, method="lasso", search="fast", enqueue=False)
    row = run_training(row.pk)
    assert row is not None and row.state == "ready", row.failure_reason if row else None
    yield Trained(lab, device, row.pk, member.key)


def test_one_trained_predictor_answers_the_client_the_cli_and_the_docs_nas_loop(
    trained: Trained, tmp_path: Path, capsys: Any, monkeypatch: Any
) -> None:
    """The three checks share one predictor trained on real profiles (about 20 s to make): each is
    a function of its own below, run in turn."""
    predict_batches_of_every_kind_in_input_order(trained, tmp_path)
    predict_breakdown_refusals_and_the_cli(trained, capsys, tmp_path)
    the_nas_loop_of_the_docs_runs_as_written(trained, capsys, monkeypatch)


def predict_batches_of_every_kind_in_input_order(trained: Trained, tmp_path: Path) -> None:
    lab, device = trained.lab, trained.device

    listed = lab.predictors(device=device.name)
    assert [(p["id"], p["method"], p["state"]) for p in listed] == [(trained.predictor_id, "lasso", "ready")]
    assert listed[0]["e2e_mape"] >= 0 and listed[0]["n_train"] > 0
    assert lab.predictors(device=device.pk, method="gbdt") == []

    graph = nb201.from_string(CELL, name="as-graph")
    onnx_path = tmp_path / "as-onnx.onnx"
    onnx_path.write_bytes(graph_to_onnx_bytes(graph))
    json_path = tmp_path / "as-json.json"
    json_path.write_text(graph_to_json(nb201.from_string(CELL, name="as-json")))
    batch = [graph, CELL, str(onnx_path), json_path, {"name": "as-dict", "nb201": CELL}]
    out = lab.predict(batch, device=device.name)

    assert out.predictor["id"] == trained.predictor_id and out.predictor["method"] == "lasso"
    assert [r["name"] for r in out] == ["as-graph", CELL, "as-onnx", "as-json", "as-dict"]
    assert all(r["latency_ms"] > 0 for r in out)
    # The same network however it is sent: one prediction (ONNX goes through the importer).
    by_name = {r["name"]: r["latency_ms"] for r in out}
    assert by_name["as-graph"] == pytest.approx(by_name[CELL]) == pytest.approx(by_name["as-json"])
    assert by_name["as-dict"] == pytest.approx(by_name[CELL])
    assert by_name["as-onnx"] == pytest.approx(by_name["as-graph"], rel=0.05)

    # 1,001 cells go in two requests (1,000 + 1) and come back in input order.
    cells = nb201.sample_strings(1001, seed=3)
    posts: list[str] = []
    lab.session.hooks["response"].append(
        lambda r, *a, **k: posts.append(r.request.url) if "/predict/" in r.url else None
    )
    many = lab.predict([{"name": f"c{i}", "nb201": c} for i, c in enumerate(cells)], device=device.pk)
    assert len(posts) == 2
    assert [r["name"] for r in many] == [f"c{i}" for i in range(1001)]
    assert many.predictor["id"] == trained.predictor_id
    again = lab.predict(cells[:3], predictor=trained.predictor_id)
    # The same numbers, whichever path answered each request (the trainer's NB-201 table once it is
    # ready, or the graphs deduced and predicted in batches of another size, where the models'
    # vectorized arithmetic may round the last bit differently).
    assert [r["latency_ms"] for r in again] == pytest.approx([r["latency_ms"] for r in many[:3]], rel=1e-12)


def predict_breakdown_refusals_and_the_cli(trained: Trained, capsys: Any, tmp_path: Path) -> None:
    lab, device = trained.lab, trained.device

    (one,) = lab.predict([CELL], device=device.pk, breakdown=True)
    assert one["kernels"] and sum(k["latency_ms"] for k in one["kernels"]) == pytest.approx(one["kernels_ms"])
    assert one["latency_ms"] == pytest.approx(one["kernels_ms"] + one["overhead_ms"])
    assert any(k["type"].startswith("conv2d") for k in one["kernels"])
    covered = [i for k in one["kernels"] for i in k["ops"]]  # operator indices in the graph
    assert len(covered) == len(set(covered)) and set(covered) <= set(range(len(nb201.from_string(CELL).operators)))

    with pytest.raises(ClientError) as refused:
        lab.predict([CELL, CELL, CELL, BAD_CELL], device=device.pk, chunk_size=2)
    assert refused.value.status == 400
    assert [e["index"] for e in refused.value.errors] == [3]  # counted from the start of the whole batch
    assert "architecture 3" in refused.value.detail and "bogus_op" in refused.value.detail

    with pytest.raises(ClientError) as no_mlp:
        lab.predict([CELL], device=device.pk, method="mlp")
    assert no_mlp.value.status == 409 and "no ready mlp predictor" in no_mlp.value.detail
    with pytest.raises(ClientError) as unknown:
        lab.predict([CELL], predictor=987654)
    assert unknown.value.status == 404

    # The same through ``latencylab predict``.
    server = ["--url", lab.url, "--token", trained.token]
    json_path = tmp_path / "net.json"
    json_path.write_text(graph_to_json(nb201.from_string(CELL, name="file-net")))

    assert main(["predict", CELL, str(json_path), "--device", device.name, "--breakdown", *server]) == 0
    out, err = capsys.readouterr()
    assert f"predictor #{trained.predictor_id} v1 (lasso) of device #{device.pk}: test MAPE " in out
    assert "on 1 networks" in out  # six training cells: one held out
    # tested on one network, it is not rankable, and the only predictor of the device: it answers, and says so
    assert f"warning: predictor #{trained.predictor_id} is not rankable" in err
    assert "the device has no rankable predictor" in err
    assert "latency ms" in out and "file-net" in out and CELL in out
    assert "file-net: " in out and " kernels" in out  # the per-kernel table

    # A synthetic-space network runs kernel types (depthwise, hard-swish, ...) that this NB-201-trained
    # predictor has no model for: the whole batch is refused, naming that architecture.
    argv = ["predict", "--nas", "nb201:5:1", "--nas", "synthetic:1:0", "--device", str(device.pk), *server]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "architecture 5 (synthetic-0-0)" in err and "no model for" in err

    assert main(["predict", "--nas", "nb201:5:1", "--device", str(device.pk), "--json", *server]) == 0
    out, err = capsys.readouterr()
    body = json.loads(out)
    assert [r["name"] for r in body["results"]] == [f"nb201-1-{i}" for i in range(5)]
    assert body["predictor"]["id"] == trained.predictor_id and all(r["latency_ms"] > 0 for r in body["results"])
    assert body["predictor"]["rankable"] is False and body["predictor"]["chosen_as"] == "unranked"
    assert all(isinstance(r["warnings"], list) for r in body["results"]) and "is not rankable" in err

    assert main(["predict", CELL, BAD_CELL, "--device", device.name, *server]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "HTTP 400" in err and "architecture 1" in err and "bogus_op" in err
    assert main(["predict", CELL, "--device", device.name, "--method", "gbdt", *server]) == 1
    assert "HTTP 409" in capsys.readouterr().err


def the_nas_loop_of_the_docs_runs_as_written(trained: Trained, capsys: Any, monkeypatch: Any) -> None:
    """docs/client.md's NAS loop, with a smaller batch, against the live server and its predictor."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "client.md").read_text()
    code = doc.split("## A NAS loop", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    assert 'DEVICE = "my-cpu"' in code and "sample_strings(2000, seed=0)" in code
    code = code.replace('DEVICE = "my-cpu"', f"DEVICE = {trained.device.name!r}")
    code = code.replace("sample_strings(2000, seed=0)", "sample_strings(60, seed=0)")
    monkeypatch.setenv("LATENCYLAB_URL", trained.lab.url)
    monkeypatch.setenv("LATENCYLAB_TOKEN", trained.token)
    namespace: dict[str, Any] = {}
    try:
        exec(compile(code, "docs/client.md", "exec"), namespace)  # noqa: S102 - our own documentation
    finally:
        if "lab" in namespace:
            namespace["lab"].close()
    out = capsys.readouterr().out
    assert f"answered by {{'id': {trained.predictor_id}" in out
    assert "candidates are on the front" in out and "measured median" in out
    front = namespace["front"]
    assert front and all(a[0] <= b[0] and a[1] < b[1] for a, b in zip(front, front[1:]))
    assert namespace["result"]["e2e"]["n"] == 50

"""What the API client and its CLI refuse or convert before anything is sent: architectures in the
wire form, chunking, missing server settings, unreachable servers and bad command lines (exit 2)."""

from __future__ import annotations

import base64
import json
import socket
from pathlib import Path
from typing import Any

import pytest

from devicelab.graph import graph_from_dict, graph_to_json
from devicelab.graph.nas import nb201
from devicelab.graph.onnx import graph_to_onnx_bytes
from latencylab.cli import main
from latencylab.client import Client, ClientError, InputError, encode_architecture
from latencylab.client.architectures import chunks as batch_chunks
from tests.e2e.helpers import tiny_graph

CELL = nb201.sample_strings(1, 0)[0]


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_each_kind_of_architecture_takes_its_wire_form(tmp_path: Path) -> None:
    graph = tiny_graph("wire")
    onnx_path = tmp_path / "net.onnx"
    onnx_path.write_bytes(graph_to_onnx_bytes(graph))
    json_path = tmp_path / "other.json"
    json_path.write_text(graph_to_json(tiny_graph("from-file")))

    assert encode_architecture(CELL) == {"name": CELL, "nb201": CELL}
    as_graph = encode_architecture(graph)
    assert as_graph["name"] == "wire" and graph_from_dict(as_graph["graph"]).operators == graph.operators
    as_onnx = encode_architecture(onnx_path)
    assert as_onnx["name"] == "net" and base64.b64decode(as_onnx["onnx_base64"]) == onnx_path.read_bytes()
    assert encode_architecture(str(json_path))["name"] == "from-file"
    assert encode_architecture({"nb201": CELL}, 7) == {"name": "arch7", "nb201": CELL}
    assert encode_architecture({"name": "mine", "nb201": CELL}, 7)["name"] == "mine"
    assert encode_architecture(json.loads(graph_to_json(graph)))["graph"]["name"] == "wire"
    assert set(encode_architecture(onnx_path.read_bytes(), 3)) == {"name", "onnx_base64"}


def test_architectures_that_cannot_be_sent_name_the_problem(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"architecture 2: 'no/such.onnx' is neither an NB-201 cell string"):
        encode_architecture("no/such.onnx", 2)
    (tmp_path / "net.txt").write_text("x")
    with pytest.raises(InputError, match=r"unknown model file type '\.txt'"):
        encode_architecture(tmp_path / "net.txt")
    (tmp_path / "broken.json").write_text("{not json")
    with pytest.raises(InputError, match="broken.json: not a readable JSON file"):
        encode_architecture(tmp_path / "broken.json")
    with pytest.raises(InputError, match=r"architecture 0: a dict must hold one of"):
        encode_architecture({"layers": []})
    with pytest.raises(InputError, match="cannot send a float"):
        encode_architecture(1.5)

    lab = Client("http://127.0.0.1:1", "token")
    with pytest.raises(InputError, match="takes a list"):
        lab.predict(CELL, device=1)
    with pytest.raises(InputError, match="a device or a predictor"):
        lab.predict([CELL])
    with pytest.raises(InputError, match="cannot go with predictor"):
        lab.predict([CELL], predictor=3, method="gbdt")


def test_chunks_hold_at_most_the_item_and_byte_budget() -> None:
    items = [{"name": f"a{i}", "nb201": CELL} for i in range(2500)]
    chunks = list(batch_chunks(items, 1000, 10**9))
    assert [(off, len(c)) for off, c in chunks] == [(0, 1000), (1000, 1000), (2000, 500)]
    assert [x for _, c in chunks for x in c] == items
    one = len(json.dumps(items[0], separators=(",", ":")))
    small = list(batch_chunks(items[:10], 1000, 3 * one))
    assert [len(c) for _, c in small] == [3, 3, 3, 1]
    assert list(batch_chunks([], 1000, 100)) == []


def test_client_needs_a_url_and_a_token_and_names_an_unreachable_server(monkeypatch: Any) -> None:
    monkeypatch.delenv("LATENCYLAB_URL", raising=False)
    monkeypatch.delenv("LATENCYLAB_TOKEN", raising=False)
    with pytest.raises(InputError, match="no server URL"):
        Client()
    with pytest.raises(InputError, match="no API token"):
        Client("http://127.0.0.1:8000")
    with pytest.raises(InputError, match="must start with http"):
        Client("127.0.0.1:8000", "t")

    port = _closed_port()
    monkeypatch.setenv("LATENCYLAB_URL", f"http://127.0.0.1:{port}/")
    monkeypatch.setenv("LATENCYLAB_TOKEN", "t")
    with Client() as lab, pytest.raises(ClientError) as exc:
        lab.devices()
    assert exc.value.status is None
    assert str(exc.value).startswith(f"cannot connect to http://127.0.0.1:{port}/api/devices/")
    assert "Connection refused" in str(exc.value)


def test_cli_bad_input_exits_2_with_one_line(monkeypatch: Any, capsys: Any, tmp_path: Path) -> None:
    monkeypatch.delenv("LATENCYLAB_URL", raising=False)
    monkeypatch.delenv("LATENCYLAB_TOKEN", raising=False)
    cases = [
        (["profile", "missing.onnx", "--device", "cpu"], "MODEL: no such file 'missing.onnx'"),
        (["profile", "12", "--device", "cpu"], "no server URL"),
        (["profile", "12", "--device", "cpu", "--url", "http://x", "--token", "t", "--runs", "0"], "--runs"),
        (["predict", "--device", "cpu"], "nothing to predict"),
        (["predict", "--nas", "synthetic:ten", "--device", "cpu"], "expected SPACE:N"),
        (["predict", "--nas", "cifar:3", "--device", "cpu"], "unknown space 'cifar'"),
        (["predict", CELL], "give --device or --predictor"),
        (["predict", CELL, "--device", "cpu"], "no server URL"),
        (["predict", str(tmp_path / "gone.onnx"), "--device", "cpu", "--url", "http://x", "--token", "t"], "gone.onnx"),
    ]
    for argv, message in cases:
        assert main(argv) == 2, argv
        err = capsys.readouterr().err
        assert err.startswith("latencylab: error: ") and message in err, (argv, err)
        assert err.count("\n") == 1, err


def test_cli_unreachable_server_exits_1(capsys: Any) -> None:
    port = _closed_port()
    argv = ["predict", CELL, "--device", "3", "--url", f"http://127.0.0.1:{port}", "--token", "t"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert f"cannot connect to http://127.0.0.1:{port}/api/" in err and err.count("\n") == 1

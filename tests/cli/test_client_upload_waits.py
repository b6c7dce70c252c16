"""``Client.upload`` returns a model's id once the server parsed it: at once for a small upload,
after polling for a big one (answered ``parsing``); ``ModelFailed`` with the server's reason, and
``WaitTimeout`` when it takes longer than it was given. (Against a real server and trainer:
tests/e2e/test_big_upload_parsing.py.)"""

from __future__ import annotations

from typing import Any

import pytest

from latencylab.client import Client, ModelFailed, WaitTimeout
from latencylab.client import models as client_models


class FakeServer:
    """Answers ``Client._request``: the upload, then one model state per poll."""

    def __init__(self, states: list[str], reason: str = "") -> None:
        self.states = states
        self.reason = reason
        self.calls: list[tuple[str, str]] = []

    def __call__(self, method: str, path: str, **kwargs: Any) -> dict[str, Any]:
        self.calls.append((method, path))
        state = self.states.pop(0) if len(self.states) > 1 else self.states[0]
        return {"id": 7, "name": "big", "state": state, "failure_reason": self.reason if state == "failed" else ""}


@pytest.fixture
def lab(monkeypatch: Any) -> Client:
    monkeypatch.setattr(client_models.time, "sleep", lambda seconds: None)
    return Client("http://lab.invalid", "token")


def test_a_small_upload_is_not_polled(lab: Client, monkeypatch: Any) -> None:
    server = FakeServer(["ready"])
    monkeypatch.setattr(lab, "_request", server)
    assert lab.upload({"operators": [], "name": "n"}) == 7
    assert server.calls == [("POST", "models/")]


def test_a_big_upload_is_polled_until_ready(lab: Client, monkeypatch: Any) -> None:
    server = FakeServer(["parsing", "parsing", "parsing", "ready"])
    monkeypatch.setattr(lab, "_request", server)
    assert lab.upload(b"\x08\x07onnx bytes") == 7
    assert server.calls == [("POST", "models/")] + [("GET", "models/7/")] * 3


def test_a_failed_parse_raises_the_servers_reason(lab: Client, monkeypatch: Any) -> None:
    monkeypatch.setattr(lab, "_request", FakeServer(["parsing", "failed"], reason="node 'r12': unknown operator"))
    with pytest.raises(ModelFailed, match=r"model #7 \(big\) could not be parsed: node 'r12'") as exc:
        lab.upload(b"bytes")
    assert exc.value.model["state"] == "failed"


def test_a_parse_longer_than_the_timeout_raises(lab: Client, monkeypatch: Any) -> None:
    monkeypatch.setattr(lab, "_request", FakeServer(["parsing"]))
    with pytest.raises(WaitTimeout, match="still being parsed after 0 s"):
        lab.upload(b"bytes", timeout=0)

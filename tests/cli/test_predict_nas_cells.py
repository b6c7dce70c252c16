"""``latencylab predict --nas nb201:N`` sends the NB-201 cell strings, not graphs built on the
client: the server builds (or looks up) each cell, and answers as it would for the graphs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from devicelab.graph.nas import nb201
from latencylab.cli import main
from latencylab.client import Client
from tests.e2e.live_clients import wait_for_request_threads
from tests.server.predictor_data import ready_predictor

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def phone() -> Iterator[Any]:
    """The qed Galaxy S10 with a ready (shared) predictor; the serving cache starts empty."""
    from server.predictors.qed_import import ensure_qed_device
    from server.predictors.serving import clear_cache

    clear_cache()
    device = ensure_qed_device("s10")[0]
    ready_predictor(device)
    yield device
    clear_cache()


def test_nas_nb201_goes_as_cell_strings(
    live_server: Any, phone: Any, make_member: Any, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    member = make_member()
    server = ["--url", live_server.url, "--token", member.key]
    sent: list[dict[str, Any]] = []
    request = Client._request

    def recording(self: Client, method: str, path: str, **kwargs: Any) -> Any:
        if path == "predict/":
            sent.extend(kwargs["json"]["architectures"])
        return request(self, method, path, **kwargs)

    monkeypatch.setattr(Client, "_request", recording)
    try:
        assert main(["predict", "--nas", "nb201:20:3", "--device", str(phone.pk), "--json", *server]) == 0
        body = json.loads(capsys.readouterr().out)
        cells = nb201.sample_strings(20, 3)
        assert sent == [{"name": f"nb201-3-{i}", "nb201": cell} for i, cell in enumerate(cells)]
        assert [r["name"] for r in body["results"]] == [f"nb201-3-{i}" for i in range(20)]

        # The numbers the same graphs get when a client builds and sends them.
        with Client(live_server.url, member.key) as lab:
            as_graphs = lab.predict(nb201.sample(20, 3), device=phone.pk)
        assert [r["latency_ms"] for r in body["results"]] == pytest.approx([r["latency_ms"] for r in as_graphs])

        bad = "|nor_conv_3x3~0|+|bogus_op~0|none~1|+|skip_connect~0|none~1|none~2|"
        assert main(["predict", cells[0], bad, "--device", str(phone.pk), *server]) == 2
        err = capsys.readouterr().err
        assert "HTTP 400" in err and "architecture 1" in err and "bogus_op" in err
    finally:
        wait_for_request_threads()

"""A big upload is stored and answered at once (202, ``parsing``) and parsed by the trainer's
service: ``ready`` with the graph a small upload gets, or ``failed`` with the refusal a small
upload gets (node named) and its file removed. A job waits for ``ready``; the trainer's start
re-sends every parse still pending. (The real trainer process: tests/e2e/test_big_upload_parsing.py.)"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from server.networks.models import NetworkModel
from server.networks.services import parse_stored_model, resend_parsing_models
from tests.server.big_graphs import relu_chain_json

pytestmark = pytest.mark.django_db

INLINE_MAX = 4000  # bytes: a chain of 200 ReLUs (about 15 KB) is a big upload here


@pytest.fixture(autouse=True)
def small_inline_limit(settings: Any) -> None:
    settings.LATENCYLAB_PARSE_INLINE_MAX_BYTES = INLINE_MAX


@pytest.fixture
def sent() -> Any:
    """The parses sent to the trainer (the broker is not asked)."""
    with mock.patch("server.networks.services.send_model_parse") as send:
        yield send


def upload(api: Any, data: bytes, filename: str = "chain.json", **extra: Any) -> Any:
    return api.post("/api/models/", {"file": SimpleUploadedFile(filename, data), **extra}, format="multipart")


def test_a_big_upload_is_answered_at_once_and_its_parse_sent_on_commit(
    api: Any, sent: Any, django_capture_on_commit_callbacks: Any
) -> None:
    data = relu_chain_json(200)
    assert len(data) > INLINE_MAX
    with django_capture_on_commit_callbacks(execute=True):
        resp = upload(api, data, name="my chain")
    assert resp.status_code == 202, resp.content
    body = resp.json()
    assert (body["state"], body["name"], body["failure_reason"]) == ("parsing", "my chain", "")
    assert body["operators"] == [] and body["num_operators"] is None and body["summary"] is None
    sent.assert_called_once_with(body["id"])
    row = NetworkModel.objects.get(pk=body["id"])
    assert row.graph is None and row.filename == "chain.json" and row.size_bytes == len(data)
    assert row.file.read() == data
    assert api.get(f"/api/models/{row.pk}/").json()["state"] == "parsing"


def test_a_json_body_over_the_limit_is_parsed_later_too(api: Any, sent: Any) -> None:
    resp = api.post("/api/models/?name=body-chain", data=relu_chain_json(200), content_type="application/json")
    assert resp.status_code == 202, resp.content
    assert (resp.json()["state"], resp.json()["name"], resp.json()["format"]) == ("parsing", "body-chain", "json")


def test_the_parse_makes_it_ready_with_the_graph_a_small_upload_gets(api: Any, sent: Any, settings: Any) -> None:
    data = relu_chain_json(200, name="chain-200")
    pk = upload(api, data).json()["id"]
    row = parse_stored_model(pk)
    assert row is not None and row.state == "ready" and row.parsed_at is not None
    detail = api.get(f"/api/models/{pk}/").json()
    assert (detail["state"], detail["num_operators"]) == ("ready", 200)
    assert [r["name"] for r in detail["operators"]] == [f"r{i}" for i in range(1, 201)]
    # A second message for the same row does nothing.
    assert parse_stored_model(pk) is None

    settings.LATENCYLAB_PARSE_INLINE_MAX_BYTES = 10**9
    from server.accounts.services import create_user_with_token

    other, _ = create_user_with_token("sync-uploader", "sync-team")
    inline = NetworkModel.objects.get(pk=_sync_upload(other, data))
    assert inline.graph == NetworkModel.objects.get(pk=pk).graph
    assert inline.summary == NetworkModel.objects.get(pk=pk).summary


def _sync_upload(user: Any, data: bytes) -> int:
    from server.accounts.services import current_team
    from server.networks.services import receive_model

    model, created = receive_model(current_team(user), user, data, "chain.json")
    assert created and model.state == "ready"
    return int(model.pk)


def test_a_bad_big_upload_fails_with_the_words_of_a_synchronous_refusal(
    api: Any, sent: Any, settings: Any, django_capture_on_commit_callbacks: Any
) -> None:
    data = relu_chain_json(200, bad_at=150)
    pk = upload(api, data).json()["id"]
    stored = Path(NetworkModel.objects.get(pk=pk).file.path)
    assert stored.exists()
    with django_capture_on_commit_callbacks(execute=True):
        row = parse_stored_model(pk)
    assert row is not None and row.state == "failed"
    assert "'chain.json'" in row.failure_reason and "'r150'" in row.failure_reason
    assert "frobnicate" in row.failure_reason
    assert row.file.name == "" and not stored.exists(), "a failed parse removes the stored file"
    detail = api.get(f"/api/models/{pk}/").json()
    assert (detail["state"], detail["failure_reason"], detail["operators"]) == ("failed", row.failure_reason, [])

    # The same bytes parsed while the request waits are refused with the same words (and the
    # failed row makes way for them).
    settings.LATENCYLAB_PARSE_INLINE_MAX_BYTES = 10**9
    refused = upload(api, data)
    assert refused.status_code == 400
    assert refused.json()["detail"] == row.failure_reason
    assert refused.json()["error"]["node"] == "r150"
    assert not NetworkModel.objects.exists()


def test_the_same_big_bytes_again_are_the_same_model(api: Any, sent: Any) -> None:
    data = relu_chain_json(200)
    first, second = upload(api, data), upload(api, data, filename="again.json")
    assert (first.status_code, second.status_code) == (202, 200)
    assert first.json()["id"] == second.json()["id"] and NetworkModel.objects.count() == 1


def test_the_same_bytes_again_replace_a_failed_model(api: Any, sent: Any) -> None:
    data = relu_chain_json(200)
    pk = upload(api, data).json()["id"]
    NetworkModel.objects.filter(pk=pk).update(state="failed", failure_reason="the limits were lower then")
    again = upload(api, data)
    assert again.status_code == 202 and again.json()["id"] != pk
    assert list(NetworkModel.objects.values_list("state", flat=True)) == ["parsing"]


def test_a_job_waits_until_its_model_is_ready(api: Any, sent: Any, make_device: Callable[..., Any]) -> None:
    device = make_device()
    pk = upload(api, relu_chain_json(200)).json()["id"]
    refused = api.post("/api/jobs/", {"model": pk, "device": device.pk}, format="json")
    assert refused.status_code == 400, refused.content
    assert "still being parsed" in refused.json()["model"][0]

    NetworkModel.objects.filter(pk=pk).update(state="failed", failure_reason="node 'r1': too many operators")
    refused = api.post("/api/jobs/", {"model": pk, "device": device.pk}, format="json")
    assert refused.status_code == 400 and "could not be parsed: node 'r1'" in refused.json()["model"][0]


def test_the_trainer_start_resends_every_parse_still_pending(api: Any, sent: Any) -> None:
    parsing = upload(api, relu_chain_json(200)).json()["id"]
    parsed = upload(api, relu_chain_json(201)).json()["id"]
    parse_stored_model(parsed)
    sent.reset_mock()
    assert resend_parsing_models() == [parsing]
    sent.assert_called_once_with(parsing)


def test_a_broker_that_is_down_leaves_the_upload_parsing(api: Any, django_capture_on_commit_callbacks: Any) -> None:
    with (
        mock.patch("server.networks.services.send_model_parse", side_effect=ConnectionError("redis is down")),
        django_capture_on_commit_callbacks(execute=True),
    ):
        resp = upload(api, relu_chain_json(200))
    assert resp.status_code == 202
    assert NetworkModel.objects.get(pk=resp.json()["id"]).state == "parsing"


def test_deleting_a_model_deletes_its_file(api: Any, django_capture_on_commit_callbacks: Any) -> None:
    resp = upload(api, relu_chain_json(20))
    assert resp.status_code == 201
    path = Path(NetworkModel.objects.get(pk=resp.json()["id"]).file.path)
    assert path.exists()
    with django_capture_on_commit_callbacks(execute=True):
        NetworkModel.objects.filter(pk=resp.json()["id"]).delete()
    assert not path.exists()


def test_a_small_upload_is_still_parsed_while_the_request_waits(api: Any, sent: Any) -> None:
    resp = upload(api, relu_chain_json(20))
    assert resp.status_code == 201 and resp.json()["state"] == "ready" and len(resp.json()["operators"]) == 20
    sent.assert_not_called()


def test_a_graph_document_is_read_as_json_whatever_comes_first(api: Any, sent: Any) -> None:
    doc = json.loads(relu_chain_json(200))
    resp = upload(api, ("\n" * 10 + json.dumps(doc)).encode(), filename="model.bin")
    assert resp.status_code == 202 and resp.json()["format"] == "json"


def test_a_ready_model_always_has_its_graph(api: Any, sent: Any) -> None:
    from django.db import IntegrityError, transaction

    pk = upload(api, relu_chain_json(200)).json()["id"]
    for state in ("ready", "asleep"):
        with pytest.raises(IntegrityError) as refused, transaction.atomic():
            NetworkModel.objects.filter(pk=pk).update(state=state)
        name = "networkmodel_ready_has_graph" if state == "ready" else "networkmodel_state_valid"
        assert name in str(refused.value) or "CHECK constraint failed" in str(refused.value)


def test_a_parse_a_trainer_holds_is_neither_sent_again_nor_parsed_twice(api: Any, sent: Any) -> None:
    # A trainer took the parse (its lease is live): an idle trainer's resend and a duplicate
    # message leave it alone; the parse that ran counted one attempt and let go of the lease.
    from django.utils import timezone

    pk = upload(api, relu_chain_json(200)).json()["id"]
    NetworkModel.objects.filter(pk=pk).update(parse_attempts=1, parse_lease_until=timezone.now() + timedelta(minutes=1))
    sent.reset_mock()
    assert resend_parsing_models() == []
    assert parse_stored_model(pk) is None
    assert NetworkModel.objects.get(pk=pk).state == "parsing"

    NetworkModel.objects.filter(pk=pk).update(parse_attempts=0, parse_lease_until=None)
    row = parse_stored_model(pk)
    assert row is not None and row.state == "ready"
    assert NetworkModel.objects.filter(pk=pk, parse_attempts=1).exists()


def test_a_parse_whose_trainer_was_killed_is_sent_again_then_failed_past_its_attempts(
    api: Any, sent: Any, django_capture_on_commit_callbacks: Any
) -> None:
    from django.utils import timezone

    from server.networks.services import MAX_PARSE_ATTEMPTS, sweep_lost_parses

    pk = upload(api, relu_chain_json(200)).json()["id"]
    stored = NetworkModel.objects.get(pk=pk).file.name
    lapsed = timezone.now() - timedelta(seconds=1)
    NetworkModel.objects.filter(pk=pk).update(parse_attempts=1, parse_lease_until=lapsed)
    sent.reset_mock()
    assert sweep_lost_parses() == [pk]
    sent.assert_called_once_with(pk)
    row = NetworkModel.objects.get(pk=pk)
    assert (row.state, row.parse_attempts, row.parse_lease_until) == ("parsing", 1, None)
    assert sweep_lost_parses() == []  # done once

    NetworkModel.objects.filter(pk=pk).update(parse_attempts=MAX_PARSE_ATTEMPTS, parse_lease_until=lapsed)
    sent.reset_mock()
    with django_capture_on_commit_callbacks(execute=True):
        assert sweep_lost_parses() == [pk]
    sent.assert_not_called()
    row = NetworkModel.objects.get(pk=pk)
    assert row.state == "failed" and not row.file
    assert f"attempted {MAX_PARSE_ATTEMPTS} times (limit {MAX_PARSE_ATTEMPTS})" in row.failure_reason
    assert "the trainer stopped while parsing" in row.failure_reason
    assert not NetworkModel.file.field.storage.exists(stored)

"""The dashboard's upload refuses a body whose declared size is over the limit before reading it
(as the API does), with the API's words, next to the file field; CSRF is still checked for every
upload it reads."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from server.networks.models import NetworkModel
from tests.server.factories import graph_bytes

HUGE = 200 * 1024 * 1024


class UnreadableBody:
    """A request body that fails the test if anyone reads it."""

    read_calls = 0

    def read(self, *args: Any) -> bytes:
        UnreadableBody.read_calls += 1
        raise AssertionError("the 200 MB body was read before its size was checked")

    readline = read


@pytest.mark.django_db
def test_a_body_over_the_limit_is_refused_before_it_is_read(
    make_member: Callable, web_client: Callable, api: Any
) -> None:
    client = web_client(make_member())
    resp = client.generic(
        "POST",
        "/models/",
        CONTENT_TYPE="multipart/form-data; boundary=xyz",
        CONTENT_LENGTH=str(HUGE),
        **{"wsgi.input": UnreadableBody()},
    )
    assert UnreadableBody.read_calls == 0
    assert resp.status_code == 413
    [error] = resp.context["form"].errors["file"]
    assert error == f"the upload is {HUGE} bytes; the limit is {100 * 1024 * 1024} bytes (LATENCYLAB_MAX_UPLOAD_BYTES)"
    assert 'class="field-error"' in resp.content.decode() and not NetworkModel.objects.exists()

    # The API's words for the same declared size.
    answer = api.generic(
        "POST", "/api/models/", b"", content_type="multipart/form-data; boundary=xyz", CONTENT_LENGTH=str(HUGE)
    )
    assert answer.status_code == 413 and answer.json()["detail"] == error


@pytest.mark.django_db
def test_an_upload_it_reads_still_needs_the_csrf_token(make_member: Callable) -> None:
    me = make_member()
    client = Client(enforce_csrf_checks=True)
    client.force_login(me.user)
    resp = client.post("/models/", {"file": SimpleUploadedFile("net.json", graph_bytes())})
    assert resp.status_code == 403 and not NetworkModel.objects.exists()

    page = client.get("/models/")
    token = page.cookies["csrftoken"].value
    resp = client.post(
        "/models/", {"file": SimpleUploadedFile("net.json", graph_bytes()), "csrfmiddlewaretoken": token}
    )
    assert resp.status_code == 302 and NetworkModel.objects.filter(team=me.team).count() == 1


@pytest.mark.django_db
def test_signed_out_users_are_sent_to_log_in_before_any_size_check() -> None:
    resp = Client().generic("POST", "/models/", CONTENT_LENGTH=str(HUGE), **{"wsgi.input": UnreadableBody()})
    assert resp.status_code == 302 and "/accounts/login/" in resp["Location"]

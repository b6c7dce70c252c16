"""The admin adds a lab machine (its token shown once, in the message), lists it and revokes it."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from server.accounts.models import hash_token_key
from server.labs.models import LabMachine

pytestmark = pytest.mark.django_db


def test_adding_in_the_admin_shows_the_token_once(admin_client: Any, admin_user: Any) -> None:
    answer = admin_client.post("/admin/labs/labmachine/add/", {"name": "gpu-box"}, follow=True)
    assert answer.status_code == 200
    (message,) = [str(m) for m in answer.context["messages"] if "lab token" in str(m)]
    token = message.split("shown only now: ")[1].split()[0]
    lab = LabMachine.objects.get(name="gpu-box")
    assert lab.key_hash == hash_token_key(token) and lab.created_by == admin_user
    assert "--token " + token in message
    # The machine's page never shows it again.
    assert token not in admin_client.get(f"/admin/labs/labmachine/{lab.pk}/change/").content.decode()


def test_the_list_shows_machines_and_devices_and_revokes(
    admin_client: Any, add_lab: Callable[..., Any], make_device: Callable[..., Any]
) -> None:
    lab, _ = add_lab("rack")
    device = make_device(worker="rack#1", name="pixel-7")
    page = admin_client.get("/admin/labs/labmachine/")
    assert page.status_code == 200 and "rack" in page.content.decode() and "pixel-7 (online)" in page.content.decode()
    assert admin_client.get("/admin/labs/labmachine/", {"q": "rack"}).status_code == 200

    admin_client.post("/admin/labs/labmachine/", {"action": "revoke", "_selected_action": [lab.pk]}, follow=True)
    lab.refresh_from_db()
    device.refresh_from_db()
    assert lab.is_revoked and "revoked in the admin" in lab.revoked_reason
    assert device.offline_reason == "the lab token of machine 'rack' was revoked"


def test_machines_cannot_be_deleted_only_revoked(admin_client: Any, add_lab: Callable[..., Any]) -> None:
    lab, _ = add_lab("rack")
    assert admin_client.get(f"/admin/labs/labmachine/{lab.pk}/delete/").status_code == 403

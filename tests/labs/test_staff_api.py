"""The staff's API of lab machines: list, add (the token in that answer only), revoke; others get 403."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from server.devices.models import DeviceStatus
from server.labs.models import LabMachine

pytestmark = pytest.mark.django_db


def test_staff_add_a_machine_and_get_its_token_once(
    staff: Any, client_for: Callable[..., Any], lab_view: Callable[..., Any]
) -> None:
    api = client_for(staff)
    created = api.post("/api/labs/", {"name": "gpu-box"}, format="json")
    assert created.status_code == 201, created.content
    body = created.json()
    assert body["name"] == "gpu-box" and body["created_by"] == staff.user.username and not body["revoked"]
    assert lab_view(f"Lab {body['token']}").status_code == 200
    listed = api.get("/api/labs/").json()["results"]
    assert [m["name"] for m in listed] == ["gpu-box"] and "token" not in listed[0]
    assert "token" not in api.get(f"/api/labs/{body['id']}/").json()


def test_the_list_shows_last_call_address_and_devices(
    staff: Any,
    client_for: Callable[..., Any],
    add_lab: Callable[..., Any],
    make_device: Callable[..., Any],
    lab_view: Any,
) -> None:
    _, token = add_lab("rack")
    lab_view(f"Lab {token}", address="192.0.2.9")
    phone = make_device(kind="android", worker="rack#1", name="pixel")
    make_device(worker="elsewhere")
    (row,) = client_for(staff).get("/api/labs/").json()["results"]
    assert row["last_address"] == "192.0.2.9" and row["last_seen_at"] is not None
    assert [(d["id"], d["name"], d["worker"], d["status"]) for d in row["devices"]] == [
        (phone.pk, "pixel", "rack#1", "online")
    ]


def test_a_name_in_use_or_not_valid_is_400(staff: Any, client_for: Callable[..., Any], add_lab: Any) -> None:
    add_lab("rack")
    api = client_for(staff)
    taken = api.post("/api/labs/", {"name": "rack"}, format="json")
    assert taken.status_code == 400 and "already exists" in taken.json()["name"][0]
    bad = api.post("/api/labs/", {"name": "no spaces"}, format="json")
    assert bad.status_code == 400 and "letters, digits" in bad.json()["name"][0]
    assert api.post("/api/labs/", {"name": "x", "typo": 1}, format="json").status_code == 400


def test_staff_revoke_a_machine_and_its_devices_go_offline(
    staff: Any, client_for: Callable[..., Any], add_lab: Callable[..., Any], make_device: Callable[..., Any]
) -> None:
    lab, _ = add_lab("rack")
    device = make_device(worker="rack")
    answer = client_for(staff).post(f"/api/labs/{lab.pk}/revoke/", {"reason": "retired"}, format="json")
    assert answer.status_code == 200, answer.content
    assert answer.json()["revoked"] and answer.json()["revoked_reason"] == "retired"
    assert answer.json()["devices"][0]["status"] == DeviceStatus.OFFLINE
    device.refresh_from_db()
    assert device.offline_reason == "the lab token of machine 'rack' was revoked"
    # A body is optional.
    again = client_for(staff).post(f"/api/labs/{lab.pk}/revoke/")
    assert again.status_code == 200 and again.json()["revoked_reason"] == "retired"


def test_members_who_are_not_staff_get_403(member: Any, api: Any, add_lab: Callable[..., Any]) -> None:
    lab, _ = add_lab("rack")
    assert api.get("/api/labs/").status_code == 403
    assert api.post("/api/labs/", {"name": "mine"}, format="json").status_code == 403
    assert api.post(f"/api/labs/{lab.pk}/revoke/").status_code == 403
    assert not LabMachine.objects.filter(name="mine").exists() and not LabMachine.objects.revoked().exists()


def test_no_credentials_is_401(client: Any) -> None:
    assert client.get("/api/labs/").status_code == 401


def test_the_staff_endpoints_are_tagged_labs_in_the_schema(client: Any) -> None:
    schema = client.get("/api/schema/", HTTP_ACCEPT="application/json").json()
    operations = [op for path, item in schema["paths"].items() if path.startswith("/api/labs/") for op in item.values()]
    assert len(operations) == 4 and all(op["tags"] == ["labs"] for op in operations)

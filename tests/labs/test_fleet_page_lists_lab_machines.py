"""The overview's fleet shows the staff the lab machines: last call, address, devices, revoked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from server.labs.services import revoke_lab_machine

pytestmark = pytest.mark.django_db


def test_staff_see_each_machine_with_its_devices_and_state(
    staff: Any,
    web_client: Callable[..., Any],
    add_lab: Callable[..., Any],
    make_device: Callable[..., Any],
    lab_view: Callable[..., Any],
) -> None:
    _, token = add_lab("rack")
    lab_view(f"Lab {token}", address="192.0.2.44")
    make_device(kind="android", worker="rack#1", name="pixel-7")
    retired, _ = add_lab("old-box")
    make_device(worker="old-box", name="old-cpu")
    revoke_lab_machine(retired, reason="retired")

    resp = web_client(staff).get("/")
    assert resp.status_code == 200
    rows = {r.machine.name: r for r in resp.context["lab_machines"]}
    assert [d.name for d in rows["rack"].devices] == ["pixel-7"] and not rows["rack"].machine.is_revoked
    assert rows["old-box"].machine.is_revoked
    html = resp.content.decode()
    assert "Lab machines" in html and "192.0.2.44" in html and "just now" in html
    assert 'data-lab-machine="old-box"' in html and 'data-lab-state="revoked"' in html and "retired" in html
    assert "the lab token of machine &#x27;old-box&#x27; was revoked" in html


def test_members_who_are_not_staff_do_not_see_them(
    member: Any, web_client: Callable[..., Any], add_lab: Callable[..., Any]
) -> None:
    add_lab("rack")
    resp = web_client(member).get("/")
    assert resp.status_code == 200 and resp.context["lab_machines"] is None
    assert "Lab machines" not in resp.content.decode() and "rack" not in resp.content.decode()


def test_staff_with_no_machines_are_told_how_to_add_one(staff: Any, web_client: Callable[..., Any]) -> None:
    html = web_client(staff).get("/").content.decode()
    assert "No lab machine yet" in html and "latencylab lab add NAME" in html

"""A lab machine's calls note its last-seen time and address, at most one write per ~10 s."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from server.labs.models import LabMachine
from server.labs.services import CONTACT_RESOLUTION, record_contact

pytestmark = pytest.mark.django_db


def test_a_call_notes_when_and_from_where(add_lab: Callable[..., Any], lab_view: Callable[..., Any]) -> None:
    lab, token = add_lab()
    assert lab.last_seen_at is None
    assert lab_view(f"Lab {token}", address="192.0.2.7").status_code == 200
    lab.refresh_from_db()
    assert lab.last_address == "192.0.2.7" and lab.last_seen_at is not None


def test_calls_within_the_resolution_write_once_unless_the_address_changes(
    add_lab: Callable[..., Any], django_assert_num_queries: Any
) -> None:
    lab, _ = add_lab()
    now = timezone.now()
    assert record_contact(lab, "192.0.2.7", now=now)
    with django_assert_num_queries(0):
        assert not record_contact(lab, "192.0.2.7", now=now + timedelta(seconds=3))
    assert record_contact(lab, "192.0.2.8", now=now + timedelta(seconds=4))
    assert record_contact(lab, "192.0.2.8", now=now + timedelta(seconds=4) + CONTACT_RESOLUTION)
    stored = LabMachine.objects.get(pk=lab.pk)
    assert (stored.last_address, stored.last_seen_at) == ("192.0.2.8", now + timedelta(seconds=4) + CONTACT_RESOLUTION)


def test_a_stale_copy_in_another_process_does_not_write_again(add_lab: Callable[..., Any]) -> None:
    lab, _ = add_lab()
    other_process_copy = LabMachine.objects.get(pk=lab.pk)
    now = timezone.now()
    assert record_contact(lab, "192.0.2.7", now=now)
    assert not record_contact(other_process_copy, "192.0.2.7", now=now + timedelta(seconds=1))

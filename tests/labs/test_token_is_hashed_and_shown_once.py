"""A lab machine's token is returned once, stored only as its hash, and names are checked."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from server.accounts.models import hash_token_key
from server.labs.models import LAB_TOKEN_PREFIX, LabMachine
from server.labs.services import add_lab_machine, revoke_lab_machine


@pytest.mark.django_db
def test_the_token_is_stored_only_as_its_hash(add_lab: Callable[..., Any], lab_view: Callable[..., Any]) -> None:
    lab, token = add_lab("gpu-box-1")
    assert token.startswith(LAB_TOKEN_PREFIX) and len(token) > 40
    stored = LabMachine.objects.get(pk=lab.pk)
    assert stored.key_hash == hash_token_key(token)
    assert token not in [str(v) for v in LabMachine.objects.values_list().get(pk=lab.pk)]
    assert stored.created_at is not None and stored.revoked_at is None
    assert lab_view(f"Lab {token}").data == {"user": "lab:gpu-box-1", "lab": "gpu-box-1"}


@pytest.mark.django_db
def test_an_active_name_cannot_be_added_twice(add_lab: Callable[..., Any]) -> None:
    add_lab("phone-rack")
    with pytest.raises(ValidationError, match="already exists.*latencylab lab revoke phone-rack"):
        add_lab_machine("phone-rack")
    assert LabMachine.objects.filter(name="phone-rack").count() == 1


@pytest.mark.django_db
def test_a_revoked_name_gets_a_new_token_and_the_old_one_stays_dead(
    add_lab: Callable[..., Any], lab_view: Callable[..., Any]
) -> None:
    lab, old = add_lab("phone-rack")
    revoke_lab_machine(lab, reason="laptop stolen")
    again, new = add_lab_machine("phone-rack")
    assert again.pk == lab.pk and new != old
    assert not again.is_revoked and again.revoked_reason == ""
    assert lab_view(f"Lab {new}").status_code == 200
    old_answer = lab_view(f"Lab {old}")
    assert old_answer.status_code == 401 and old_answer.data["detail"] == "invalid lab token"


@pytest.mark.django_db
@pytest.mark.parametrize("name", ["", "   ", "two words", "slash/name", "x" * 201, "tab\tname", "name#1"])
def test_a_bad_name_is_refused_with_what_a_name_may_hold(name: str) -> None:
    with pytest.raises(ValidationError) as caught:
        add_lab_machine(name)
    assert "lab machine" in " ".join(caught.value.messages)
    assert not LabMachine.objects.exists()


@pytest.mark.django_db
def test_the_user_who_added_it_is_kept(make_member: Callable[..., Any]) -> None:
    admin = make_member()
    lab, _ = add_lab_machine("  host.lab-2_b  ", by=admin.user)
    assert lab.name == "host.lab-2_b" and lab.created_by == admin.user


@pytest.mark.django_db
def test_a_token_finds_its_machine_with_every_field_as_the_orm_reads_it(add_lab: Callable[..., Any]) -> None:
    lab, token = add_lab("gpu-box-3")
    other, _ = add_lab("gpu-box-4")
    revoke_lab_machine(lab, "moved to another building")
    found = LabMachine.objects.holding_key(token)
    expected = LabMachine.objects.get(pk=lab.pk)
    assert found is not None and found.pk == lab.pk != other.pk
    fields = [f.attname for f in LabMachine._meta.concrete_fields]
    assert {f: getattr(found, f) for f in fields} == {f: getattr(expected, f) for f in fields}
    assert found.is_revoked and found.revoked_at is not None and found.revoked_at.tzinfo is not None
    assert LabMachine.objects.holding_key(token + "x") is None

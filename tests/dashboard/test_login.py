"""Log-in: every page wants a signed-in user with a team; passwords come from the CLI."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

import pytest

PAGES = ["/", "/devices/1/", "/models/", "/models/1/", "/jobs/", "/jobs/new/", "/jobs/1/", "/jobs/1/result/",
         "/jobs/progress/?ids=1", "/compare/", "/compare/?a=1&b=2"]  # fmt: skip


@pytest.mark.django_db
@pytest.mark.parametrize("path", PAGES)
def test_anonymous_visitors_are_sent_to_the_log_in_page(client: Any, path: str) -> None:
    resp = client.get(path)
    assert resp.status_code == 302
    assert resp["Location"].startswith("/accounts/login/?next=")


@pytest.mark.django_db
def test_a_member_logs_in_with_a_password_and_lands_on_the_overview(client: Any, make_member: Callable) -> None:
    member = make_member()
    member.user.set_password("correct horse battery")
    member.user.save()
    page = client.get("/accounts/login/")
    assert page.status_code == 200 and b'name="password"' in page.content

    wrong = client.post("/accounts/login/", {"username": member.user.username, "password": "nope"})
    assert wrong.status_code == 200 and b"form-error" in wrong.content

    resp = client.post("/accounts/login/", {"username": member.user.username, "password": "correct horse battery"})
    assert resp.status_code == 302 and resp["Location"] == "/"
    overview = client.get("/")
    assert overview.status_code == 200
    assert member.team.name in overview.content.decode()


@pytest.mark.django_db
def test_log_out_ends_the_session(make_member: Callable, web_client: Callable) -> None:
    client = web_client(make_member())
    assert client.post("/accounts/logout/").status_code == 302
    assert client.get("/").status_code == 302


@pytest.mark.django_db
def test_a_user_without_a_team_is_told_how_to_get_one(client: Any, django_user_model: Any) -> None:
    user = django_user_model.objects.create_user("loner", password="a long enough password")
    client.force_login(user)
    resp = client.get("/")
    assert resp.status_code == 403
    assert b"latencylab user add loner --team" in resp.content


@pytest.mark.django_db
def test_user_add_with_password_sets_a_dashboard_password(monkeypatch: pytest.MonkeyPatch, client: Any) -> None:
    from latencylab.commands.service_cmds import add_user

    monkeypatch.setenv("LATENCYLAB_PASSWORD", "a fine long password")
    assert add_user(argparse.Namespace(name="carol", team="vision", password=True)) == 0
    resp = client.post("/accounts/login/", {"username": "carol", "password": "a fine long password"})
    assert resp.status_code == 302 and resp["Location"] == "/"
    assert client.get("/").status_code == 200


@pytest.mark.django_db
def test_user_add_refuses_a_short_password(
    monkeypatch: pytest.MonkeyPatch, capsys: Any, django_user_model: Any
) -> None:
    from latencylab.commands.service_cmds import add_user

    monkeypatch.setenv("LATENCYLAB_PASSWORD", "short")
    assert add_user(argparse.Namespace(name="dave", team="vision", password=True)) == 2
    assert "too short" in capsys.readouterr().err
    assert not django_user_model.objects.filter(username="dave").exists()

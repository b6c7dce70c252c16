"""``latencylab lab add|list|revoke`` on the server host."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from latencylab.cli import main
from server.accounts.models import hash_token_key
from server.labs.models import LabMachine

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _on_the_server_host(monkeypatch: Any, settings: Any) -> None:
    """The commands run on the server host, whose var folder is the test settings' (the guard of
    server-host commands finds no embedded database file in a fresh checkout without it)."""
    monkeypatch.setenv("LATENCYLAB_VAR_DIR", str(settings.VAR_DIR))


def test_add_prints_the_token_once_and_what_to_run_on_the_lab_machine(capsys: Any) -> None:
    assert main(["lab", "add", "gpu-box", "--url", "https://lab.example.org/"]) == 0
    out = capsys.readouterr().out
    token = out.split("token: ")[1].split()[0]
    assert LabMachine.objects.get(name="gpu-box").key_hash == hash_token_key(token)
    assert f"export LATENCYLAB_SERVER_URL=https://lab.example.org; export LATENCYLAB_LAB_TOKEN={token}" in out
    assert f"latencylab worker --server https://lab.example.org --token {token}" in out


def test_add_takes_the_url_from_the_environment(capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.setenv("LATENCYLAB_SERVER_URL", "http://10.1.2.3:8000")
    assert main(["lab", "add", "gpu-box"]) == 0
    assert "--server http://10.1.2.3:8000 --token" in capsys.readouterr().out


def test_add_refuses_a_name_in_use_or_not_valid(capsys: Any) -> None:
    assert main(["lab", "add", "gpu-box"]) == 0
    capsys.readouterr()
    assert main(["lab", "add", "gpu-box"]) == 2
    assert "already exists" in capsys.readouterr().err
    assert main(["lab", "add", "gpu box"]) == 2
    assert "not a valid lab machine name" in capsys.readouterr().err


def test_list_shows_machines_devices_and_revocations(
    capsys: Any, add_lab: Callable[..., Any], make_device: Callable[..., Any]
) -> None:
    assert main(["lab", "list"]) == 0
    assert "no lab machines yet" in capsys.readouterr().out
    add_lab("rack")
    make_device(worker="rack#1", name="pixel-7", kind="android")
    add_lab("spare")
    assert main(["lab", "revoke", "spare", "--reason", "unused"]) == 0
    capsys.readouterr()
    assert main(["lab", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rack = next(line for line in lines if line.startswith("rack"))
    spare = next(line for line in lines if line.startswith("spare"))
    assert "active" in rack and "pixel-7 (online)" in rack and "never" in rack
    assert "revoked" in spare and "unused" in spare


def test_revoke_takes_the_devices_offline_and_says_so(
    capsys: Any, add_lab: Callable[..., Any], make_device: Callable[..., Any]
) -> None:
    add_lab("rack")
    device = make_device(worker="rack")
    assert main(["lab", "revoke", "rack"]) == 0
    out = capsys.readouterr().out
    assert "lab machine rack revoked" in out and "1 device(s) taken offline" in out
    device.refresh_from_db()
    assert device.offline_reason == "the lab token of machine 'rack' was revoked"
    assert main(["lab", "revoke", "rack"]) == 0
    assert "was revoked already" in capsys.readouterr().out
    assert main(["lab", "revoke", "nope"]) == 2
    assert "no lab machine named 'nope'" in capsys.readouterr().err


def test_off_the_server_host_the_commands_refuse_to_open_a_database(capsys: Any, monkeypatch: Any) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    monkeypatch.setenv("LATENCYLAB_URL", "https://lab.example.org")
    assert main(["lab", "add", "gpu-box"]) == 2
    assert "runs on the server host" in capsys.readouterr().err
    assert not LabMachine.objects.exists()

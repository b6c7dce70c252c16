"""``latencylab predictors list`` on a client machine shows the server's predictors (its team's and
the shared ones), not an empty table of a database file of its own, and leaves its folder empty."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cli.server_lab import client_env, lab, run_latencylab
from tests.server import conftest as server_fixtures
from tests.server.predictor_data import ready_predictor

make_device = server_fixtures.make_device
media_in_tmp = server_fixtures.media_in_tmp
__all__ = ["lab", "make_device", "media_in_tmp"]

pytestmark = pytest.mark.django_db(transaction=True)


def test_list_shows_the_servers_predictors_and_creates_no_file(lab: dict[str, Any], tmp_path: Any) -> None:
    from server.predictors.qed_import import ensure_qed_device

    phone = ensure_qed_device("s10")[0]
    shared = ready_predictor(phone)
    mine = ready_predictor(lab["device"], lab["member"].team)
    cwd = tmp_path / "client"
    cwd.mkdir()

    done = run_latencylab("predictors", "list", env=client_env(lab["url"], lab["member"].key), cwd=cwd)

    assert done.returncode == 0, done.stderr
    rows = done.stdout.splitlines()
    assert rows[0].split()[:3] == ["id", "device", "method"]
    shared_row = next(r for r in rows if r.startswith(f"{shared.pk} "))
    assert " s10 " in shared_row and "(shared)" in shared_row and shared.scenario_key in shared_row
    mine_row = next(r for r in rows if r.startswith(f"{mine.pk} "))
    assert " host-test " in mine_row and " yours " in mine_row and " ready " in mine_row
    assert list(cwd.iterdir()) == []

    only = run_latencylab("predictors", "list", "--device", "s10", *lab["server"], env=client_env("", ""), cwd=cwd)
    assert only.returncode == 0, only.stderr
    assert f"\n{shared.pk} " in only.stdout and f"\n{mine.pk} " not in only.stdout
    assert list(cwd.iterdir()) == []


def test_without_a_server_it_says_what_to_set(tmp_path: Any) -> None:
    env = client_env("", "")
    del env["LATENCYLAB_URL"], env["LATENCYLAB_TOKEN"]
    done = run_latencylab("predictors", "list", env=env, cwd=tmp_path)
    assert done.returncode == 2
    assert "no server URL: pass url= or set LATENCYLAB_URL" in done.stderr
    assert list(tmp_path.iterdir()) == []

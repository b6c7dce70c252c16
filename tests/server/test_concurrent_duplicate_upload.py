"""Two uploads of the same bytes by one team at the same time: both get the one row, neither fails.

The unique (team, sha256) constraint (``networkmodel_team_sha256_unique``) decides which insert
wins; the other must answer the winner's row, as a training set built twice at once does for every
network it shares with the other build."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection

from tests.server.factories import graph_bytes, tiny_graph

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_concurrent_duplicate_upload_reuses_the_winners_row(member: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from server.networks import services
    from server.networks.models import NetworkModel

    data = graph_bytes(tiny_graph("raced"))
    both_parsed = threading.Barrier(2, timeout=30)
    parse = services._parse

    def parse_then_wait(*args: Any, **kwargs: Any) -> Any:
        # Both uploads have looked for an existing row (none) before either inserts.
        parsed = parse(*args, **kwargs)
        both_parsed.wait()
        return parsed

    monkeypatch.setattr(services, "_parse", parse_then_wait)
    answers: list[tuple[int, bool]] = []
    errors: list[BaseException] = []

    def upload() -> None:
        try:
            model, created = services.upload_model(member.team, None, data, "raced.json")
            answers.append((model.pk, created))
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            errors.append(exc)
        finally:
            connection.close()

    threads = [threading.Thread(target=upload) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)

    assert not errors, errors
    assert len({pk for pk, _ in answers}) == 1 and sorted(c for _, c in answers) == [False, True]
    assert NetworkModel.objects.filter(team=member.team).count() == 1

"""``latencylab trainset build`` sends a set over one request's bounds as several requests: the
synthetic samples split by index (``first_sample``), the zoo models between them, the probe graphs
with the first. The jobs are those one request would have queued, on the same networks, and the
client's bounds are the server's."""

from __future__ import annotations

from typing import Any

import pytest

from tests.cli.live_lab import run_cli
from tests.cli.server_lab import lab
from tests.server import conftest as server_fixtures

make_device = server_fixtures.make_device
media_in_tmp = server_fixtures.media_in_tmp
__all__ = ["lab", "make_device", "media_in_tmp"]


def test_the_clients_bounds_are_the_servers() -> None:
    from latencylab.client import training_data
    from server.predictors.api import serializers

    assert training_data.TRAINING_SET_MAX_SYNTHETIC == serializers.MAX_SYNTHETIC
    assert training_data.TRAINING_SET_MAX_JOBS == serializers.MAX_TRAINING_SET_JOBS


def test_parts_split_samples_by_index_and_zoo_models_between_requests() -> None:
    from devicelab.graph import zoo
    from latencylab.client.training_data import training_set_parts

    assert training_set_parts(10, ["mobilenet_v2"], 3) == [
        {"synthetic": 10, "first_sample": 0, "zoo": ["mobilenet_v2"]}
    ]
    parts = training_set_parts(900, ["all"], 3)  # the docs' set: 66 networks x 3 rounds per request
    assert all(p["synthetic"] <= 100 and (p["synthetic"] + len(p["zoo"])) * 3 <= 200 for p in parts)
    samples = [i for p in parts for i in range(p["first_sample"], p["first_sample"] + p["synthetic"])]
    assert samples == list(range(900))
    assert [n for p in parts for n in p["zoo"]] == sorted(zoo.entries())
    # Nothing to split (bad values): one request, which the server refuses with its reason.
    assert training_set_parts(5, [], 0) == [{"synthetic": 5, "first_sample": 0, "zoo": []}]


@pytest.mark.django_db(transaction=True)
def test_a_set_over_the_bounds_is_the_jobs_one_request_would_queue(
    lab: dict[str, Any], capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from devicelab.predict.cpu_probes import probe_graphs
    from latencylab.client import training_data
    from server.profiling.models import ProfilingJob

    # Small bounds, so that a small set is split as a big one would be: 2 networks x 2 rounds a request.
    monkeypatch.setattr(training_data, "TRAINING_SET_MAX_SYNTHETIC", 2)
    monkeypatch.setattr(training_data, "TRAINING_SET_MAX_JOBS", 4)
    requests: list[dict[str, Any]] = []
    send = training_data.TrainingDataMixin._request  # type: ignore[attr-defined]

    def recorded(self: Any, method: str, path: str, **kwargs: Any) -> Any:
        if path == "trainsets/":
            requests.append(kwargs["json"])
        return send(self, method, path, **kwargs)

    monkeypatch.setattr(training_data.TrainingDataMixin, "_request", recorded, raising=False)
    argv = ["trainset", "build", "--device", "host-test", "--synthetic", "5", "--zoo", "mobilenet_v2,squeezenet_1_1"]
    argv += ["--rounds", "2", "--runs", "3", "--json", *lab["server"]]

    rc, out, err = run_cli(argv, capsys)

    assert rc == 0, err
    parts = [(r["synthetic"], r["first_sample"], r["zoo"], r["probes"]) for r in requests]
    assert parts == [
        (2, 0, [], None),
        (2, 2, [], False),
        (1, 4, [], False),
        (0, 0, ["mobilenet_v2", "squeezenet_1_1"], False),
    ]
    n_probes = len(probe_graphs())
    jobs = ProfilingJob.objects.filter(device=lab["device"]).select_related("model")
    assert len(jobs) == 7 * 2 + n_probes
    names = [str(j.model.name) if j.model else "" for j in jobs]
    timed = {name for name in names if not name.startswith("probe-")}
    assert timed == {*(f"synthetic-0-{i}" for i in range(5)), "mobilenet_v2", "squeezenet_1_1"}
    assert '"networks": ' + str(7 + n_probes) in out

    # One request of the whole set (within the real bounds) finds every job there: the same networks.
    monkeypatch.undo()
    rc, out, err = run_cli(argv, capsys)
    assert rc == 0, err
    assert ProfilingJob.objects.filter(device=lab["device"]).count() == 7 * 2 + n_probes

"""A training set is uploaded and profiled through ordinary jobs; a re-run fills only the gaps."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from devicelab.predict.cpu_probes import probe_graphs

pytestmark = pytest.mark.django_db


def test_synthetic_samples_zoo_models_and_probes_become_jobs(member: Any, make_device: Any) -> None:
    from server.networks.models import NetworkModel
    from server.predictors.trainset import build_training_set
    from server.profiling.models import ProfilingJob

    device = make_device("cpu")
    seen: list[tuple[int, int]] = []
    built = build_training_set(
        member.team, device, 3, ["squeezenet_1_1"], threads=2, runs=4, seed=7, progress=lambda n, t: seen.append((n, t))
    )
    n_probes = len(probe_graphs())
    assert len(built.submitted) == 4 + n_probes and not built.reused
    assert seen[-1] == (4 + n_probes, 4 + n_probes)
    names = set(NetworkModel.objects.filter(team=member.team).values_list("name", flat=True))
    assert {"synthetic-7-0", "synthetic-7-1", "synthetic-7-2", "squeezenet_1_1"} <= names
    jobs = ProfilingJob.objects.filter(team=member.team, device=device)
    assert jobs.count() == 4 + n_probes and all(j.state == "queued" for j in jobs)
    timed = jobs.exclude(model__name__startswith="probe-")
    assert all(j.settings["threads"] == 2 and j.settings["runs"] == 4 for j in timed)
    assert all(j.settings["runs"] == 1 for j in jobs.filter(model__name__startswith="probe-"))

    again = build_training_set(member.team, device, 4, ["squeezenet_1_1"], threads=2, runs=4, seed=7)
    assert len(again.reused) == 4 + n_probes and [j.model.name for j in again.submitted] == ["synthetic-7-3"]
    other_threads = build_training_set(member.team, device, 1, [], threads=1, runs=4, seed=7, probes=False)
    assert len(other_threads.submitted) == 1


def test_rounds_queue_every_network_once_per_round(member: Any, make_device: Any) -> None:
    from server.predictors.trainset import build_training_set

    device = make_device("cpu")
    once = build_training_set(member.team, device, 2, [], runs=3, seed=5, probes=False)
    assert [j.model.name for j in once.submitted] == ["synthetic-5-0", "synthetic-5-1"]
    # two more rounds, the first round reused; jobs go out round by round
    three = build_training_set(member.team, device, 2, [], runs=3, seed=5, probes=False, rounds=3)
    assert [j.pk for j in three.reused] == [j.pk for j in once.submitted]
    assert [j.model.name for j in three.submitted] == ["synthetic-5-0", "synthetic-5-1"] * 2
    again = build_training_set(member.team, device, 2, [], runs=3, seed=5, probes=False, rounds=3)
    assert len(again.reused) == 6 and not again.submitted
    with pytest.raises(ValidationError, match="rounds must be >= 1"):
        build_training_set(member.team, device, 2, [], rounds=0)


def test_a_training_set_needs_a_lab_device_and_known_models(member: Any, make_device: Any) -> None:
    from server.predictors.qed_import import ensure_qed_device
    from server.predictors.trainset import build_training_set

    with pytest.raises(ValidationError, match="unknown zoo model 'resnet9000'"):
        build_training_set(member.team, make_device("cpu"), 1, ["resnet9000"])
    with pytest.raises(ValidationError, match="imported device"):
        build_training_set(member.team, ensure_qed_device("s10")[0], 1, [])

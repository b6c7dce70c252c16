"""settings.on_noise on the real CPU backend: the machine's load is read before the timed runs and
kept with the result; with another process spinning on the job's core, "fail" fails the job naming
the CV and that process, "rerun" measures again and keeps the steadiest attempt, "flag" keeps the
noisy result as it is."""

from __future__ import annotations

import os
import time

import pytest

from devicelab.backends import cpu
from devicelab.backends.base import BackendError, ProfileSettings
from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.measure.stats import HIGH_CV
from tests.devicelab.cpu_hog import spinning_on

pytestmark = pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="needs core pinning")


def net() -> Graph:
    b = GraphBuilder("noise-net", (1, 16, 56, 56))
    x = b.relu(b.conv(b.input, 32, 3))
    x = b.relu(b.conv(x, 32, 3))
    return b.build(b.fc(b.flatten(b.global_avg_pool(x)), 10))


def settings(**kw: object) -> ProfileSettings:
    core = sorted(os.sched_getaffinity(0))[0]
    return ProfileSettings.from_dict({"runs": 30, "warmup_runs": 2, "cores": [core], **kw})


def test_settings_name_the_policy() -> None:
    assert (ProfileSettings().on_noise, ProfileSettings().noise_reruns) == ("flag", 2)
    with pytest.raises(ValueError, match="on_noise 'retry' is not one of flag, rerun, fail"):
        ProfileSettings(on_noise="retry")
    with pytest.raises(ValueError, match="noise_reruns must be between 0 and 5, got 6"):
        ProfileSettings(noise_reruns=6)


def test_every_result_keeps_the_machines_load_and_its_policy() -> None:
    device = cpu.discover()[0]
    result = cpu.BACKEND.profile_job(device, net(), settings(runs=5))
    load = result.environment["machine_load"]
    assert load["cores_watched"] == [settings().cores[0]] and load["summary"]
    noise = result.environment["noise"]
    assert noise["policy"] == "flag" and noise["threshold_cv"] == HIGH_CV and len(noise["attempts"]) == 1


def test_on_a_shared_core_fail_names_the_cv_and_the_neighbour_and_rerun_keeps_the_steadiest() -> None:
    device = cpu.discover()[0]
    core = settings().cores[0]
    with spinning_on(core):
        time.sleep(0.3)
        with pytest.raises(BackendError) as failed:
            cpu.BACKEND.profile_job(device, net(), settings(on_noise="fail"))
        messages: list[str] = []
        rerun = cpu.BACKEND.profile_job(
            device, net(), settings(on_noise="rerun", noise_reruns=1), lambda f, m: messages.append(m)
        )
    text = str(failed.value)
    assert text.startswith("noisy measurement: end-to-end CV ") and f"above {HIGH_CV:.0%}" in text
    assert "other process" in text and "python" in text  # the spinning neighbour, by name
    noise = rerun.environment["noise"]
    assert noise["policy"] == "rerun" and noise["reruns_allowed"] == 1
    attempts = noise["attempts"]
    assert 1 <= len(attempts) <= 2 and all(a["machine_load"] for a in attempts)
    if len(attempts) == 2:  # the first was noisy: measured again, and the steadier one kept
        assert (
            attempts[0]["noisy"] and "noisy (CV" in " ".join(messages) and "measuring again (2/2)" in " ".join(messages)
        )
        kept = noise["kept"]
        assert rerun.e2e.cv == attempts[kept]["cv"] == min(a["cv"] for a in attempts) or not attempts[kept]["noisy"]

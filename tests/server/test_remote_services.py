"""``submit_remote_run`` checks what a remote run needs before queueing it, each refusal naming
its field: a ready image model of the team, an online CPU device that can serve with the threads
and cores asked, 1 to 8 profiles that are presets, the team's own or ``unshaped``, bounded
counts, and network time that fits the task's limit. What it queues is a complete ``RemoteSpec``
with the profiles frozen, which the worker reads back whole."""

from __future__ import annotations

from typing import Any

import pytest
from django.core.exceptions import ValidationError

from devicelab.backends.base import Capabilities
from devicelab.graph import GraphBuilder
from devicelab.remote.spec import RemoteSpec
from devicelab.selection.network_profiles import PRESETS
from server.profiling.models import ProfilingJob

pytestmark = pytest.mark.django_db


@pytest.fixture
def lab(member: Any, make_device: Any, make_network: Any) -> dict[str, Any]:
    """The team, an image model of it, and a CPU device that pins cores 0 and 1 and runs 2 threads."""
    caps = Capabilities(max_threads=2, pins_cores=True, cores=(0, 1), formats=("onnx",))
    return {
        "team": member.team,
        "model": make_network(member.team),
        "cpu": make_device("cpu", capabilities=caps),
    }


def _submit(lab: dict[str, Any], model: Any = None, device: Any = None, **raw: Any) -> ProfilingJob:
    from server.remote.services import submit_remote_run

    raw.setdefault("profiles", ["unshaped"])
    return submit_remote_run(lab["team"], model or lab["model"], device or lab["cpu"], raw)


def _refused(lab: dict[str, Any], field: str, **kwargs: Any) -> str:
    before = ProfilingJob.objects.count()
    with pytest.raises(ValidationError) as err:
        _submit(lab, **kwargs)
    assert list(err.value.message_dict) == [field], err.value.message_dict
    assert ProfilingJob.objects.count() == before
    return " ".join(err.value.message_dict[field])


def test_a_run_is_queued_as_a_complete_spec_the_worker_reads_back(lab: dict[str, Any]) -> None:
    job = _submit(lab, profiles=["campus_wifi", "unshaped"], requests=7, warmup=0, payload="tensor", seed=9)
    job.refresh_from_db()
    assert job.kind == "remote_scenario" and job.state == "queued" and job.model_id == lab["model"].pk
    spec = RemoteSpec.from_dict(job.settings)
    assert (
        spec.profiles == ("campus_wifi", "unshaped") and spec.network_profiles["campus_wifi"] == PRESETS["campus_wifi"]
    )
    assert spec.network_profiles["unshaped"] is None
    assert (spec.requests, spec.warmup, spec.payload, spec.seed, spec.threads, spec.cores) == (7, 0, "tensor", 9, 1, ())
    assert spec.as_dict() == job.settings
    pinned = _submit(lab, threads=2, cores=[1])
    assert (pinned.settings["threads"], pinned.settings["cores"]) == (2, [1])


@pytest.mark.parametrize(
    ("raw", "field", "says"),
    [
        ({"profiles": "lte"}, "profiles", "profiles must be a list, got 'lte'"),
        ({"profiles": []}, "profiles", "profiles must have at least 1 item(s), got 0"),
        ({"profiles": ["lte"] * 9}, "profiles", "profiles must have at most 8 items, got 9"),
        ({"profiles": ["lte", "unshaped", "lte"]}, "profiles", "profiles lists 'lte' twice"),
        ({"profiles": ["lte", "nowhere"]}, "profiles", "profiles[1]: no network profile 'nowhere'; known: campus_wifi"),
        ({"requests": 0}, "requests", "requests must be between 1 and 500, got 0"),
        ({"requests": True}, "requests", "requests must be an integer, got True"),
        ({"warmup": 101}, "warmup", "warmup must be between 0 and 100, got 101"),
        ({"seed": 2**32}, "seed", "seed must be between 0 and 4294967295"),
        ({"payload": "bmp"}, "payload", "payload 'bmp' is not one of jpeg, png, tensor"),
        ({"threads": 3}, "threads", "cannot serve with this threads: 3 is more than this device's 2"),
        ({"cores": [1, 5]}, "cores", "cores [5] do not exist on this device; its cores are [0, 1]"),
        ({"cores": "big"}, "cores", "cores must be a list, got 'big'"),
        ({"colour": "blue"}, "settings", "unknown key(s) ['colour']"),
    ],
)
def test_bad_runs_are_refused_naming_the_field(lab: dict[str, Any], raw: dict[str, Any], field: str, says: str) -> None:
    assert says in _refused(lab, field, **raw)


def test_the_model_must_be_a_ready_float_image_model_of_the_team(
    lab: dict[str, Any], make_member: Any, make_network: Any
) -> None:
    b = GraphBuilder("mlp", (1, 64))
    says = _refused(lab, "model", model=make_network(lab["team"], b.build(b.fc(b.input, 10))))
    assert "model 'mlp'" in says and "not an image model" in says and "N x 3 x H x W" in says
    gray = GraphBuilder("gray", (1, 1, 16, 16))
    says = _refused(lab, "model", model=make_network(lab["team"], gray.build(gray.conv(gray.input, 4, 3))))
    assert "is [1, 1, 16, 16], not an N x 3 x H x W image batch" in says
    assert "there is no model" in _refused(lab, "model", model=make_network(make_member().team))
    parsing = make_network(lab["team"])
    type(parsing).objects.filter(pk=parsing.pk).update(state="parsing")
    parsing.refresh_from_db()
    assert "is still being parsed" in _refused(lab, "model", model=parsing)


def test_the_device_must_be_an_online_cpu(lab: dict[str, Any], make_device: Any) -> None:
    from server.devices.models import DeviceStatus

    says = _refused(lab, "device", device=make_device("opencl"))
    assert "remote runs are served by a CPU device (the lab machine)" in says and "is a opencl device" in says
    type(lab["cpu"]).objects.filter(pk=lab["cpu"].pk).update(status=DeviceStatus.OFFLINE)
    assert "is offline" in _refused(lab, "device")


def test_profiles_are_presets_the_teams_own_or_unshaped(lab: dict[str, Any], make_member: Any) -> None:
    from server.selection.services import store_network_profile

    transfers = [[100_000, 0.120], [200_000, 0.210], [400_000, 0.430], [50_000, 0.070]]
    store_network_profile(lab["team"], {"name": "office", "transfers": transfers})
    store_network_profile(make_member().team, {"name": "elsewhere", "latency_ms": 5})
    job = _submit(lab, profiles=["office", "prototype_wifi"])
    office = job.settings["network_profiles"]["office"]
    assert office["kind"] == "recorded" and len(office["transfers"]) == 4  # replayed as recorded
    assert "profiles[0]: no network profile 'elsewhere'" in _refused(lab, "profiles", profiles=["elsewhere"])


def test_a_run_must_fit_half_the_tasks_time_limit(lab: dict[str, Any], settings: Any) -> None:
    from server.remote.services import network_estimate_s

    settings.LATENCYLAB_TASK_TIME_LIMIT = 400  # 200 s of network time at most
    job = _submit(lab, profiles=["cellular_hotspot", "lte"], requests=100, warmup=0)
    spec = RemoteSpec.from_dict(job.settings)
    one_request = network_estimate_s(RemoteSpec.from_dict({**job.settings, "requests": 1}), 162_893)
    assert network_estimate_s(spec, 162_893) == pytest.approx(100 * one_request)
    # a hotspot's and LTE's mean exchanges of a photo and its answer: 333 + 249 ms
    assert one_request == pytest.approx(0.582, abs=1e-3)
    says = _refused(lab, "requests", profiles=["cellular_hotspot", "lte"], requests=500, warmup=0)
    assert "500 requests (and 0 warm-up) under these profiles take about" in says
    assert "take about 291 s" in says and "a job may spend 200 s on it" in says and "162,893-byte jpeg payload" in says
    # unshaped takes no network time to speak of: as many requests as a run may have
    assert _submit(lab, profiles=["unshaped"], requests=500).settings["requests"] == 500

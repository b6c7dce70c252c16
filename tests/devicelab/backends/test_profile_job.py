"""Backend.profile_job: a profile, then the time breakdown of one inference: the client's stages
measured on this machine, the model's load and inference from the profile; on a phone the client's
stages are labelled host-side; a model that takes no image gets the reason, not numbers."""

from __future__ import annotations

from typing import Any

from devicelab.backends import cpu
from devicelab.backends.android import backend as android
from devicelab.backends.base import PROFILE_SHARE, ProfileSettings
from devicelab.graph.builder import GraphBuilder
from devicelab.graph.ir import Graph
from devicelab.measure.breakdown import STAGES
from tests.adb_double.server import AdbDouble
from tests.devicelab.backends.android.test_backend_on_double import QUICK, farm, pixel
from tests.devicelab.backends.android.test_backend_on_double import net as phone_net

__all__ = ["farm"]  # the adb double's fixture, shared with the Android backend's tests


def image_net() -> Graph:
    b = GraphBuilder("image-net", (1, 3, 32, 32))
    x = b.relu(b.conv(b.input, 8, 3, stride=2))
    return b.build(b.fc(b.flatten(b.global_avg_pool(x)), 1000))


def stages(d: dict[str, Any], pipeline: int = 0) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in d["pipelines"][pipeline]["stages"]}


def test_a_cpu_job_breaks_one_inference_down_stage_by_stage() -> None:
    device = cpu.discover()[0]
    events: list[tuple[float, str]] = []
    core = device.capabilities.cores[-1]  # type: ignore[union-attr]
    settings = ProfileSettings(runs=2, warmup_runs=1, cores=(core,))
    result = cpu.BACKEND.profile_job(device, image_net(), settings, lambda f, m: events.append((f, m)))
    assert result.breakdown is not None
    d = result.breakdown.as_dict()
    assert d["applicable"] and not d["host_side"] and (d["runs"], d["warmup_runs"]) == (2, 1)
    assert [p["image"]["format"] for p in d["pipelines"]] == ["jpeg", "png"]
    assert d["pipelines"][0]["image"]["width"] == 4032
    assert d["environment"]["affinity"] == [core]  # the client's stages ran where the model did
    for i in (0, 1):
        s = stages(d, i)
        assert list(s) == [n for n in STAGES if n != "preprocess"]  # a device's own preparation is a phone's
        assert s["model_load"]["samples_ms"] == [result.cold.load_ms]
        assert s["inference"]["samples_ms"] == result.samples_ms and s["inference"]["median_ms"] == result.e2e.median
        assert all(s[n]["n"] == 2 and min(s[n]["samples_ms"]) > 0 for n in ("decode", "resize_crop", "normalize"))
    # decoding a 12-megapixel photo takes real time (a constant image would not)
    assert stages(d)["decode"]["median_ms"] > 1.0
    fractions = [f for f, _ in events]
    assert fractions == sorted(fractions) and events[-1] == (1.0, "done")
    assert (PROFILE_SHARE, "model measured") in events
    pipeline = [f for f, m in events if m.startswith("image pipeline")]
    assert pipeline and all(PROFILE_SHARE < f <= 0.99 for f in pipeline)


def test_loads_come_from_the_fresh_cold_starts_when_there_are_some() -> None:
    result = cpu.BACKEND.profile_job(
        cpu.discover()[0], image_net(), ProfileSettings(runs=1, warmup_runs=0, cold_runs=2)
    )
    assert result.cold_starts is not None and result.breakdown is not None
    load = stages(result.breakdown.as_dict())["model_load"]
    assert load["samples_ms"] == [s.load_ms for s in result.cold_starts.samples]
    assert "2 cold starts, each in a fresh process" in load["source"]


def test_a_model_that_takes_no_image_has_no_breakdown_and_says_why() -> None:
    b = GraphBuilder("mlp", (1, 64))
    events: list[tuple[float, str]] = []
    result = cpu.BACKEND.profile_job(
        cpu.discover()[0],
        b.build(b.fc(b.relu(b.fc(b.input, 32)), 10)),
        ProfileSettings(runs=1, warmup_runs=0),
        lambda f, m: events.append((f, m)),
    )
    assert result.breakdown is not None and not result.breakdown.applicable
    assert result.breakdown.as_dict() == {
        "applicable": False,
        "reason": "the model's input 'input' is [1, 64], not an N x 3 x H x W image batch",
    }
    assert not any(m.startswith("image pipeline") for _, m in events) and events[-1] == (1.0, "done")


def test_on_a_phone_the_client_stages_are_host_side(farm: AdbDouble) -> None:
    info, _ = pixel(farm)
    settings = ProfileSettings.from_dict({**QUICK, "runs": 2, "warmup_runs": 1})
    result = android.BACKEND.profile_job(info, phone_net(), settings)
    d = result.breakdown.as_dict()  # type: ignore[union-attr]
    assert d["applicable"] and d["host_side"] and "not on the phone" in d["note"]
    s = stages(d)
    assert s["model_load"]["samples_ms"] == [result.cold.load_ms]  # the phone's init
    assert s["inference"]["samples_ms"] == [] and s["inference"]["mean_ms"] == result.e2e.mean  # aggregates
    assert {n: s[n]["where"] for n in s} == {
        "decode": "host",
        "resize_crop": "host",
        "normalize": "host",
        "model_load": "device",
        "inference": "device",
        "postprocess": "host",
    }


def test_settings_breakdown_false_skips_it_and_the_profile_ends_the_progress() -> None:
    device = cpu.discover()[0]
    events: list[tuple[float, str]] = []
    settings = ProfileSettings(runs=2, warmup_runs=1, breakdown=False)
    result = cpu.BACKEND.profile_job(device, image_net(), settings, lambda f, m: events.append((f, m)))
    assert result.breakdown is None and result.e2e.n == 2
    assert events[-1][0] == 1.0 and not any(m.startswith("image pipeline") for _, m in events)

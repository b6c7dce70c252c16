"""A profile job run by the task stores its time breakdown (an image model's) and its cold starts,
each in a fresh process when settings.cold_runs asks for more than one, with the real CPU backend."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from devicelab.graph import GraphBuilder
from workers.tasks import run_profiling_job


def test_the_job_stores_its_breakdown_and_cold_start_distribution(
    as_device_process: Any, make_job: Callable[..., Any]
) -> None:
    job = make_job({"runs": 2, "warmup_runs": 1, "cold_runs": 2, "breakdown": True})

    assert run_profiling_job(job.pk) == "succeeded"

    result = job.result
    cold = result.cold_starts
    assert (cold["source"], cold["n"]) == ("fresh-process", 2)
    assert all(s["load_ms"] > 0 and s["first_run_ms"] > 0 and s["import_ms"] > 0 for s in cold["samples"])
    assert result.load_ms > 0 and result.settings["cold_runs"] == 2
    bd = result.time_breakdown
    assert bd["applicable"] and bd["input"]["shape"] == [1, 3, 16, 16]
    for pipeline in bd["pipelines"]:
        stages = {s["name"]: s for s in pipeline["stages"]}
        assert stages["model_load"]["samples_ms"] == [s["load_ms"] for s in cold["samples"]]
        assert stages["inference"]["samples_ms"] == result.samples_ms
        assert stages["decode"]["n"] == 2 and stages["decode"]["median_ms"] > 0
    job.refresh_from_db()
    assert job.progress == 1.0


def test_a_job_of_a_model_without_an_image_stores_why(as_device_process: Any, make_job: Callable[..., Any]) -> None:
    b = GraphBuilder("mlp", (1, 64))
    job = make_job({"runs": 3, "warmup_runs": 1, "breakdown": True}, graph=b.build(b.fc(b.relu(b.fc(b.input, 32)), 10)))

    assert run_profiling_job(job.pk) == "succeeded"

    assert job.result.time_breakdown == {
        "applicable": False,
        "reason": "the model's input 'input' is [1, 64], not an N x 3 x H x W image batch",
    }
    assert job.result.cold_starts["source"] == "in-process" and job.result.cold_starts["n"] == 1


def test_a_job_that_asks_for_no_breakdown_has_none(as_device_process: Any, make_job: Callable[..., Any]) -> None:
    job = make_job({"runs": 2, "warmup_runs": 1, "breakdown": False})

    assert run_profiling_job(job.pk) == "succeeded"

    assert job.result.time_breakdown == {} and job.result.settings["breakdown"] is False
    job.refresh_from_db()
    assert job.progress == 1.0

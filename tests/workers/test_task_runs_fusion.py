"""A fusion sweep and a fusion plan are jobs: the task claims them on the worker's OpenCL device
(PoCL), runs them through devicelab, and stores their rows; bad requests are refused at
submission, naming the field."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from django.core.exceptions import ValidationError

from devicelab.graph import Graph, GraphBuilder, graph_to_json
from workers.tasks import run_profiling_job

_serial = itertools.count(1)

TINY_SPEC = {
    "sizes": [2],
    "kinds": ["C_1x1", "DWC_s1", "EW"],
    "representatives": 1,
    "identical_counts": [1, 2],
    "warmup": 1,
    "runs": 3,
}


def branchy(name: str) -> Graph:
    """Independent 1x1, depthwise and element-wise operators off one small input."""
    b = GraphBuilder(name, (1, 8, 9, 11))
    x = b.input
    return b.build([b.conv(x, 6, 1, name="pw"), b.dwconv(x, 3, name="dw"), b.relu(x, name="ew")])


@pytest.fixture
def upload(make_member: Callable[..., Any]) -> Callable[[Graph], Any]:
    team = make_member().team

    def make(graph: Graph) -> Any:
        from server.networks.services import upload_model

        model, _ = upload_model(team, None, graph_to_json(graph).encode(), f"{graph.name}.json")
        return model

    return make


def test_a_sweep_job_runs_on_the_opencl_device_and_stores_checked_rows(opencl_agent: Any, upload: Any) -> None:
    from server.devices.models import Device
    from server.fusion.models import FusionSweepResult
    from server.fusion.services import submit_fusion_sweep, sweep_rows

    model = upload(branchy(f"branchy{next(_serial)}"))
    device = Device.objects.get(pk=opencl_agent.devices[0].pk)
    job = submit_fusion_sweep(model.team, device, {"models": [model.pk], "spec": TINY_SPEC})
    assert job.kind == "fusion_sweep" and job.model is None and job.settings["spec"]["time_budget_s"] > 0

    assert run_profiling_job(job.pk) == "succeeded"

    job.refresh_from_db()
    assert job.state == "succeeded" and job.progress == 1.0
    sweep = FusionSweepResult.objects.get(job=job)
    assert sweep.networks == [model.name] and sweep.wave_size >= 1
    rows = list(sweep.rows.all())
    # three kinds, pairs with repetition: six combinations; figure 9 at N = 1, 2; two variants each
    combos = [r for r in rows if r.experiment == "combination"]
    assert len(combos) == 6 * 2
    assert {r.variant for r in rows} == {"rounded", "unrounded"}
    assert all(r.error == "" and r.correct is True and r.throughput > 0 for r in rows)
    assert all(
        r.data["sequential"]["device_samples_ms"] and len(r.data["fused"]["device_samples_ms"]) == 3 for r in rows
    )
    pairs = sweep_rows(sweep, kinds=["EW", "C_1x1"], variant="rounded")
    assert [r.kind_list for r in pairs] == [["C_1x1", "EW"]]
    assert {tuple(r.kind_list) for r in sweep_rows(sweep, contains=["DWC_s1"], experiment="combination")} == {
        ("C_1x1", "DWC_s1"),
        ("DWC_s1", "DWC_s1"),
        ("DWC_s1", "EW"),
    }
    # a second delivery of the same message finds the job done and stores nothing twice
    assert run_profiling_job(job.pk) == "not-queued"
    assert FusionSweepResult.objects.filter(job=job).count() == 1


def test_a_sweep_is_refused_on_a_device_that_is_not_opencl(
    make_member: Callable[..., Any], make_agent: Callable[..., Any]
) -> None:
    from server.devices.models import Device
    from server.fusion.services import submit_fusion_sweep

    agent = make_agent(f"test-cpu-worker-{next(_serial)}", kinds=["cpu"])
    agent.start()
    team = make_member().team
    with pytest.raises(ValidationError, match="fusion runs on OpenCL devices"):
        submit_fusion_sweep(team, Device.objects.get(pk=agent.devices[0].pk), {})


@pytest.mark.parametrize(
    ("raw", "field", "says"),
    [
        ({"zoo": ["no_such_net"]}, "zoo", "no zoo model named"),
        ({"models": [987654]}, "models", "there is no model"),
        ({"spec": {"sizes": [2], "speed": "max"}}, "spec", "unknown spec key"),
        ({"spec": {"kinds": ["C", "X"]}}, "spec", "spec.kinds[1] 'X' is not one of"),
        ({"spec": {"runs": 0}}, "spec", "spec.runs must be between 1 and"),
        ({"spec": {"time_budget_s": 10**9}}, "spec", "over what a job may take"),
        ({"precision": "int4"}, "precision", "precision must be one of"),
        ({"colour": "blue"}, "settings", "unknown key"),
        ({"zoo": [], "models": []}, "zoo", "at least one network"),
    ],
)
def test_bad_sweep_requests_name_the_field(opencl_agent: Any, upload: Any, raw: dict, field: str, says: str) -> None:
    from server.devices.models import Device
    from server.fusion.services import submit_fusion_sweep

    team = upload(branchy(f"b{next(_serial)}")).team
    with pytest.raises(ValidationError) as err:
        submit_fusion_sweep(team, Device.objects.get(pk=opencl_agent.devices[0].pk), raw)
    assert field in err.value.message_dict and says in " ".join(err.value.message_dict[field])


def test_the_default_sweep_takes_the_six_table1_networks(opencl_agent: Any, upload: Any) -> None:
    from devicelab.fusion.pool import table1_models
    from server.devices.models import Device
    from server.fusion.services import submit_fusion_sweep

    team = upload(branchy(f"b{next(_serial)}")).team
    job = submit_fusion_sweep(team, Device.objects.get(pk=opencl_agent.devices[0].pk), {})
    assert job.settings["zoo"] == table1_models() and len(job.settings["zoo"]) == 6
    assert job.settings["spec"]["sizes"] == [2, 3]
    assert job.title == "fusion sweep of 6 networks"


def test_a_sweep_over_a_deleted_model_fails_saying_so(opencl_agent: Any, upload: Any) -> None:
    from server.devices.models import Device
    from server.fusion.services import submit_fusion_sweep
    from server.networks.models import NetworkModel

    model = upload(branchy(f"gone{next(_serial)}"))
    job = submit_fusion_sweep(model.team, Device.objects.get(pk=opencl_agent.devices[0].pk), {"models": [model.pk]})
    NetworkModel.objects.filter(pk=model.pk).delete()

    # the server finds it out at the claim, where it gathers the networks: the job fails there
    assert run_profiling_job(job.pk) == "not-queued"
    job.refresh_from_db()
    assert job.state == "failed" and job.attempts == 1
    assert f"model #{model.pk} was deleted after the job was queued" in job.failure_reason


def test_a_plan_job_runs_two_networks_together_and_stores_checked_strategies(opencl_agent: Any, upload: Any) -> None:
    from server.devices.models import Device
    from server.fusion.models import FusionPlanResult
    from server.fusion.services import submit_fusion_plan

    model = upload(branchy(f"plan{next(_serial)}"))
    device = Device.objects.get(pk=opencl_agent.devices[0].pk)
    job = submit_fusion_plan(
        model.team,
        device,
        {"zoo": [], "models": [model.pk, model.pk], "options": {"runs": 3, "warmup": 1}, "sweep": False},
    )
    assert job.kind == "fusion_plan" and job.settings["sweep"] is None

    assert run_profiling_job(job.pk) == "succeeded", job.failure_reason

    plan = FusionPlanResult.objects.get(job=job)
    assert plan.networks == [model.name, f"{model.name}#2"]
    assert plan.correct is True
    assert plan.sequential_ms > 0 and plan.plan_ms > 0 and plan.fuse_all_ms > 0
    launches = plan.data["launches"]
    # six kernels in all; fusing everything possible launches fewer than one per kernel
    assert launches["sequential"] == 6 and launches["fuse_all"] < 6


def test_rows_of_a_second_layout_are_stored_under_their_own_variant() -> None:
    from server.fusion.services import stored_variant

    assert stored_variant({"variant": "rounded", "requested_layout": "auto"}) == "rounded"
    assert stored_variant({"variant": "unrounded"}) == "unrounded"  # rows from before layouts
    assert stored_variant({"variant": "rounded", "requested_layout": "paper"}) == "paper rounded"


def test_a_plan_runs_in_the_precision_it_asked_for(opencl_agent: Any, upload: Any) -> None:
    """fp16 is honoured, not silently run in fp32: where the device has no cl_khr_fp16 (PoCL on a
    CPU) the job fails saying so; where it has, the stored comparison says fp16."""
    from server.devices.models import Device
    from server.fusion.models import FusionPlanResult
    from server.fusion.services import submit_fusion_plan

    model = upload(branchy(f"half{next(_serial)}"))
    device = Device.objects.get(pk=opencl_agent.devices[0].pk)
    job = submit_fusion_plan(
        model.team,
        device,
        {"zoo": [], "models": [model.pk], "precision": "fp16", "options": {"runs": 2, "warmup": 1}, "sweep": False},
    )
    outcome = run_profiling_job(job.pk)
    job.refresh_from_db()
    if outcome == "failed":
        assert "does not support fp16" in job.failure_reason
    else:
        assert outcome == "succeeded" and FusionPlanResult.objects.get(job=job).data["precision"] == "fp16"


def test_a_sweep_of_two_layouts_keeps_them_apart_and_plans_read_the_default_one(opencl_agent: Any, upload: Any) -> None:
    from server.devices.models import Device
    from server.fusion.models import FusionSweepResult
    from server.fusion.services import submit_fusion_plan, submit_fusion_sweep, sweep_rows_for_plan

    model = upload(branchy(f"layouts{next(_serial)}"))
    device = Device.objects.get(pk=opencl_agent.devices[0].pk)
    spec = {**TINY_SPEC, "kinds": ["C_1x1", "EW"], "identical_counts": [], "layouts": ["auto", "paper"]}
    sweep_job = submit_fusion_sweep(model.team, device, {"models": [model.pk], "spec": spec})
    assert run_profiling_job(sweep_job.pk) == "succeeded"

    rows = FusionSweepResult.objects.get(job=sweep_job).rows.all()
    assert {r.variant for r in rows} == {"rounded", "unrounded", "paper rounded", "paper unrounded"}
    assert {r.layout for r in rows if r.variant.startswith("paper")} == {"paper"}
    plan_job = submit_fusion_plan(model.team, device, {"zoo": [], "models": [model.pk], "sweep": sweep_job.pk})
    given = sweep_rows_for_plan(plan_job)
    assert given and len(given) == len([r for r in rows if not r.variant.startswith("paper")])
    assert {row["requested_layout"] for row in given} == {"auto"}

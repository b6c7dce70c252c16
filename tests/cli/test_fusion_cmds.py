"""``latencylab fusion sweep|rows|show|plan`` and the Python client's fusion methods against a live
server: the flags reach the server as a sweep's networks and spec (zoo names and model ids mixed
in ``--models``), ``--wait`` shows the summary once the sweep is stored, ``rows`` prints the
filtered table, ``plan`` queues a plan with its options, refusals are one line on stderr with
exit 2, and the client waits, follows row pages and raises the worker's failure reason.

This test stands in for the device's worker: it claims the job and stores a sweep built from
devicelab's dataclasses through the services (tests/e2e/test_fusion_sweep.py runs a real one)."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from latencylab.cli import main
from latencylab.commands import fusion_cmds
from tests.cli.live_lab import run_cli as _run
from tests.e2e.live_clients import wait_for_request_threads
from tests.server import conftest as server_fixtures
from tests.server.fusion_api_factories import finish_sweep
from tests.waiting import wait_for

make_device = server_fixtures.make_device
make_network = server_fixtures.make_network
media_in_tmp = server_fixtures.media_in_tmp

pytestmark = pytest.mark.django_db(transaction=True)


def test_models_mix_zoo_names_and_ids_and_bad_kinds_are_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert fusion_cmds._networks_argument("mobilenet_v2, 7,squeezenet_1_0") == {
        "zoo": ["mobilenet_v2", "squeezenet_1_0"],
        "models": [7],
    }
    with pytest.raises(SystemExit) as exc:
        main(["fusion", "sweep", "--device", "x", "--kinds", "C,Q"])
    assert exc.value.code == 2 and "unknown kinds ['Q']" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["fusion", "plan", "--device", "x", "--sweep", "latest"])
    assert "neither a sweep id nor 'none'" in capsys.readouterr().err


@pytest.fixture
def lab(live_server: Any, make_member: Callable[..., Any], make_device: Callable[..., Any]) -> Iterator[dict[str, Any]]:
    """A member, an online OpenCL device named pocl-test, and the CLI's server arguments."""
    member = make_member()
    device = make_device("opencl", name="pocl-test")
    yield {"member": member, "device": device, "server": ["--url", live_server.url, "--token", member.key]}
    wait_for_request_threads()


def test_sweep_sends_its_flags_waits_and_prints_the_summary_then_rows_and_show(
    lab: dict[str, Any], make_network: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from server.profiling.models import ProfilingJob

    model = make_network(lab["member"].team)
    argv = ["fusion", "sweep", "--device", "pocl-test", "--models", f"mobilenet_v2_0.5,{model.pk}"]
    argv += ["--sizes", "2", "--kinds", "EW,C_1x1,DWC_s1", "--runs", "3", "--warmup", "1", "--seed", "5"]
    argv += ["--max-combinations", "4", "--time-budget", "60", "--no-identical", "--wait", "--timeout", "120"]
    outcome: dict[str, int] = {}
    cli = threading.Thread(target=lambda: outcome.update(rc=main(argv + lab["server"])))
    cli.start()
    try:
        job = wait_for(lambda: ProfilingJob.objects.filter(device=lab["device"]).first(), what="the sweep's job")
        assert job.kind == "fusion_sweep"
        assert (job.settings["zoo"], job.settings["models"]) == (["mobilenet_v2_0.5"], [model.pk])
        spec = job.settings["spec"]
        assert spec["sizes"] == [2] and spec["kinds"] == ["C_1x1", "DWC_s1", "EW"]  # canonical order
        assert (spec["runs"], spec["warmup"], spec["seed"], spec["max_combinations"]) == (3, 1, 5, 4)
        assert spec["time_budget_s"] == 60.0 and spec["identical_counts"] == []
        finish_sweep(job)
    finally:
        cli.join(timeout=120)
    assert outcome.get("rc") == 0
    out, err = capsys.readouterr()
    assert f"fusion sweep #{job.pk} queued on pocl-test" in err
    lines = out.splitlines()
    assert lines[0].startswith(f"fusion sweep #{job.pk} succeeded on pocl-test: mobilenet_v2_0.5, {model.name} (fp32")
    assert "measured 8 of 8 sets in 12.5 s on Test GPU (wave 8)" in out
    assert "rows: 16 (13 correct, 1 incorrect, 2 refused)" in out
    assert "pairs" in out and "note: 1 set was refused by the fuser" in out

    rc, out, _ = _run(
        ["fusion", "rows", str(job.pk), "--contains", "EW", "--variant", "rounded", *lab["server"]], capsys
    )
    assert rc == 0
    table = out.splitlines()
    assert table[0].split() == ["kinds", "variant", "span", "ratio", "busy", "ratio", "MFLOPs", "padding", "check"]
    body = {line.split()[0]: line for line in table[2:] if line and not line.startswith(" ") and "rows;" not in line}
    assert set(body) == {"C_1x1+EW", "DWC_s1+EW", "EW+EW"}
    # the paired ratio with its verdict, never a "± std"
    assert " ± " not in out and re.search(r"\d\.\d{3}x (above|below|within noise)", body["C_1x1+EW"])
    assert body["C_1x1+EW"].rstrip().endswith("ok")
    assert "refused: FusionError: not independent" in body["DWC_s1+EW"]
    assert "3 rows; span ratio = sequential / fused device span, paired over rounds" in out

    rc, out, _ = _run(["fusion", "rows", str(job.pk), "--experiment", "identical", *lab["server"]], capsys)
    assert rc == 0 and [line.split()[:3] for line in out.splitlines()[2:6]] == [
        ["1", "x", "C_1x1"],
        ["1", "x", "C_1x1"],
        ["2", "x", "C_1x1"],
        ["2", "x", "C_1x1"],
    ]

    argv = ["fusion", "rows", str(job.pk), "--kinds", "C_1x1,C_1x1", "--json", *lab["server"]]
    rc, out, _ = _run([*argv, "--experiment", "combination"], capsys)
    rows = json.loads(out)
    assert rc == 0 and [(r["variant"], r["correct"]) for r in rows] == [("rounded", True), ("unrounded", False)]
    rc, out, _ = _run([*argv, "--experiment", "identical"], capsys)  # figure 9's N = 2
    assert rc == 0 and [(r["experiment"], r["size"]) for r in json.loads(out)] == [("identical", 2)] * 2

    rc, out, _ = _run(["fusion", "show", str(job.pk), "--json", *lab["server"]], capsys)
    assert rc == 0 and json.loads(out)["result"]["row_counts"]["total"] == 16


def test_plan_queues_with_its_options_and_show_prints_it(
    lab: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from server.profiling.models import ProfilingJob

    argv = ["fusion", "plan", "--device", str(lab["device"].pk), "--models", "mobilenet_v2,mobilenet_v2"]
    rc, out, err = _run(
        [*argv, "--sweep", "none", "--runs", "5", "--max-group", "3", "--no-round", *lab["server"]], capsys
    )
    assert rc == 0, err
    job = ProfilingJob.objects.get(device=lab["device"])
    assert job.kind == "fusion_plan" and job.settings["zoo"] == ["mobilenet_v2", "mobilenet_v2"]
    assert job.settings["options"] == {"runs": 5, "max_group": 3, "round_to_wave": False, "warmup": 5}
    assert job.settings["sweep"] is None
    assert f"fusion plan #{job.pk} queued on pocl-test" in err
    assert out.startswith(f"fusion plan #{job.pk} queued on pocl-test: mobilenet_v2, mobilenet_v2 (no sweep")

    rc, out, _ = _run(["fusion", "show", str(job.pk), *lab["server"]], capsys)
    assert rc == 0 and out.startswith(f"fusion plan #{job.pk} queued") and "progress: 0%" in out


def test_refusals_are_one_line_on_stderr(
    lab: dict[str, Any], make_device: Callable[..., Any], capsys: pytest.CaptureFixture[str]
) -> None:
    make_device("cpu", name="host-cpu")
    rc, _, err = _run(["fusion", "sweep", "--device", "host-cpu", *lab["server"]], capsys)
    assert rc == 2 and err.startswith("latencylab: error: HTTP 400: device: fusion runs on OpenCL devices")

    rc, _, err = _run(["fusion", "sweep", "--device", "pocl-test", "--models", "resnet9000", *lab["server"]], capsys)
    assert rc == 2 and "zoo: zoo[0] is not a zoo model, got 'resnet9000'" in err

    rc, _, err = _run(["fusion", "sweep", "--device", "pocl-test", "--runs", "0", *lab["server"]], capsys)
    assert rc == 2 and "--runs must be between 1 and 10000, got 0" in err

    rc, out, err = _run(
        ["fusion", "sweep", "--device", "pocl-test", "--models", "mobilenet_v2", *lab["server"]], capsys
    )
    assert rc == 0
    queued = int(err.split("#")[1].split()[0])
    rc, _, err = _run(["fusion", "rows", str(queued), *lab["server"]], capsys)
    assert rc == 1 and f"sweep #{queued} is queued; it has no rows" in err

    rc, _, err = _run(["fusion", "show", "999999", *lab["server"]], capsys)
    assert rc == 2 and "HTTP 404" in err


def test_the_python_client_queues_waits_reads_rows_and_plans(lab: dict[str, Any]) -> None:
    from django.db import connection

    from latencylab.client import Client, ClientError, FusionHandle, JobFailed
    from server.profiling.models import ProfilingJob
    from server.profiling.services import claim_job, fail_job
    from tests.server.fusion_api_factories import finish_plan

    def finish_when_queued(kind: str, finish: Callable[[Any], Any]) -> threading.Thread:
        def run() -> None:
            try:
                finish(
                    wait_for(
                        lambda: ProfilingJob.objects.filter(kind=kind, state="queued").first(), what=f"a queued {kind}"
                    )
                )
            finally:
                connection.close()  # this thread's own: left open, the test database could not be dropped

        thread = threading.Thread(target=run)
        thread.start()
        return thread

    with Client(lab["server"][1], lab["member"].key) as client:
        worker = finish_when_queued("fusion_sweep", finish_sweep)
        fractions: list[float] = []
        sweep = client.fusion_sweep(
            "pocl-test",
            zoo=["mobilenet_v2_0.5"],
            spec={"sizes": [2]},
            wait=True,
            timeout=60,
            on_progress=fractions.append,
        )
        worker.join()
        assert isinstance(sweep, FusionHandle) and sweep.kind == "fusion_sweep" and sweep.state == "succeeded"
        assert sweep.result is not None and sweep.result["row_counts"]["total"] == 16 and fractions[-1] == 1.0
        assert [s["id"] for s in client.fusion_sweeps()] == [sweep.id]
        assert client.fusion_sweep_status(sweep.id).result == sweep.result
        rows = client.fusion_rows(sweep, kinds=["EW", "C_1x1"], variant="rounded", detail=True)
        assert [(r["kinds"], r["variant"]) for r in rows] == [(["C_1x1", "EW"], "rounded")] and "data" in rows[0]
        assert len(client.fusion_rows(sweep.id, contains="EW", errors=False)) == 4
        assert len(client.fusion_rows(sweep.id, experiment="identical", size=2)) == 2

        plan = client.fusion_plan("pocl-test", zoo=["mobilenet_v2", "mobilenet_v2"], options={"runs": 5}, sweep=sweep)
        assert plan.kind == "fusion_plan" and plan.data["settings"]["sweep"] == sweep.id
        with pytest.raises(ClientError, match=f"plan #{plan.id} is queued; it has no result"):
            client.fusion_plan_result(plan)
        finish_plan(ProfilingJob.objects.get(pk=plan.id))
        assert plan.wait(timeout=30)["correct"] is True
        result = client.fusion_plan_result(plan.id)
        assert result["networks"] == ["mobilenet_v2", "mobilenet_v2"] and result["plan_ratio"] > 1
        assert [p["id"] for p in client.fusion_plans()] == [plan.id]

        def fail(job: Any) -> None:
            assert claim_job(job.pk, "run-x") is not None
            assert fail_job(job.pk, "run-x", "the planner found no independent kernels")

        worker = finish_when_queued("fusion_plan", fail)
        with pytest.raises(JobFailed, match="the planner found no independent kernels"):
            client.fusion_plan("pocl-test", sweep=False, wait=True, timeout=60)
        worker.join()
        with pytest.raises(ClientError, match="models= takes model ids"):
            client.fusion_sweep("pocl-test", models=["mobilenet_v2"])  # type: ignore[list-item]


def test_a_plan_prints_its_paired_ratio_with_the_interval_not_two_medians(capsys: pytest.CaptureFixture[str]) -> None:
    # The case: medians of 45.5 and 31.9 ms read as 1.43x, while the rounds, each running
    # both strategies, gave 1.044: the table's ratio is the paired one with its interval.
    from devicelab.fusion.plan_run import summarize_ratio
    from devicelab.fusion.results import SideTiming
    from devicelab.measure.stats import summarize
    from latencylab.commands.fusion_cmds import print_plan

    def side(values: list[float]) -> SideTiming:
        return SideTiming(summarize(values), summarize(values), tuple(values), tuple(values), tuple(values))

    sequential = [30.0, 31.0, 45.5, 47.0, 50.0, 29.0, 46.0, 45.0, 31.5, 46.5]  # a load burst now and then
    plan = [s / r for s, r in zip(sequential, [1.04, 1.05, 1.03, 1.044, 1.06, 1.02, 1.044, 1.05, 1.04, 1.03])]
    fuse_all = [s / r for s, r in zip(sequential, [0.8, 1.3, 0.9, 1.2, 1.0, 1.1, 0.95, 1.05, 1.15, 0.85])]
    ratios = {
        "plan": summarize_ratio(side(sequential), side(plan)).as_dict(),
        "fuse_all": summarize_ratio(side(sequential), side(fuse_all)).as_dict(),
    }
    job = {
        "id": 7,
        "state": "succeeded",
        "device_name": "pocl-test",
        "settings": {"zoo": ["mobilenet_v2", "mobilenet_v2"]},
        "result": {
            "sequential_ms": 45.5,
            "plan_ms": 31.9,
            "fuse_all_ms": 40.0,
            "plan_ratio": ratios["plan"]["throughput"],
            "fuse_all_ratio": ratios["fuse_all"]["throughput"],
            "correct": True,
            "data": {"ratios": ratios},
        },
    }
    print_plan(job)
    out = capsys.readouterr().out
    plan_line = next(line for line in out.splitlines() if line.startswith("plan "))
    assert re.search(r"1\.04\dx \[1\.0\d\d-1\.0\d\d\]", plan_line) and "within noise" not in plan_line
    assert "1.43" not in out  # 45.5 / 31.9 is no ratio of this lab
    fuse_line = next(line for line in out.splitlines() if line.startswith("fuse all"))
    assert "within noise" in fuse_line

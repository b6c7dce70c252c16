"""``latencylab sharing sweep|rows|show`` and the Python client's sharing methods against a live
server: the flags reach the server as a sweep's spec (``--tenants 1,2,4,...,120`` continued,
``--networks`` alone meaning networks only), ``--wait`` shows the summary and table 1 once the
sweep is stored, ``rows`` prints the filtered table, refusals are one line on stderr with exit 2,
and the client waits, follows row pages, cancels and raises the worker's failure reason.

This test stands in for the device's worker: it claims the job and stores a sweep built from
devicelab's dataclasses through the services (tests/e2e/test_sharing_sweep.py runs a real one)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from latencylab.cli import main
from latencylab.commands import sharing_cmds
from tests.cli.live_lab import run_cli as _run
from tests.e2e.live_clients import wait_for_request_threads
from tests.server import conftest as server_fixtures
from tests.server.sharing_api_factories import NETWORK, SHAPE_NAME, finish_sharing
from tests.waiting import wait_for

make_device = server_fixtures.make_device
make_network = server_fixtures.make_network
make_job = server_fixtures.make_job
media_in_tmp = server_fixtures.media_in_tmp

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_rows_filter_offers_the_servers_statuses() -> None:
    from server.tenancy.models import SharingStatus

    assert sharing_cmds.STATUSES == tuple(SharingStatus.values)


@pytest.mark.parametrize(
    "value,tenants",
    [
        ("1,2,4,...,120", [1, 2, 4, 8, 16, 32, 64, 120]),
        ("1,2,4,...,64", [1, 2, 4, 8, 16, 32, 64]),
        ("1,2,...,5", [1, 2, 3, 4, 5]),
        ("10,20,30,...,45", [10, 20, 30, 40, 45]),
        ("1, 2, 8", [1, 2, 8]),
    ],
)
def test_tenants_continue_the_pattern_before_the_ellipsis(value: str, tenants: list[int]) -> None:
    assert sharing_cmds._tenants_argument(value) == tenants


@pytest.mark.parametrize(
    "argv,says",
    [
        (["--tenants", "1,...,8"], "write at least two counts, '...', then the last"),
        (["--tenants", "1,2,5,...,9"], "cannot continue 1,2,5,..."),
        (["--tenants", "1,2,4,...,3"], "the count after '...' (3) must be larger than 4"),
        (["--tenants", "0,1"], "is not a comma-separated list of tenant counts"),
        (["--shape", "256x128"], "'256x128' is not a shape MxNxK"),
        (["--shape", "256x0x8"], "'256x0x8' is not a shape MxNxK of positive sizes"),
        (["--strategies", "space_time,telepathy"], "unknown strategies ['telepathy']"),
    ],
)
def test_bad_flags_are_bad_usage(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["sharing", "sweep", "--device", "x", *argv])
    assert exc.value.code == 2 and says in capsys.readouterr().err


@pytest.fixture
def lab(live_server: Any, make_member: Callable[..., Any], make_device: Callable[..., Any]) -> Iterator[dict[str, Any]]:
    """A member, an online OpenCL device named pocl-test, and the CLI's server arguments."""
    member = make_member()
    device = make_device("opencl", name="pocl-test")
    yield {"member": member, "device": device, "server": ["--url", live_server.url, "--token", member.key]}
    wait_for_request_threads()


def _queued_id(err: str) -> int:
    return int(err.split("#")[1].split()[0])


def test_sweep_sends_its_flags_waits_and_prints_table_1_then_rows_and_show(
    lab: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from server.profiling.models import ProfilingJob

    argv = ["sharing", "sweep", "--device", "pocl-test", "--shape", "256x128x1152", "--shape", "64x8x64,512x1x512"]
    argv += ["--networks", "resnet18", "--tenants", "1,2,4,...,120", "--strategies", "time_only,space_time"]
    argv += ["--runs", "3", "--warmup", "1", "--seed", "5", "--memory-cap-mb", "500", "--no-ceiling"]
    argv += ["--time-budget", "60", "--wait", "--timeout", "120"]
    outcome: dict[str, int] = {}
    cli = threading.Thread(target=lambda: outcome.update(rc=main(argv + lab["server"])))
    cli.start()
    try:
        job = wait_for(lambda: ProfilingJob.objects.filter(device=lab["device"]).first(), what="the sweep's job")
        assert job.kind == "sharing_sweep" and job.settings["time_budget_s"] == 60.0
        spec = job.settings["spec"]
        assert spec["shapes"] == [[256, 128, 1152], [64, 8, 64], [512, 1, 512]] and spec["networks"] == ["resnet18"]
        assert spec["tenants"] == [1, 2, 4, 8, 16, 32, 64, 120]
        assert spec["strategies"] == ["time_only", "space_time"]
        assert (spec["runs"], spec["warmup"], spec["seed"]) == (3, 1, 5)
        assert spec["memory_cap_bytes"] == 500_000_000 and spec["ceiling"] is False
        finish_sharing(job)
    finally:
        cli.join(timeout=120)
    assert outcome.get("rc") == 0
    out, err = capsys.readouterr()
    assert f"sharing sweep #{job.pk} queued on pocl-test" in err
    lines = out.splitlines()
    assert lines[0].startswith(f"sharing sweep #{job.pk} succeeded on pocl-test: 256x128x1152, 64x8x64, 512x1x512")
    assert "measured in 42.5 s on Test GPU" in out
    assert "incomplete: the time budget of 60 s left 1 unit out: resnet18 R=8" in out
    assert "rows: 28 (26 measured, 1 memory-bound, 0 unsupported, 1 error; 25 correct, 1 INCORRECT)" in out
    assert "numpy ceiling: numpy's SGEMM (its BLAS) of every tenant's own A and B" in out
    assert "  256x128x1152: median 150.0 GFLOP/s, best 180.0 (median per R: R=1: 150.0, R=2: 150.0" in out
    table1 = lines[lines.index(next(line for line in lines if line.startswith("table 1:"))) + 3 :][:2]
    # geomean, how many R were significantly above 1, the next best, each R with its interval
    assert table1[0].split()[:4] == [SHAPE_NAME, "space_time", "1.50x", "3"]
    assert "3 above, 0 below, 0 within noise" in table1[0] and "space_only" in table1[0]
    assert "8: 1.50x [1.50-1.50]" in table1[0]
    assert table1[1].split()[:3] == [NETWORK, "space_time", "1.50x"]
    largest = {tuple(line.split()[:2]): line.split()[2:] for line in lines if line.startswith(NETWORK + " ")}
    assert largest[(NETWORK, "space_time")] == ["2", "4", "3"]  # measured, memory-bound, fits
    assert f"rows: latencylab sharing rows {job.pk}" in out

    rc, out, _ = _run(["sharing", "rows", str(job.pk), "--workload", NETWORK, "--tenants", "4", *lab["server"]], capsys)
    assert rc == 0
    table = out.splitlines()
    assert table[0].split()[:6] == ["workload", "R", "strategy", "status", "GFLOP/s", "req/s"]
    body = {line.split()[2]: line for line in table[2:6]}
    assert set(body) == {"exclusive", "time_only", "space_only", "space_time"}
    assert body["exclusive"].split()[3] == "ok" and body["exclusive"].rstrip().endswith("ok")
    assert body["space_time"].split()[3] == "memory_bound" and "over the budget of 8.0 MB" in body["space_time"]
    assert "OUT_OF_RESOURCES" in body["space_only"] and " MB " in body["time_only"]
    assert "4 rows; req/s: requests served per second" in out

    rc, out, _ = _run(
        ["sharing", "rows", str(job.pk), "--strategy", "time_only", "--tenants", "8", *lab["server"]], capsys
    )
    assert rc == 0 and out.splitlines()[2].rstrip().endswith("WRONG")

    rc, out, _ = _run(["sharing", "rows", str(job.pk), "--status", "error", "--json", *lab["server"]], capsys)
    assert rc == 0 and [(r["workload"], r["tenants"], r["strategy"]) for r in json.loads(out)] == [
        (NETWORK, 4, "space_only")
    ]
    rc, _, err = _run(["sharing", "rows", str(job.pk), "--workload", "vgg16", *lab["server"]], capsys)
    assert rc == 0 and "no rows match" in err

    rc, out, _ = _run(["sharing", "show", str(job.pk), "--json", *lab["server"]], capsys)
    assert rc == 0 and json.loads(out)["result"]["row_counts"]["total"] == 28
    rc, out, _ = _run(["sharing", "show", str(job.pk), *lab["server"]], capsys)
    assert rc == 0 and out.startswith(f"sharing sweep #{job.pk} succeeded") and "table 1:" in out


def test_networks_alone_measure_networks_only_and_no_flags_the_papers_sweep(
    lab: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from devicelab.tenancy.spec import SharingSpec
    from server.profiling.models import ProfilingJob

    rc, out, err = _run(
        ["sharing", "sweep", "--device", "pocl-test", "--networks", "resnet18,mobilenet_v2", *lab["server"]], capsys
    )
    assert rc == 0, err
    networks = ProfilingJob.objects.get(pk=_queued_id(err))
    assert networks.settings["spec"]["shapes"] == [] and networks.settings["spec"]["networks"] == [
        "resnet18",
        "mobilenet_v2",
    ]
    assert out.startswith(f"sharing sweep #{networks.pk} queued on pocl-test: resnet18, mobilenet_v2; R 1,2,4,8,10")

    rc, out, err = _run(["sharing", "sweep", "--device", str(lab["device"].pk), *lab["server"]], capsys)
    assert rc == 0, err
    paper = ProfilingJob.objects.get(pk=_queued_id(err))
    assert paper.settings["spec"] == SharingSpec().as_dict()

    rc, out, _ = _run(["sharing", "show", str(paper.pk), *lab["server"]], capsys)
    assert rc == 0 and "512x1x512, 256x128x1152, 256x256x256" in out and "progress: 0%" in out


def test_refusals_are_one_line_on_stderr(
    lab: dict[str, Any],
    make_device: Callable[..., Any],
    make_job: Callable[..., Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    make_device("cpu", name="host-cpu")
    rc, _, err = _run(["sharing", "sweep", "--device", "host-cpu", *lab["server"]], capsys)
    assert rc == 2 and err.startswith("latencylab: error: HTTP 400: device: sharing sweeps run on OpenCL devices")

    rc, _, err = _run(["sharing", "sweep", "--device", "pocl-test", "--networks", "resnet9000", *lab["server"]], capsys)
    assert rc == 2 and "spec.networks[0] is not a zoo model, got 'resnet9000'" in err

    rc, _, err = _run(["sharing", "sweep", "--device", "pocl-test", "--tenants", "2,2", *lab["server"]], capsys)
    assert rc == 2 and "spec.tenants lists 2 twice" in err

    rc, _, err = _run(["sharing", "sweep", "--device", "pocl-test", "--runs", "0", *lab["server"]], capsys)
    assert rc == 2 and "--runs must be between 1 and 10000, got 0" in err

    rc, _, err = _run(["sharing", "sweep", "--device", "pocl-test", "--time-budget", "1e9", *lab["server"]], capsys)
    assert rc == 2 and "time_budget_s must be <=" in err

    rc, _, err = _run(["sharing", "sweep", "--device", "pocl-test", "--shape", "8x8x8", *lab["server"]], capsys)
    assert rc == 0
    queued = _queued_id(err)
    rc, _, err = _run(["sharing", "rows", str(queued), *lab["server"]], capsys)
    assert rc == 1 and f"sweep #{queued} is queued; it has no rows" in err

    profile = make_job(lab["member"].team)
    rc, _, err = _run(["sharing", "show", str(profile.pk), *lab["server"]], capsys)
    assert rc == 2 and f"job #{profile.pk} is a profile job, not a sharing sweep" in err
    rc, _, err = _run(["sharing", "show", "999999", *lab["server"]], capsys)
    assert rc == 2 and "HTTP 404" in err


def test_the_python_client_queues_waits_reads_rows_and_cancels(lab: dict[str, Any]) -> None:
    from django.db import connection

    from latencylab.client import Client, ClientError, InputError, JobFailed, SharingHandle
    from server.profiling.models import ProfilingJob
    from server.profiling.services import claim_job, fail_job

    def finish_when_queued(finish: Callable[[Any], Any]) -> threading.Thread:
        def run() -> None:
            try:
                finish(
                    wait_for(
                        lambda: ProfilingJob.objects.filter(kind="sharing_sweep", state="queued").first(),
                        what="a queued sharing sweep",
                    )
                )
            finally:
                connection.close()  # this thread's own: left open, the test database could not be dropped

        thread = threading.Thread(target=run)
        thread.start()
        return thread

    with Client(lab["server"][1], lab["member"].key) as client:
        worker = finish_when_queued(finish_sharing)
        fractions: list[float] = []
        spec = {"shapes": ["256x128x1152", (64, 8, 64)], "tenants": [1, 2], "runs": 3}
        sweep = client.sharing_sweep(
            "pocl-test", spec=spec, time_budget_s=90, wait=True, timeout=60, on_progress=fractions.append
        )
        worker.join()
        assert isinstance(sweep, SharingHandle) and sweep.state == "succeeded" and fractions[-1] == 1.0
        assert sweep.data["settings"]["spec"]["shapes"] == [[256, 128, 1152], [64, 8, 64]]
        assert sweep.data["settings"]["time_budget_s"] == 90.0
        assert sweep.result is not None and sweep.result["row_counts"]["total"] == 28
        assert sweep.result["table1"][0]["speedup_geomean"] == pytest.approx(1.5)
        assert [s["id"] for s in client.sharing_sweeps()] == [sweep.id]
        assert client.sharing_sweep_status(sweep.id).result == sweep.result
        rows = client.sharing_rows(sweep)
        assert len(rows) == 28 and "data" not in rows[0]  # every page (the client asks for 500 a page)
        tails = client.sharing_rows(sweep.id, workload=SHAPE_NAME, strategy="space_time", detail=True)
        assert [r["tenants"] for r in tails] == [1, 2, 4, 8] and len(tails[3]["data"]["latency_ms"]["per_tenant"]) == 8
        assert [r["strategy"] for r in client.sharing_rows(sweep, tenants=4, status="ok", workload=NETWORK)] == [
            "exclusive",
            "time_only",
        ]
        with pytest.raises(ClientError, match="HTTP 400: status: unknown status 'done'"):
            client.sharing_rows(sweep, status="done")

        queued = client.sharing_sweep(lab["device"].pk, spec={"shapes": [[8, 8, 8]]})
        assert queued.state == "queued" and queued.cancel().state == "cancelled"
        with pytest.raises(ClientError, match=f"sweep #{queued.id} is cancelled; it has no rows"):
            client.sharing_rows(queued)

        def fail(job: Any) -> None:
            assert claim_job(job.pk, "run-x") is not None
            assert fail_job(job.pk, "run-x", "no OpenCL device: the driver is gone")

        worker = finish_when_queued(fail)
        with pytest.raises(JobFailed, match="no OpenCL device: the driver is gone"):
            client.sharing_sweep("pocl-test", spec={"shapes": [[8, 8, 8]]}, wait=True, timeout=60)
        worker.join()
        with pytest.raises(InputError, match="a shape is MxNxK"):
            client.sharing_sweep("pocl-test", spec={"shapes": ["256 by 128"]})
        with pytest.raises(InputError, match="takes a list of shapes"):
            client.sharing_sweep("pocl-test", spec={"shapes": "256x128x1152"})


def test_online_sends_its_flags_waits_and_prints_every_policy(
    lab: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from server.profiling.models import ProfilingJob
    from server.tenancy.services import ingest_online
    from tests.server.fusion_factories import claim
    from tests.server.sharing_factories import online_record

    argv = ["sharing", "online", "--device", "pocl-test", "--workload", "256x128x1152", "--tenants", "4"]
    argv += ["--load", "0.8", "--duration-s", "2", "--policies", "time_only,space_only,space_time", "--wait"]
    outcome: dict[str, int] = {}
    cli = threading.Thread(target=lambda: outcome.update(rc=main(argv + lab["server"])))
    cli.start()
    try:
        job = wait_for(lambda: ProfilingJob.objects.filter(device=lab["device"]).first(), what="the run's job")
        assert job.kind == "online_schedule"
        spec = job.settings["spec"]
        assert (spec["workload"], spec["tenants"], spec["load"], spec["duration_s"]) == ("256x128x1152", 4, 0.8, 2.0)
        assert spec["policies"] == ["time_only", "space_only", "space_time"] and spec["target_factor"] == 4.0
        assert ingest_online(job.pk, claim(job), online_record()) is not None
    finally:
        cli.join(timeout=120)
    assert outcome.get("rc") == 0
    out, err = capsys.readouterr()
    assert f"online run #{job.pk} queued on pocl-test" in err
    assert f"online run #{job.pk} succeeded on pocl-test: 256x128x1152, R 4, load 0.8 x 1/t1 for 2.0 s" in out
    assert "t1 1.000 ms (one request alone); offered 800 requests/s; target 4.00 ms" in out
    table = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith(("time_", "space_"))}
    assert table["time_only"][:3] == ["50%", "950", "475"] and table["time_only"][-2:] == ["1.00", "ok"]
    assert table["space_time"][0] == "88%" and table["space_time"][-2:] == ["2.50", "ok"]
    assert table["space_time_native"][0] == "memory_bound"

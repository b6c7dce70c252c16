"""``latencylab remote run|show`` and the Python client's remote-run methods against a live server:
the flags reach the server as the run's settings, ``--wait`` prints the table per profile once the
run is stored, ``show`` prints it again (or JSON), refusals are one line on stderr with exit 2, and
the client waits, cancels and raises the worker's failure reason.

This test stands in for the device's worker: it claims the job and stores a run built from
devicelab's dataclasses through the services (tests/e2e/test_remote_run.py runs a real one)."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from latencylab.cli import main
from tests.cli.live_lab import run_cli as _run
from tests.e2e.live_clients import wait_for_request_threads
from tests.server import conftest as server_fixtures
from tests.server.remote_factories import finish_remote
from tests.waiting import wait_for

make_device = server_fixtures.make_device
make_network = server_fixtures.make_network
make_job = server_fixtures.make_job
media_in_tmp = server_fixtures.media_in_tmp

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def lab(
    live_server: Any, make_member: Callable[..., Any], make_device: Callable[..., Any], make_network: Callable[..., Any]
) -> Iterator[dict[str, Any]]:
    """A member with an image model, an online CPU device named host-test, the CLI's server arguments."""
    member = make_member()
    device = make_device("cpu", name="host-test")
    model = make_network(member.team)
    yield {
        "member": member,
        "device": device,
        "model": model,
        "server": ["--url", live_server.url, "--token", member.key],
    }
    wait_for_request_threads()


def _finish_when_queued(finish: Callable[[Any], Any]) -> threading.Thread:
    """A thread that plays the worker for the next queued run."""
    from django.db import connection

    from server.profiling.models import ProfilingJob

    def run() -> None:
        try:
            finish(
                wait_for(
                    lambda: ProfilingJob.objects.filter(kind="remote_scenario", state="queued").first(),
                    what="a queued remote run",
                )
            )
        finally:
            connection.close()  # this thread's own: left open, the test database could not be dropped

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_run_sends_its_flags_waits_and_prints_a_table_per_profile_then_show(
    lab: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["remote", "run", "--model", str(lab["model"].pk), "--device", "host-test", "--profiles", "unshaped,lte"]
    argv += ["--requests", "5", "--warmup", "1", "--payload", "png", "--seed", "4", "--threads", "1", "--cores", "0"]
    worker = _finish_when_queued(finish_remote)
    rc, out, err = _run([*argv, "--wait", "--timeout", "60", *lab["server"]], capsys)
    worker.join(timeout=60)
    assert rc == 0, err
    from server.profiling.models import ProfilingJob

    job = ProfilingJob.objects.get(kind="remote_scenario")
    s = job.settings
    assert s["profiles"] == ["unshaped", "lte"] and s["network_profiles"]["lte"]["name"] == "lte"
    assert (s["requests"], s["warmup"], s["payload"], s["seed"], s["threads"], s["cores"]) == (5, 1, "png", 4, 1, [0])
    assert f"remote run #{job.pk} queued on host-test" in err
    lines = out.splitlines()
    assert lines[0].startswith(
        f"remote run #{job.pk} succeeded: {lab['model'].name} served by host-test under unshaped, lte"
    )
    assert "(5 requests and 1 warm-up per profile, png payload)" in lines[0]
    assert "payload of 162,893 bytes; model load 42.0 ms (once, before the first request)" in out
    header = next(i for i, line in enumerate(lines) if line.startswith("profile"))
    assert lines[header].split() == [
        "profile",
        "upload",
        "server",
        "compute",
        "download",
        "remainder",
        "end",
        "to",
        "end",
        "e2e",
        "p90",
        "network",
    ]
    unshaped, lte = (lines[header + 2].split(), lines[header + 3].split())
    # the factories' made-up medians: LTE 180 up, 22 on the server (11 of it compute), 110 down,
    # and 0.7 ms that none of the parts' clocks holds
    assert lte == ["lte", "180.0", "22.0", "11.0", "110.0", "0.70", "312.7", "338.3", "93%"]
    assert unshaped[0] == "unshaped" and unshaped[1] == "0.1" and unshaped[5] == "0.50" and unshaped[-1] == "6%"

    rc, out, _ = _run(["remote", "show", str(job.pk), *lab["server"]], capsys)
    assert rc == 0 and out.splitlines()[0].startswith(f"remote run #{job.pk} succeeded") and "93%" in out
    rc, out, _ = _run(["remote", "show", str(job.pk), "--json", *lab["server"]], capsys)
    body = json.loads(out)
    assert rc == 0 and [p["profile"] for p in body["result"]["profiles"]] == ["unshaped", "lte"]


def test_refusals_are_one_line_on_stderr(
    lab: dict[str, Any],
    make_device: Callable[..., Any],
    make_job: Callable[..., Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    make_device("opencl", name="gpu-test")
    base = ["remote", "run", "--model", str(lab["model"].pk)]
    rc, _, err = _run([*base, "--device", "gpu-test", "--profiles", "lte", *lab["server"]], capsys)
    assert rc == 2 and err.startswith("latencylab: error: HTTP 400: device: remote runs are served by a CPU device")
    rc, _, err = _run([*base, "--device", "host-test", "--profiles", "lte,mars", *lab["server"]], capsys)
    assert rc == 2 and "profiles[1]: no network profile 'mars'" in err
    rc, _, err = _run([*base, "--device", "host-test", "--profiles", "lte,lte", *lab["server"]], capsys)
    assert rc == 2 and "profiles lists 'lte' twice" in err
    rc, _, err = _run([*base, "--device", "host-test", "--profiles", "lte", "--requests", "0", *lab["server"]], capsys)
    assert rc == 2 and "--requests must be between 1 and 500, got 0" in err
    rc, _, err = _run([*base, "--device", "host-test", "--profiles", "lte", "--cores", "big", *lab["server"]], capsys)
    assert rc == 2 and "--cores takes CPU ids" in err
    rc, _, err = _run(
        ["remote", "run", "--model", "nothing.onnx", "--device", "host-test", "--profiles", "lte"], capsys
    )
    assert rc == 2 and "MODEL: no such file 'nothing.onnx'" in err

    rc, _, err = _run([*base, "--device", "host-test", "--profiles", "lte", *lab["server"]], capsys)
    assert rc == 0
    queued = int(err.split("#")[1].split()[0])
    rc, out, _ = _run(["remote", "show", str(queued), *lab["server"]], capsys)
    assert rc == 0 and out.startswith(f"remote run #{queued} queued") and "progress: 0%" in out
    profile = make_job(lab["member"].team)
    rc, _, err = _run(["remote", "show", str(profile.pk), *lab["server"]], capsys)
    assert rc == 2 and f"job #{profile.pk} is a profile job, not a remote run" in err


def test_bad_profiles_flag_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["remote", "run", "--model", "1", "--device", "x", "--profiles", " , "])
    assert exc.value.code == 2 and "name at least one network profile" in capsys.readouterr().err


def test_the_python_client_queues_waits_and_cancels(lab: dict[str, Any]) -> None:
    from latencylab.client import Client, InputError, JobFailed, RemoteHandle
    from server.profiling.services import claim_job, fail_job

    with Client(lab["server"][1], lab["member"].key) as client:
        worker = _finish_when_queued(finish_remote)
        fractions: list[float] = []
        run = client.remote_run(
            lab["model"].pk, "host-test", ["unshaped", "lte"], requests=5, warmup=1, wait=True, timeout=60,
            on_progress=fractions.append,
        )  # fmt: skip
        worker.join()
        assert isinstance(run, RemoteHandle) and run.state == "succeeded" and fractions[-1] == 1.0
        assert run.result is not None and [p["profile"] for p in run.result["profiles"]] == ["unshaped", "lte"]
        assert run.data["settings"]["requests"] == 5 and run.data["model"] == lab["model"].pk
        assert [r["id"] for r in client.remote_runs()] == [run.id]
        assert client.remote_run_status(run.id).result == run.result
        assert client.wait_for_remote_run(run, timeout=5) == run.result

        queued = client.remote_run(lab["model"].pk, lab["device"].pk, ["campus_wifi"])
        assert queued.state == "queued" and queued.data["settings"]["requests"] == 20
        assert queued.cancel().state == "cancelled"

        def fail(job: Any) -> None:
            assert claim_job(job.pk, "run-x") is not None
            assert fail_job(job.pk, "run-x", "the inference endpoint for 'net' exited: MemoryError")

        worker = _finish_when_queued(fail)
        with pytest.raises(JobFailed, match="the inference endpoint for 'net' exited: MemoryError"):
            client.remote_run(lab["model"].pk, "host-test", ["lte"], wait=True, timeout=60)
        worker.join()
        with pytest.raises(InputError, match="takes a list of profile names"):
            client.remote_run(lab["model"].pk, "host-test", "lte")

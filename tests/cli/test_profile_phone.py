"""``latencylab profile`` on a phone: ``--delegate``, ``--cores`` (a cluster name or ids),
``--cooldown-c`` and ``--cooldown-max-s`` reach the server as settings, and the printed result
shows the delegate, the cluster, the mean without a median, memory, temperatures and flags.

Against a live server; this test stands in for the phone's worker (claim and ingest through the
services, with a result shaped like the android backend's)."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Callable
from typing import Any

import pytest

from devicelab.measure.cold_starts import FRESH_PROCESS, ColdSample, ColdStarts
from latencylab.cli import main
from latencylab.commands import client_cmds
from tests.server import conftest as server_fixtures
from tests.server.factories import tiny_graph
from tests.server.phone_factories import finish_phone_job, make_phone
from tests.waiting import wait_for

make_device = server_fixtures.make_device
make_network = server_fixtures.make_network
media_in_tmp = server_fixtures.media_in_tmp

HOT_FLAG = "hot: 46.2 °C at start > 40 °C"


def test_cores_are_ids_or_a_cluster_name() -> None:
    assert client_cmds._cores_argument("big") == "big"
    assert client_cmds._cores_argument("0-3,6") == [0, 1, 2, 3, 6]
    assert client_cmds._cores_argument("7, 6") == [6, 7]
    for bad in ("3-1", "0-", "big,0", "-2"):
        with pytest.raises(argparse.ArgumentTypeError):
            client_cmds._cores_argument(bad)


def test_a_bad_delegate_is_bad_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["profile", "1", "--device", "x", "--delegate", "metal"])
    assert exc.value.code == 2 and "invalid choice: 'metal'" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["profile", "1", "--device", "x", "--backend", "cuda"])
    assert exc.value.code == 2 and "invalid choice: 'cuda'" in capsys.readouterr().err
    for bad in ("retry", "flag:2", "rerun:x"):
        with pytest.raises(SystemExit) as exc:
            main(["profile", "1", "--device", "x", "--on-noise", bad])
        assert exc.value.code == 2 and "expected flag, fail, rerun or rerun:N" in capsys.readouterr().err
    assert main(["profile", "1", "--device", "x", "--cold-runs", "0", "--url", "http://x", "--token", "t"]) == 2
    assert capsys.readouterr().err == "latencylab: error: --cold-runs must be between 1 and 50, got 0\n"


@pytest.mark.django_db(transaction=True)
def test_profile_on_a_phone_sends_its_settings_and_prints_its_conditions(
    live_server: Any,
    make_member: Callable[..., Any],
    make_device: Callable[..., Any],
    make_network: Callable[..., Any],
    capsys: pytest.CaptureFixture[str],
) -> None:
    from server.profiling.models import ProfilingJob

    member = make_member()
    phone = make_phone(make_device, name="bench-pixel-7")
    graph = tiny_graph("cli-phone")
    model = make_network(member.team, graph)
    argv = ["profile", str(model.pk), "--device", "bench-pixel-7", "--delegate", "xnnpack", "--cores", "big"]
    argv += ["--threads", "3", "--cooldown-c", "40", "--cooldown-max-s", "120", "--timeout", "120"]
    argv += ["--backend", "android", "--cold-runs", "3", "--on-noise", "rerun:3"]
    argv += ["--url", live_server.url, "--token", member.key]
    outcome: dict[str, int] = {}
    cli = threading.Thread(target=lambda: outcome.update(rc=main(argv)))
    cli.start()
    try:
        job = wait_for(lambda: ProfilingJob.objects.filter(device=phone).first(), what="the phone's job")
        assert job.settings["delegate"] == "xnnpack" and job.settings["cores"] == [6, 7]
        assert job.settings["cooldown_c"] == 40.0 and job.settings["cooldown_max_s"] == 120.0
        assert job.settings["cold_runs"] == 3 and job.settings["backend"] == "android"
        assert (job.settings["on_noise"], job.settings["noise_reruns"]) == ("rerun", 3)
        starts = ColdStarts(FRESH_PROCESS, [ColdSample(50.0, 20.0), ColdSample(60.0, 21.0), ColdSample(90.0, 30.0)])
        finish_phone_job(job, graph, flags=[HOT_FLAG], cold_starts=starts)
    finally:
        cli.join(timeout=120)
    assert outcome.get("rc") == 0

    captured = capsys.readouterr()
    assert f"job #{job.pk} queued on bench-pixel-7 (android, xnnpack, 3 thread(s), cores 6,7)" in captured.err
    # three threads on the two big cores take turns: said when the job is queued
    assert (
        "warning: settings.threads: 3 threads on 2 pinned cores (cpu6, cpu7, the 'big' cluster) take turns"
        in captured.err
    )
    lines = captured.out.splitlines()
    assert (
        lines[0]
        == f"job #{job.pk} succeeded: cli-phone on bench-pixel-7 (android, xnnpack, 2 thread(s), cores 6,7 (big), 30 runs)"
    )
    assert lines[1].startswith(f"end-to-end ms: mean {job.result.e2e_mean:.3f}  std ")
    assert "median" not in lines[1].split("(")[0] and "(no median or p90: the tool reports averages only)" in lines[1]
    out = captured.out
    assert "peak memory: 41.9 MB" in out
    assert (
        "cold starts (3 fresh processes), load + first run ms: median 81.000  mean 90.333  std 26.274  "
        "min 70.000  max 120.000" in out
    )
    assert (
        "temperature: hottest before 38.5 °C (cpu-1-2), after 44.0 °C (cpu-1-2); cool-down: waited 12.5 s for < 40 °C"
        in out
    )
    assert "cpu: cpu6 schedutil 2.85 GHz, cpu7 schedutil 1.20 GHz" in out
    assert "phone: screen off, charging (usb), battery 87%" in out
    assert f"FLAGGED {HOT_FLAG}" in out
    assert "slowest operators by mean (the runtime reports no median)" in out
    assert "Convolution (NHWC, F32) IGEMM" in out

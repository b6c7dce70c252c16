"""The README's NAS loop, its code block executed as written, against a demo-like setup: a live
server, a real worker process measuring the host CPU and a real trainer process, after what
``latencylab demo`` does once its worker is up (``service_cmds.demo``: zoo models and the NB-201
training cells profiled through ordinary jobs, the host CPU's predictor queued for the trainer).

The code is read from README.md here, so the README cannot drift from what runs. Only the zoo
models and cells are fewer and shorter than the demo's (one model, one run; 10 cells) to keep the
test cheap.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from tests.waiting import wait_for

README = Path(__file__).resolve().parents[2] / "README.md"
# The demo's first cells: a job takes 3-4 s on a loaded 2-core machine, so the demo's 24 would
# take the whole budget. The predictor then answers unranked (too few test networks).
TEST_CELLS = 10


def readme_nas_loop() -> str:
    """The README's Python block of its "Python client and a NAS loop" section."""
    section = README.read_text().split("### Python client and a NAS loop", 1)[1]
    return section.split("```python\n", 1)[1].split("```", 1)[0]


@pytest.mark.django_db(transaction=True)
def test_the_readme_nas_loop_runs_as_written_against_a_demo_like_setup(
    live_server: Any, start_worker: Any, start_trainer: Any, capsys: Any, monkeypatch: Any
) -> None:
    from django.utils import timezone

    from devicelab.graph import zoo
    from devicelab.graph.nas import nb201
    from latencylab.commands import demo_showcase as showcase
    from latencylab.commands.service_cmds import DEMO_SETTINGS
    from server.accounts.models import Team
    from server.accounts.services import create_user_with_token
    from server.predictors.models import Predictor
    from server.profiling.models import ProfilingJob

    code = readme_nas_loop()
    # What makes it runnable on a fresh demo: the device found, not a hard-coded id, and a wait
    # for the demo's predictor before the batch of 1,000.
    assert 'lab.devices(kind="cpu", status="online")' in code and "wait_for_predictor" in code
    assert "sample_strings(1000, seed=0)" in code and "DEVICE = 1" not in code

    started = timezone.now()
    user, token = create_user_with_token("demo", "demo")
    team = Team.objects.get(name="demo")
    trainer = start_trainer()  # it starts while the worker registers its device
    device = start_worker().device()
    # A zoo model in the demo's scenario: its kernel types must not reach the cells' predictor.
    zoo_settings = dict(DEMO_SETTINGS, runs=1, warmup_runs=0)
    jobs = showcase.submit_jobs(team, user, device, [zoo.build("squeezenet_1_1")], zoo_settings)
    jobs += showcase.submit_jobs(
        team, user, device, showcase.host_training_graphs(TEST_CELLS), showcase.HOST_CELL_SETTINGS
    )
    ids = [j.pk for j in jobs]

    def ended() -> bool:
        states = list(ProfilingJob.objects.filter(pk__in=ids).values_list("state", flat=True))
        return all(s in ("succeeded", "failed", "cancelled") for s in states)

    wait_for(ended, 240, f"the demo's {len(ids)} profiling jobs")
    assert set(ProfilingJob.objects.filter(pk__in=ids).values_list("state", flat=True)) == {"succeeded"}

    line = showcase.queue_host_predictor(live_server.url, team, device, started)
    row = Predictor.objects.get(device=device)
    assert (row.team, row.method, row.state) == (team, showcase.HOST_METHOD, "queued")
    assert line == (
        f"host CPU predictor: #{row.pk} lasso v1 for {device.name} ({TEST_CELLS} networks) queued in the background; "
        f"watch it at {live_server.url}/predictors/"
    )

    monkeypatch.setenv("LATENCYLAB_URL", live_server.url)
    monkeypatch.setenv("LATENCYLAB_TOKEN", token)
    namespace: dict[str, Any] = {}
    try:
        exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - our own README
    finally:
        if "lab" in namespace:
            namespace["lab"].close()
    assert trainer.poll() is None, "the trainer exited"

    row.refresh_from_db()
    assert row.state == "ready" and row.e2e_mape is not None, row.failure_reason
    predicted, latency, pick = namespace["predicted"], namespace["latency"], namespace["pick"]
    assert len(predicted) == 1000 and predicted.predictor["id"] == row.pk
    assert all(p["latency_ms"] > 0 for p in predicted)
    # The pick is among the fastest tenth and the largest there.
    faster = sum(v < latency[pick] for v in latency.values())
    assert faster <= len(latency) // 10
    in_budget = [c for c in latency if latency[c] <= namespace["budget"]]
    assert nb201.from_string(pick).flops == max(nb201.from_string(c).flops for c in in_budget)
    picked = ProfilingJob.objects.select_related("result").get(pk=namespace["job"].id)
    # Measured as predicted: one thread on core 0, the scenario the demo's predictor is for.
    assert (picked.state, picked.settings["cores"], picked.settings["runs"]) == ("succeeded", showcase.HOST_CORES, 20)
    out = capsys.readouterr().out
    shown = re.search(rf"^{re.escape(pick)}: predicted (\d+\.\d\d) ms, measured median (\d+\.\d\d) ms$", out, re.M)
    assert shown, out
    assert float(shown.group(1)) == pytest.approx(latency[pick], abs=0.006)
    assert float(shown.group(2)) == pytest.approx(picked.result.e2e_median, abs=0.006)

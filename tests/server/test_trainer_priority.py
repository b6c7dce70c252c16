"""The trainer's tasks run at Linux's idle scheduling class (server/trainer.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.skipif(not hasattr(os, "SCHED_IDLE"), reason="Linux's idle scheduling class")
def test_a_trainer_task_process_takes_only_idle_cpu(tmp_path: Path) -> None:
    script = (
        "import os, django\n"
        "django.setup()\n"
        "from server.trainer import run_tasks_when_idle\n"
        "before = os.sched_getscheduler(0)\n"
        "run_tasks_when_idle(sender=None)\n"
        "print(before, os.sched_getscheduler(0))\n"
    )
    env = dict(os.environ, DJANGO_SETTINGS_MODULE="server.settings", LATENCYLAB_VAR_DIR=str(tmp_path))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    before, after = map(int, done.stdout.split()[-2:])
    assert before == os.SCHED_OTHER and after == os.SCHED_IDLE

"""``latencylab demo`` on embedded defaults: a fresh var/ ends with real results served by the API,
the host CPU's NB-201 cells measured and its predictor queued (the README's NAS loop), the qed
phones imported, a phone predictor queued, the OpenCL device (or how to get one) and an
admin log-in.

This is the README's first command, run the way a new user runs it (no DATABASE_URL, no
CELERY_BROKER_URL: SQLite and the filesystem broker, a real gunicorn and a real worker process),
so it also covers the whole upload -> job -> worker -> API flow on the embedded defaults even
when the rest of the suite runs against PostgreSQL and Redis.
"""

from __future__ import annotations

import os
import re
import socket
import sqlite3
import subprocess
import sys

import pytest


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _opencl_platforms() -> list[object]:
    import pyopencl as cl

    try:
        return list(cl.get_platforms())
    except cl.Error:  # the ICD loader finds no platform
        return []


@pytest.mark.slow
def test_demo_on_embedded_defaults(tmp_path):
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "LATENCYLAB_QUEUE_PREFIX", "DJANGO_SETTINGS_MODULE")
    }
    env["LATENCYLAB_VAR_DIR"] = str(tmp_path / "var")
    port = _free_port()
    cmd = [
        sys.executable,
        "-m",
        "latencylab.cli",
        "demo",
        "--exit",
        "--port",
        str(port),
        "--models",
        "squeezenet_1_1,mobilenet_v3_small",
        "--runs",
        "5",
        "--cells",
        "10",  # the demo's first 10 of 24, enough to train on (tests/e2e/test_readme_nas_loop.py)
    ]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    out = done.stdout
    # median, p90 and mean ms, CV, load ms
    assert re.search(r"squeezenet_1_1\s+(\d+\.\d+\s+){3}\d+\.\d%\s+\d+\s+succeeded", out), out
    check = re.search(r"API check: job (\d+) \(succeeded\) returns (\d+) per-operator timings", out)
    assert check and int(check.group(2)) > 10, out
    token = re.search(r"API token for user 'demo' \(team 'demo'\): (\S+)", out)
    assert token
    assert re.search(r"Dashboard log-in: user 'demo', password \S{8,}", out), out
    assert re.search(r"Admin log-in at http://127\.0\.0\.1:\d+/admin/: user 'admin', password \S{8,}", out), out
    # The qed phones as dataset devices, and a predictor for the one with the most data, queued
    # (with --exit it waits for the next run's trainer instead of being cut off mid-training).
    assert re.search(r"qed phones: 6 dataset devices \(pixel4, s10, mi8se, a03s, iphone7, iphonexs\), 67 ", out), out
    # The host CPU's predictor for the README's NAS loop: its NB-201 cells measured, the predictor
    # queued first (the loop waits for it), and the two variables the loop needs.
    cells = 10
    assert re.search(rf"^{cells} NB-201 cells for the host CPU's predictor: {cells} succeeded$", out, re.M), out
    assert re.search(rf"host CPU predictor: #1 lasso v1 for .+ \({cells} networks\) queued; it trains when", out), out
    assert re.search(r"phone predictor: #2 rf v1 for pixel4 \(67 networks\) queued; it trains when the service", out)
    assert f"export LATENCYLAB_URL=http://127.0.0.1:{port} LATENCYLAB_TOKEN={token.group(1)}" in out, out
    # The OpenCL device when this machine has a driver, else the one-line hint.
    if _opencl_platforms():
        assert re.search(r"^OpenCL device: \S.* \(#\d+\)$", out, re.M), out
    else:
        assert "OpenCL: no device, this system has no OpenCL driver: `sudo make system-deps`" in out, out
    # The embedded defaults really were used: the results sit in the SQLite file under var/.
    db = sqlite3.connect(tmp_path / "var" / "latencylab.sqlite3")
    (rows,) = db.execute("select count(*) from profiling_operatortiming").fetchone()
    assert rows > 20
    assert db.execute("select count(*) from devices_device where kind = 'imported'").fetchone() == (6,)
    assert db.execute("select method, state from predictors_predictor order by id").fetchall() == [
        ("lasso", "queued"),
        ("rf", "queued"),
    ]
    assert db.execute("select is_staff, is_superuser from auth_user where username = 'admin'").fetchone() == (1, 1)
    assert (tmp_path / "var" / "broker").is_dir()

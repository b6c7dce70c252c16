"""A job's page shows the machine's load read before its runs beside the CV, and which attempt a
rerun policy kept."""

from __future__ import annotations

import re
from collections.abc import Callable

import pytest

from devicelab.measure.machine_load import read_load

pytestmark = pytest.mark.django_db


def test_the_load_sits_beside_the_cv_and_a_rerun_says_which_attempt_was_kept(
    make_member: Callable, web_client: Callable, finished_job: Callable
) -> None:
    me = make_member()
    job = finished_job(me.team)
    load = read_load(window_s=0.1).as_dict()
    noise = {
        "policy": "rerun",
        "reruns_allowed": 2,
        "threshold_cv": 0.05,
        "kept": 1,
        "attempts": [
            {"cv": 0.31, "noisy": True, "central_ms": 4.0, "machine_load": "load 3.1"},
            {"cv": 0.04, "noisy": False, "central_ms": 3.1, "machine_load": "load 1.2"},
        ],
    }
    job.result.environment = {**job.result.environment, "machine_load": load, "noise": noise}
    job.result.save(update_fields=["environment"])
    html = web_client(me).get(f"/jobs/{job.pk}/").content.decode()
    tiles = html[html.index('<section class="tiles">') : html.index("</section>")]
    assert tiles.index("Variation (CV)") < tiles.index('id="tile-machine-load"')  # beside the CV
    tile = re.search(r'id="tile-machine-load">(.*?)</div></div>', tiles, re.S)
    assert tile and f"on {load['cores_online']} cores" in tile.group(1)
    assert load["summary"].split(";")[0] in tile.group(1)
    assert "kept attempt 2 of 2 (on_noise = rerun)" in tiles


def test_a_result_without_a_load_reading_shows_no_tile(
    make_member: Callable, web_client: Callable, finished_job: Callable
) -> None:
    me = make_member()
    job = finished_job(me.team)
    html = web_client(me).get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="tile-machine-load"' not in html and "kept attempt" not in html


def test_peak_memory_is_on_the_job_page_and_beside_each_side_of_a_comparison(
    make_member: Callable, web_client: Callable, finished_job: Callable
) -> None:
    me = make_member()
    a, b = finished_job(me.team), finished_job(me.team)
    memory = {"rss_baseline_mb": 212.0, "rss_peak_mb": 260.5, "above_baseline_mb": 48.5, "method": "VmHWM reset"}
    a.result.peak_memory_mb = 48.5
    a.result.environment = {**a.result.environment, "memory": {**memory, "what": "the measured session"}}
    a.result.save(update_fields=["peak_memory_mb", "environment"])
    b.result.peak_memory_mb = 96.0
    b.result.environment = {**b.result.environment, "memory": {"device_bytes": 96 * 2**20, "what": "device buffers"}}
    b.result.save(update_fields=["peak_memory_mb", "environment"])
    client = web_client(me)
    html = client.get(f"/jobs/{a.pk}/").content.decode()
    tile = re.search(r'id="tile-peak-memory">(.*?)</div></div>', html, re.S)
    assert (
        tile
        and "48.5" in tile.group(1)
        and "above the worker's 212 MB baseline (the measured session)" in tile.group(1)
    )
    html = client.get(f"/jobs/{b.pk}/").content.decode()
    tile = re.search(r'id="tile-peak-memory">(.*?)</div></div>', html, re.S)
    assert tile and "96.0" in tile.group(1) and "device buffers" in tile.group(1)
    html = client.get(f"/compare/?a={a.pk}&b={b.pk}").content.decode()
    assert 'id="peak-memory-a">peak memory 48.5 MB' in html and 'id="peak-memory-b">peak memory 96.0 MB' in html

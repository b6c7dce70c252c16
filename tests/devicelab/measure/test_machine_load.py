"""The machine's load before timed runs: a process spinning on the job's core is seen there (its
pid, its share, the core busy), and a process on another core is not counted on this one."""

from __future__ import annotations

import os
import sys
import time

import pytest

from devicelab.measure.machine_load import read_load
from tests.devicelab.cpu_hog import spinning_on


@pytest.mark.skipif(not hasattr(os, "sched_setaffinity"), reason="pinning a process needs sched_setaffinity")
def test_a_process_spinning_on_the_jobs_core_is_named_with_its_share() -> None:
    cores = sorted(os.sched_getaffinity(0))
    with spinning_on(cores[0]) as hog:
        time.sleep(0.3)
        load = read_load([cores[0]], window_s=0.5)
        elsewhere = read_load([cores[-1]], window_s=0.3) if len(cores) > 1 else None
    assert load.cores_watched == [cores[0]] and load.cores_online >= len(cores)
    others = {p.pid: p for p in load.others}
    assert hog in others and others[hog].cpu_percent > 10  # it spun (on a loaded machine, for a share of it)
    assert load.busy_percent[cores[0]] > 10
    assert load.load_average is not None and all(x >= 0 for x in load.load_average)
    if sys.platform.startswith("linux"):
        assert load.steal_percent is not None and 0 <= load.steal_percent <= 100
    d = load.as_dict()
    assert d["busy_percent"] == {str(cores[0]): load.busy_percent[cores[0]]}
    assert "other process" in d["summary"] and "python" in d["summary"].lower()
    if elsewhere is not None:  # watched elsewhere, the pinned hog is not on those cores
        assert hog not in {p.pid for p in elsewhere.others}

"""The sharing pages in a real browser (Debian's chromium against a live server).

A sweep measured for real on this machine's OpenCL device (PoCL; the paper's 512x1x512 at
R = 1, 2, 10, 20, 24 under a memory cap that R = 24 of the shared strategies does not fit, run once
for the module through the worker's ``sharing_on_device``) and stored as a worker stores it: its
page draws figure 7 (throughput per strategy with numpy's ceiling), figures 3-4 (p50/p99 with
the tenants' spread, the straggler gap) and figure 5 (footprints, memory-bound crosses, the
device's memory and the cap, the largest R that fits) from the stored rows, table 1 beside the
paper's V100 values, and filters its rows. Then, from the factories' sweeps: the list with
table 1's headline, the job page sending a sweep to its page, a workload switch, a watched
sweep's result swapped in when it is stored, a failed sweep's reason, and another team's 404.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from server.profiling.services import fail_job, report_progress
from server.tenancy.models import SharingMeasurement, SharingSweepResult
from tests.dashboard.test_browser import browser_page, log_in, screenshots
from tests.server.sharing_factories import NETWORK, claim, queued_sharing, sharing_result, stored_sharing

__all__ = ["browser_page", "screenshots"]  # the browser fixtures, shared with the main browser test

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHAPE = (512, 1, 512)
TENANTS = [1, 2, 10, 20, 24]
SHARED = ("time_only", "space_only", "space_time")


@pytest.fixture(scope="module")
def measured() -> dict[str, Any]:
    """A tiny sharing sweep run on this machine's first OpenCL device, as its worker runs one
    (about a second on PoCL): R = 24 of the shared strategies is over the memory cap."""
    from devicelab.backends.base import DeviceInfo
    from devicelab.backends.opencl import devices
    from devicelab.tenancy.gemm import GemmShape
    from devicelab.tenancy.gemm_strategies import gemm_footprint
    from devicelab.tenancy.on_device import sharing_on_device

    found = next(iter(devices.list_devices().values()), None)
    if found is None:
        pytest.fail("no OpenCL device: install PoCL (make system-deps)")
    shape = GemmShape(*SHAPE)
    cap = max(gemm_footprint(s, shape, 20).bytes(20) for s in SHARED) + 1
    assert all(gemm_footprint(s, shape, 24).bytes(24) > cap for s in SHARED)
    spec = {
        "shapes": [list(SHAPE)],
        "tenants": TENANTS,
        "strategies": ["exclusive", *SHARED],
        "warmup": 1,
        "runs": 3,
        "memory_cap_bytes": cap,
    }
    return sharing_on_device(DeviceInfo("opencl", found.identity, found.limits.name), spec).as_dict()


def _figure(page: Any, chart_id: str) -> list[dict[str, Any]]:
    """The traces plotly drew in ``chart_id`` (waiting for it to be drawn)."""
    page.wait_for_selector(f"#{chart_id}.js-plotly-plot")
    return list(
        page.evaluate(
            "id => document.getElementById(id).data.map(t => ({name: t.name, x: t.x, y: t.y,"
            " error_y: t.error_y, line: t.line}))",
            chart_id,
        )
    )


def _cell(page: Any, row: str, workload: str, part: str = ".ours") -> str:
    return page.inner_text(f"#table1 tr[data-row='{row}'] td[data-workload='{workload}'] {part}").strip()


def test_a_measured_sweep_draws_figures_7_3_4_5_and_table_1_from_its_stored_rows(
    live_server: Any,
    make_member: Callable[..., Any],
    make_device: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
    measured: dict[str, Any],
) -> None:
    page, console_errors = browser_page
    member = make_member()
    job = stored_sharing(member.team, make_device(kind="opencl", name="pocl-cpu"), measured)
    sweep = SharingSweepResult.objects.get(job=job)
    # the stored rows by (strategy, R); Any: their nullable columns are known to be set where read
    rows: dict[tuple[str, int], Any] = {
        (r.strategy, r.tenants): r for r in SharingMeasurement.objects.filter(sweep=sweep)
    }
    ok = {k: r for k, r in rows.items() if r.status == "ok"}
    assert all(r.correct for r in ok.values()), "every measured output matches its tenant's exclusive run"
    assert {k for k, r in rows.items() if r.status == "memory_bound"} == {(s, 24) for s in SHARED}
    base = live_server.url

    log_in(page, base, member, f"/sharing/sweeps/{job.pk}/")
    assert "Sharing sweep" in page.inner_text("h1") and "pocl-cpu" in page.inner_text("h1")

    # Figure 7: a line per strategy through the stored GFLOP/s, and numpy's ceiling.
    lines = {t["name"]: t for t in _figure(page, "chart-throughput")}
    labels = {
        "exclusive": "exclusive",
        "time_only": "time-only",
        "space_only": "space-only",
        "space_time": "space-time",
    }
    for strategy, label in labels.items():
        mine = sorted((r.tenants, r.throughput_gflops) for (s, _), r in ok.items() if s == strategy)
        assert lines[label]["x"] == [r for r, _ in mine]
        assert lines[label]["y"] == pytest.approx([g for _, g in mine])
    assert lines["space-time"]["x"] == [1, 2, 10, 20]
    # the ceiling per R: numpy on the R tenants' own operands, measured between the strategies' rounds
    per_r = (sweep.ceiling or {})["shapes"]["512x1x512"]["per_tenants"]
    ceiling = lines["numpy ceiling, same tenants"]
    assert ceiling["x"] == TENANTS and ceiling["y"] == pytest.approx([per_r[str(r)]["gflops"] for r in TENANTS])
    assert len({round(g, 6) for g in ceiling["y"]}) > 1, "measured per R, not one number drawn flat"
    assert "every tenant's own" in page.inner_text("#ceiling-what")
    exclusive_at_2 = page.inner_text("#sharing-rows tr[data-strategy='exclusive'][data-tenants='2'] td:nth-child(5)")
    assert "x [" in exclusive_at_2  # its share of the ceiling with the interval

    # Figure 3: p50 and p99 per strategy, whiskers up to the slowest tenant's p50.
    latency = {t["name"]: t for t in _figure(page, "chart-latency")}
    space_only = sorted((r.tenants, r) for (s, _), r in ok.items() if s == "space_only")
    assert latency["space-only p50"]["y"] == pytest.approx([r.latency_p50_ms for _, r in space_only])
    assert latency["space-only p99"]["y"] == pytest.approx([r.latency_p99_ms for _, r in space_only])
    assert latency["space-only p99"]["line"]["dash"] == "dot"
    assert latency["space-only p50"]["error_y"]["array"] == pytest.approx(
        [r.data["straggler"]["slowest_p50_ms"] - r.latency_p50_ms for _, r in space_only]
    )

    # Figure 4: the gap in percent; exclusive (one tenant) is not drawn.
    gaps = {t["name"]: t for t in _figure(page, "chart-straggler")}
    assert sorted(gaps) == ["space-only", "space-time", "time-only"]
    assert gaps["time-only"]["y"] == pytest.approx(
        [100 * r.straggler_gap_ratio for _, r in sorted((r.tenants, r) for (s, _), r in ok.items() if s == "time_only")]
    )

    # Figure 5: footprints, the memory-bound crosses at R = 24, the model up to the largest R that
    # fits, the device's memory and the cap.
    memory = {t["name"]: t for t in _figure(page, "chart-memory")}
    mib = 2**20  # figure 5 is in MiB
    assert memory["space-time"]["y"] == pytest.approx(
        [rows[("space_time", r)].memory_bytes / mib for r in (1, 2, 10, 20)]
    )
    bound = memory["memory-bound (not run)"]
    assert bound["x"] == [24, 24, 24] and bound["y"] == pytest.approx(
        [rows[(s, 24)].memory_bytes / mib for s in SHARED]
    )
    assert memory["space-time: fits up to R = 20"]["x"][-1] == 20
    device_line = next(t for name, t in memory.items() if name.startswith("device memory"))
    assert device_line["y"] == pytest.approx([sweep.device["global_mem_size"] / mib] * 2)
    cap_line = next(t for name, t in memory.items() if name.startswith("memory cap"))
    assert cap_line["y"] == pytest.approx([sweep.spec["memory_cap_bytes"] / mib] * 2)
    assert page.inner_text("#largest-r tr[data-strategy='space_time']").split()[-3:] == ["20", "24", "20"]
    screenshots(page, "sharing-01-sweep")

    # Table 1: ours from the stored table 1, the paper's V100 values in brackets.
    (entry,) = sweep.table1
    at = {p["tenants"]: p for p in entry["per_tenants"]}
    assert sorted(at) == [2, 10, 20]
    assert _cell(page, "r10", "512x1x512") == f"{at[10]['speedup']:.3g}×"
    assert _cell(page, "r20", "512x1x512") == f"{at[20]['speedup']:.3g}×"
    assert _cell(page, "geomean", "512x1x512") == f"{entry['speedup_geomean']:.3g}×"
    paper = [_cell(page, row, "512x1x512", ".paper") for row in ("r10", "r20", "geomean", "next-best")]
    assert paper == ["[1.21×]", "[2.14×]", "[2.48×]", "[time-only]"]
    assert _cell(page, "next-best", "512x1x512") == entry["next_best"].replace("_", "-")

    assert "17 measured, 3 memory-bound, 0 unsupported, 0 failed (of 20)" in page.inner_text("#row-counts")

    # The rows, filtered on the server by strategy: its measured rows and its memory-bound one.
    assert page.locator("#sharing-rows tbody tr").count() == len(rows)
    page.select_option("#row-filter select[name=strategy]", "space_time")
    page.wait_for_url("**strategy=space_time*")
    shown = page.eval_on_selector_all(
        "#sharing-rows tbody tr",
        "rows => rows.map(r => [r.dataset.strategy, Number(r.dataset.tenants), r.dataset.status])",
    )
    assert shown == [["space_time", r, "ok"] for r in (1, 2, 10, 20)] + [["space_time", 24, "memory_bound"]]
    assert "memory-bound" in page.inner_text("#sharing-rows tr[data-tenants='24']")
    screenshots(page, "sharing-02-rows")
    assert console_errors == []


def test_list_redirect_workload_switch_live_swap_failure_and_team_scoping(
    live_server: Any,
    make_member: Callable[..., Any],
    make_device: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
) -> None:
    page, console_errors = browser_page
    member, stranger = make_member(), make_member()
    device = make_device(kind="opencl", name="pocl-cpu")
    done = stored_sharing(member.team, device)
    failed = queued_sharing(member.team, device)
    assert fail_job(failed.pk, claim(failed), "the device lost its OpenCL context (CL_OUT_OF_RESOURCES)")
    watched = queued_sharing(member.team, device)
    theirs = stored_sharing(stranger.team, device)
    base = live_server.url
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)

    # The list: the team's sweeps only, with table 1's geometric mean per workload, the failure.
    log_in(page, base, member, "/sharing/")
    listed = page.eval_on_selector_all("#sharing-jobs tbody tr", "rows => rows.map(r => Number(r.dataset.jobId))")
    assert sorted(listed) == sorted([done.pk, failed.pk, watched.pk])
    headline = SharingSweepResult.objects.get(job=done).table1[0]
    row = page.locator(f"#sharing-jobs tr[data-job-id='{done.pk}']")
    assert f"512x1x512 {headline['speedup_geomean']:.3g}×" in row.inner_text()
    assert "the time budget ran out" in row.inner_text()
    assert "CL_OUT_OF_RESOURCES" in page.locator(f"#sharing-jobs tr[data-job-id='{failed.pk}']").inner_text()
    screenshots(page, "sharing-03-list")

    # The jobs list says what a sharing sweep measures; the job page sends it to its page.
    page.goto(f"{base}/jobs/")
    assert "512x1x512, 256x128x1152, mobilenet_v2 · R 1,2,10,20,64 · 5 strategies · 3 runs" in page.inner_text("main")
    page.goto(f"{base}/jobs/{done.pk}/")
    page.wait_for_url(f"{base}/sharing/sweeps/{done.pk}/")
    # the paper's values stand beside the shapes it has, not beside the network
    assert _cell(page, "geomean", "256x128x1152", ".paper") == "[3.23×]"
    assert page.locator(f"#table1 td[data-workload='{NETWORK}'] .paper").count() == 0
    assert "mobilenet_v2 at R = 64" in page.inner_text("#not-measured")

    # The figures switch workload: the network has no numpy ceiling.
    page.click(f"#workload-tabs a[data-workload='{NETWORK}']")
    page.wait_for_url(f"**workload={NETWORK}*")
    names = [t["name"] for t in _figure(page, "chart-throughput")]
    assert "space-time" in names and not any(n.startswith("numpy") for n in names)

    # A failed sweep says why.
    page.goto(f"{base}/jobs/{failed.pk}/")
    page.wait_for_url(f"{base}/sharing/sweeps/{failed.pk}/")
    assert "CL_OUT_OF_RESOURCES" in page.inner_text("#failure")

    # A watched sweep: live progress, then its result swapped in when the worker stores it.
    page.goto(f"{base}/sharing/sweeps/{watched.pk}/")
    token = claim(watched)
    assert report_progress(watched.pk, token, 0.5, "256x128x1152 R=10: timed round 2/3")
    page.wait_for_function("() => document.querySelector('#job-progress').getAttribute('aria-valuenow') === '50'")
    assert "256x128x1152 R=10: timed round 2/3" in page.inner_text("#job-progress")
    from devicelab.tenancy.results import SharingSweepRecord
    from server.tenancy.services import ingest_sharing

    assert ingest_sharing(watched.pk, token, SharingSweepRecord.from_dict(sharing_result())) is not None
    page.wait_for_selector("#job-result #chart-throughput.js-plotly-plot")
    assert page.locator("#table1 tr[data-row='geomean'] td").count() == 3
    screenshots(page, "sharing-04-swapped")

    # Another team's sweep is nobody's business here.
    paths = (f"/sharing/sweeps/{theirs.pk}/", f"/jobs/{theirs.pk}/", f"/sharing/sweeps/{theirs.pk}/result/")
    for path in paths:
        assert page.goto(base + path).status == 404
    assert missing == [base + p for p in paths]
    # the browser logs each refused page (and the favicon.ico that Django's bare 404 page makes it ask for)
    assert {e for e in console_errors if "status of 404" not in e} == set()

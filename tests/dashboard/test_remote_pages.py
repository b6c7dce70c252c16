"""The remote run page in a real browser (Debian's chromium against a live server).

A remote run measured for real on this machine (the tiny classifier served on loopback, 5 requests
under ``unshaped`` and a slow stored profile, through the worker's ``remote_on_device``) and
stored as a worker stores it: its page draws the stacked bars of each profile's medians (upload,
the server's stages, download) and a box of every request's end to end per profile from the
stored run, and lists the medians in its table, the remainder no part's clock holds as its own
column. Then: the jobs list says what the run measures
and its job page sends it to its page, a watched run's result is swapped in when it is stored, a
failed run says why, ``/remote/`` lists the runs from the nav, and another team's run is a 404.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from dashboard.formatting import ms
from devicelab.backends.base import DeviceInfo
from devicelab.remote.on_device import remote_on_device
from devicelab.remote.results import RemoteRunRecord
from server.profiling.services import claim_job, fail_job, report_progress
from server.remote.models import RemoteScenarioResult
from server.remote.services import ingest_remote, profile_summaries, submit_remote_run
from tests.dashboard.test_browser import browser_page, log_in, screenshots
from tests.dashboard.test_browser_charts import LEGEND_JS
from tests.devicelab.remote.tiny import tiny_classifier
from tests.server.remote_factories import remote_result

__all__ = ["browser_page", "screenshots"]  # the browser fixtures, shared with the main browser test

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SLOW = {"name": "slow-link", "latency_ms": 20, "throughput_mbps": 8, "cv": 0}


@pytest.fixture
def lab(make_member: Callable[..., Any], make_device: Callable[..., Any], make_network: Callable[..., Any]) -> Any:
    """A member with the tiny classifier and a slow stored profile; an online CPU device; ``submit(**raw)``."""
    from server.selection.services import store_network_profile

    member = make_member()
    store_network_profile(member.team, SLOW)
    model = make_network(member.team, tiny_classifier())
    device = make_device("cpu", name="host-cpu")

    def submit(**raw: Any) -> Any:
        return submit_remote_run(member.team, model, device, {"profiles": ["unshaped", "slow-link"], **raw})

    return {"member": member, "device": device, "model": model, "submit": submit}


def _claim(job: Any) -> str:
    token = f"browser-{job.pk}"
    assert claim_job(job.pk, token) is not None
    return token


def _figure(page: Any, chart_id: str) -> list[dict[str, Any]]:
    """The traces plotly drew in ``chart_id`` (waiting for it to be drawn)."""
    page.wait_for_selector(f"#{chart_id}.js-plotly-plot")
    return list(
        page.evaluate("id => document.getElementById(id).data.map(t => ({name: t.name, x: t.x, y: t.y}))", chart_id)
    )


def test_a_measured_run_draws_its_breakdown_its_distributions_and_its_table(
    live_server: Any, lab: dict[str, Any], browser_page: tuple[Any, list[str]], screenshots: Callable[[Any, str], None]
) -> None:
    page, console_errors = browser_page
    job = lab["submit"](requests=5, warmup=1)
    device = lab["device"]
    measured = remote_on_device(DeviceInfo("cpu", device.identity, device.name), tiny_classifier(), job.settings)
    assert ingest_remote(job.pk, _claim(job), measured) is not None
    run = RemoteScenarioResult.objects.get(job=job)
    fast, slow = profile_summaries(run)
    base = live_server.url

    log_in(page, base, lab["member"], f"/remote/runs/{job.pk}/")
    assert "Remote run of tiny_classifier" in page.inner_text("h1") and "host-cpu" in page.inner_text("h1")
    assert page.inner_text("#profiles").split()[:2] == ["unshaped", "slow-link"]

    # The stacked bars: one per profile, a segment per part, each the stored median.
    bars = {t["name"]: t for t in _figure(page, "chart-remote-breakdown")}
    assert list(bars) == [
        "upload",
        "server: decode",
        "server: resize + crop",
        "server: normalize",
        "server: compute",
        "server: post-processing",
        "server: other",
        "download",
        "remainder (no part's clock)",
    ]
    assert all(t["y"] == ["unshaped", "slow-link"] for t in bars.values())
    assert bars["upload"]["x"] == pytest.approx([fast.upload_median_ms, slow.upload_median_ms])
    assert bars["download"]["x"] == pytest.approx([fast.download_median_ms, slow.download_median_ms])
    # the download is timed apart (it holds the slow link's 20 ms delay), the remainder is its own part
    assert bars["remainder (no part's clock)"]["x"] == pytest.approx(
        [fast.remainder_median_ms, slow.remainder_median_ms]
    )
    assert slow.download_median_ms >= 20.0 and abs(slow.remainder_median_ms or 0.0) < 15.0
    assert bars["server: compute"]["x"] == pytest.approx([fast.compute_median_ms, slow.compute_median_ms])
    assert bars["server: decode"]["x"] == pytest.approx([fast.stages_ms["decode"], slow.stages_ms["decode"]])
    assert bars["upload"]["x"][1] > bars["upload"]["x"][0] + 150  # 163 kB at 1 MB/s after 20 ms

    # The end-to-end boxes: every timed request of each profile.
    boxes = {t["name"]: t for t in _figure(page, "chart-remote-e2e")}
    for profile in ("unshaped", "slow-link"):
        requests = run.data["results"][profile]["requests"]
        assert boxes[profile]["x"] == pytest.approx([r["e2e_ms"] for r in requests]) and len(requests) == 5

    # The table: the stored medians, in the order the job named the profiles.
    rows = page.eval_on_selector_all("#remote-profiles tbody tr", "rows => rows.map(r => r.dataset.profile)")
    assert rows == ["unshaped", "slow-link"]
    slow_row = page.locator("#remote-profiles tr[data-profile='slow-link']")
    assert slow_row.locator(".upload").inner_text() == f"{slow.upload_median_ms:.1f}"
    assert slow_row.locator(".share").inner_text() == f"{slow.network_share * 100:.1f}%"
    assert slow_row.locator(".remainder").inner_text() == ms(slow.remainder_median_ms)
    assert "user" in slow_row.inner_text() and "unshaped" in page.inner_text(
        "#remote-profiles tr[data-profile='unshaped']"
    )
    assert page.locator("#remote-tiles .tile[data-profile='slow-link']").count() == 1
    screenshots(page, "remote-01-run")

    # At a phone's width the breakdown's legend wraps to a row an entry, above the bars and whole
    # (no scroll bar over them), and the page does not scroll sideways.
    page.set_viewport_size({"width": 420, "height": 900})
    page.reload()
    page.wait_for_selector("#chart-remote-breakdown .legend")
    boxes = page.evaluate(LEGEND_JS, "chart-remote-breakdown")
    assert boxes["legend"][3] <= boxes["plot"][1] and boxes["scroll"] == 0, boxes
    assert page.evaluate("() => document.documentElement.scrollWidth") <= 420
    screenshots(page, "remote-01-run-narrow")
    page.set_viewport_size({"width": 1366, "height": 900})

    # The jobs list says what the run measures; the job page sends it to its page.
    page.goto(f"{base}/jobs/")
    assert "unshaped, slow-link · 5 requests · jpeg" in page.inner_text("main")
    page.goto(f"{base}/jobs/{job.pk}/")
    page.wait_for_url(f"{base}/remote/runs/{job.pk}/")
    assert console_errors == []


def test_a_watched_run_is_swapped_in_a_failed_one_says_why_and_others_are_404(
    live_server: Any,
    lab: dict[str, Any],
    make_member: Callable[..., Any],
    make_network: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
) -> None:
    page, console_errors = browser_page
    base = live_server.url
    watched = lab["submit"](requests=5, warmup=1)
    failed = lab["submit"]()
    assert fail_job(failed.pk, _claim(failed), "the inference endpoint for 'tiny_classifier' exited: MemoryError")
    stranger = make_member()
    theirs = submit_remote_run(stranger.team, make_network(stranger.team), lab["device"], {"profiles": ["lte"]})
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)

    log_in(page, base, lab["member"], f"/remote/runs/{watched.pk}/")
    token = _claim(watched)
    assert report_progress(watched.pk, token, 0.5, "round 3/5")
    page.wait_for_function("() => document.querySelector('#job-progress').getAttribute('aria-valuenow') === '50'")
    assert "round 3/5" in page.inner_text("#job-progress")
    record = RemoteRunRecord.from_dict(remote_result("tiny_classifier", watched.settings))
    assert ingest_remote(watched.pk, token, record) is not None
    page.wait_for_selector("#job-result #chart-remote-breakdown.js-plotly-plot")
    assert page.locator("#remote-profiles tbody tr").count() == 2
    screenshots(page, "remote-02-swapped")

    page.goto(f"{base}/jobs/{failed.pk}/")
    page.wait_for_url(f"{base}/remote/runs/{failed.pk}/")
    assert "exited: MemoryError" in page.inner_text("#failure")

    # /remote/ lists the team's runs from the nav, newest first, each profile's median end to end
    page.click("nav.nav >> text=Remote")
    page.wait_for_url(f"{base}/remote/")
    assert page.get_attribute("nav.nav a.active", "href") == "/remote/"
    listed = page.eval_on_selector_all("#remote-runs tbody tr", "rows => rows.map(r => r.dataset.jobId)")
    assert listed == [str(failed.pk), str(watched.pk)]
    lte_e2e = page.inner_text(f"#remote-runs tr[data-job-id='{watched.pk}'] [data-profile='slow-link']")
    assert lte_e2e == "slow-link 312.7 ms"
    assert "exited: MemoryError" in page.inner_text(f"#remote-runs tr[data-job-id='{failed.pk}']")
    screenshots(page, "remote-03-list")
    page.click(f"#remote-runs tr[data-job-id='{watched.pk}'] a")
    page.wait_for_url(f"{base}/remote/runs/{watched.pk}/")
    assert page.inner_text(".crumbs").startswith("Remote runs")

    paths = (f"/remote/runs/{theirs.pk}/", f"/jobs/{theirs.pk}/", f"/remote/runs/{theirs.pk}/result/")
    for path in paths:
        assert page.goto(base + path).status == 404
    assert missing == [base + p for p in paths]
    assert {e for e in console_errors if "status of 404" not in e} == set()

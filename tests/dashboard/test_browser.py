"""The dashboard in a real browser against a live server and a real worker process.

Debian's chromium, driven by Playwright: log in, see an upload refused inline, upload two models,
submit a job for both on the host CPU (one submission, two jobs), watch the job page's progress
bar advance to done, see the per-operator chart drawn with data points, open the comparison of
the two jobs, and find no error in the browser console. Screenshots of each step go to
``var/screenshots/`` for a person to look at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from devicelab.graph import graph_to_json
from tests.e2e import conftest as e2e
from tests.e2e.helpers import LONG, long_graph, tiny_graph
from tests.waiting import wait_for

# The worker fixtures of the end-to-end tests: real `python -m workers.run` processes against the
# test database, on queues behind this session's prefix (e2e_settings is autouse: this process
# enqueues with the same prefix and timings as the workers it starts).
queue_prefix = e2e.queue_prefix
start_worker = e2e.start_worker
e2e_settings = e2e.e2e_settings

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CHROMIUM = Path("/usr/bin/chromium")
# No sandbox (CI runs as root in a container), no GPU, and none of the browser's own traffic.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
PASSWORD = "browser-test-password-1"


@pytest.fixture
def browser_page(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, list[str]]]:
    """A Chromium page at a laptop's size, and the list its console errors are collected into."""
    # No skip: a missing browser is a broken install, and the dashboard is not tested without it.
    import playwright.sync_api as playwright_api

    assert CHROMIUM.exists(), f"{CHROMIUM} is missing: install Debian's chromium (make system-deps)"
    # Playwright's sync API keeps an event loop in this thread; Django would refuse ORM calls
    # made from it (the fixtures' waits), although nothing here runs concurrently.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    errors: list[str] = []
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1366, "height": 900})
        page.set_default_timeout(30_000)
        page.on("console", lambda m: errors.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
        page.on("pageerror", lambda exc: errors.append(f"page error: {exc}"))
        try:
            yield page, errors
        finally:
            # ORM calls made while Playwright's loop is current get their own connections (Django
            # keys connections by async context there); close them, or they outlive the test
            # database and PostgreSQL refuses to drop it.
            from django.db import connections

            connections.close_all()
            browser.close()


@pytest.fixture
def screenshots(settings: Any) -> Callable[[Any, str], None]:
    """``shot(page, name)`` saves a full-page screenshot to var/screenshots/<name>.png."""
    folder = Path(settings.VAR_DIR) / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)

    def shot(page: Any, name: str) -> None:
        page.screenshot(path=str(folder / f"{name}.png"), full_page=True)

    return shot


def log_in(page: Any, base: str, member: Any, next_path: str) -> None:
    """Sign ``member`` in (password ``PASSWORD``) through the log-in page and land on ``next_path``."""
    member.user.set_password(PASSWORD)
    member.user.save()
    page.goto(f"{base}/accounts/login/?next={next_path}")
    page.fill("#id_username", member.user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(base + next_path)


def _graph_file(tmp_path: Path, graph: Any) -> Path:
    path = tmp_path / f"{graph.name}.json"
    path.write_text(graph_to_json(graph))
    return path


def _bad_graph_file(tmp_path: Path) -> Path:
    """A graph JSON whose ReLU is an operator outside the vocabulary."""
    text = graph_to_json(tiny_graph("bad-net")).replace('"type": "relu"', '"type": "frobnicate"')
    path = tmp_path / "bad-net.json"
    path.write_text(text)
    return path


def _points(page: Any, chart_id: str) -> int:
    """How many data points the plotly chart ``chart_id`` holds (its traces' y values)."""
    return int(
        page.evaluate(
            "id => { const el = document.getElementById(id);"
            " return el && el.data ? el.data.reduce((n, t) => n + (t.y ? t.y.length : 0), 0) : 0; }",
            chart_id,
        )
    )


def test_log_in_upload_submit_watch_progress_and_compare(
    live_server: Any,
    start_worker: Callable[..., Any],
    make_member: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
    tmp_path: Path,
) -> None:
    page, console_errors = browser_page
    device = start_worker().device()
    member = make_member()
    member.user.set_password(PASSWORD)
    member.user.save()
    base = live_server.url

    # Log in: the overview lists the worker's device.
    page.goto(base + "/")
    assert "/accounts/login/" in page.url
    screenshots(page, "01-login")
    page.fill("#id_username", member.user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_url(base + "/")
    assert page.locator(f"#fleet-table a[href='/devices/{device.pk}/']").inner_text() == device.name
    screenshots(page, "02-overview")

    # An upload outside the vocabulary is refused next to the file field, naming node and operator.
    page.goto(base + "/models/")
    page.set_input_files("#id_file", str(_bad_graph_file(tmp_path)))
    page.click("#upload-form button[type=submit]")
    error = page.locator(".field-error").inner_text()
    assert "frobnicate" in error and "relu_0" in error, error
    screenshots(page, "03-upload-refused")

    # Two models uploaded through the form; the detail page draws MACs by operator type.
    slow, quick = long_graph("browser-long"), tiny_graph("browser-tiny")
    for graph in (quick, slow):
        page.goto(base + "/models/")
        page.set_input_files("#id_file", str(_graph_file(tmp_path, graph)))
        page.click("#upload-form button[type=submit]")
        page.wait_for_selector("#chart-macs-by-type.js-plotly-plot")
        assert page.locator("h1").inner_text().strip() == graph.name
    assert _points(page, "chart-macs-by-type") > 0
    screenshots(page, "04-model")

    # One submission, both models on the device: two jobs.
    page.goto(base + "/jobs/new/")
    page.get_by_label(f"{slow.name} (#", exact=False).check()
    page.get_by_label(f"{quick.name} (#", exact=False).check()
    page.get_by_label(f"{device.name} (#{device.pk}", exact=False).check()
    # The e2e tests' long settings: several seconds of measuring, so the bar has time to move.
    page.fill("#id_runs", str(LONG["runs"]))
    page.fill("#id_warmup_runs", str(LONG["warmup_runs"]))
    screenshots(page, "05-submit")
    page.click("#submit-form button[type=submit]")
    page.wait_for_url(base + "/jobs/")
    assert "Queued 2 jobs" in page.locator(".messages").inner_text()

    # The slow model's job page: the bar moves from where it was to done, then the result appears.
    page.locator("tr", has_text=slow.name).locator("a[href^='/jobs/']").first.click()
    page.wait_for_selector("#job-progress")
    page.evaluate(
        """() => {
            const bar = document.getElementById('job-progress');
            window.__seen = [Number(bar.getAttribute('aria-valuenow'))];
            new MutationObserver(() => window.__seen.push(Number(bar.getAttribute('aria-valuenow'))))
                .observe(bar, {attributes: true, attributeFilter: ['aria-valuenow']});
        }"""
    )
    page.wait_for_selector("#job-progress[data-active='0']", timeout=120_000)
    seen = page.evaluate("() => window.__seen")
    assert seen[0] < 100 and seen[-1] == 100, seen
    assert seen == sorted(seen), f"the progress bar went backwards: {seen}"
    assert any(0 < v < 100 for v in seen), f"no progress was shown between start and done: {seen}"
    page.wait_for_selector("#chart-per-operator.js-plotly-plot")
    assert page.locator("[data-state-for]").first.inner_text() == "succeeded"
    assert _points(page, "chart-per-operator") >= len(slow.operators) // 3
    assert page.locator("#chart-per-operator g.point").count() > 0  # drawn, not only loaded
    rows = page.locator("#job-ops tbody tr")
    assert rows.count() >= len(slow.operators)
    screenshots(page, "06-job")

    # The operator table filters by type and sorts by time, slowest first on the second click.
    page.select_option('[data-type-filter-for="job-ops"]', "add")
    assert 0 < page.locator("#job-ops tbody tr:visible").count() < rows.count()
    assert " of " in page.locator('[data-count-for="job-ops"]').inner_text()
    page.select_option('[data-type-filter-for="job-ops"]', "")
    median_header = page.locator("#job-ops th", has_text="Median ms")  # the headline, first of the times
    median_header.click()
    median_header.click()
    medians = [float(v) for v in rows.evaluate_all("rs => rs.map(r => r.cells[6].dataset.value).filter(v => v)")]
    assert medians == sorted(medians, reverse=True) and len(medians) > 3

    # Compare the two jobs (two models on one device) once the quick one is done too.
    from server.profiling.models import ProfilingJob

    team_jobs = ProfilingJob.objects.for_team(member.team)
    wait_for(lambda: team_jobs.filter(state="succeeded").count() == 2, 120, "both jobs to succeed")
    page.reload()
    page.wait_for_selector("#compare-with")
    page.click(".compare-form button[type=submit]")
    page.wait_for_selector("#chart-compare-types.js-plotly-plot")
    assert _points(page, "chart-compare-types") > 0
    assert page.locator("#compare-ops tbody tr").count() > 0
    screenshots(page, "07-compare")

    page.goto(base + f"/devices/{device.pk}/")
    page.wait_for_selector("#chart-latency-history.js-plotly-plot")
    screenshots(page, "08-device")

    assert console_errors == []

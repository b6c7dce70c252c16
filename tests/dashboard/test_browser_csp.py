"""Under the Content-Security-Policy, every page still works in a real browser: the dashboard's
charts and controls, the API docs (Swagger UI and ReDoc), and the browser reports no violation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.dashboard.test_browser import browser_page, log_in, screenshots

__all__ = ["browser_page", "screenshots"]  # the browser fixtures, shared with the main browser test

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_pages_work_under_the_content_security_policy(
    live_server: Any,
    make_member: Callable[..., Any],
    finished_job: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
) -> None:
    page, console_errors = browser_page
    violations: list[str] = []
    page.on("console", lambda m: violations.append(m.text) if "Content Security Policy" in m.text else None)
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    member = make_member()
    job = finished_job(member.team)
    base = live_server.url

    # The API docs: Swagger UI draws the operations, ReDoc its menu.
    response = page.goto(base + "/api/docs/")
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.wait_for_selector(".swagger-ui .opblock", timeout=60_000)
    assert page.locator(".swagger-ui .opblock").count() > 5
    screenshots(page, "csp-01-swagger")
    page.goto(base + "/api/redoc/")
    page.wait_for_selector("[role=menuitem], .menu-content", timeout=60_000)
    screenshots(page, "csp-02-redoc")

    # The dashboard: a job page draws its plotly charts; the jobs filter submits itself.
    log_in(page, base, member, "/jobs/")
    page.select_option("select[name=state]", "succeeded")
    page.wait_for_url(base + "/jobs/?state=succeeded")
    page.goto(base + f"/jobs/{job.pk}/")
    page.wait_for_selector(".js-plotly-plot", timeout=60_000)
    screenshots(page, "csp-03-job")

    # ReDoc's "powered by" logo comes from its vendor's CDN: blocked by design (the lab loads
    # nothing from other origins), and nothing of ours.
    def ours(messages: list[str]) -> list[str]:
        return [m for m in messages if "cdn.redoc.ly" not in m]

    assert missing == []
    assert ours(violations) == []
    assert ours(console_errors) == []

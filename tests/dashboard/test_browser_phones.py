"""Phones in a real browser (Debian's chromium against a live server): a phone's page shows its
attributes and draws its thermal history; the submit form narrows delegates, core clusters and
the cool-down to what every chosen device offers, and a phone job sent from it shows them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from devicelab.backends.base import Capabilities
from tests.dashboard.factories import graph_with_ops
from tests.dashboard.test_browser import browser_page, log_in, screenshots
from tests.server.phone_factories import finish_phone_job, make_phone

__all__ = ["browser_page", "screenshots"]  # the browser fixtures, shared with the main browser test

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CPU = Capabilities(precisions=("fp32",), max_threads=2, pins_cores=True, cores=(0, 1), formats=("onnx",))


def _disabled(page: Any, selector: str) -> bool:
    return bool(page.eval_on_selector(selector, "el => el.disabled"))


def _trace_points(page: Any, chart_id: str) -> dict[str, int]:
    """Each drawn trace of a plotly chart and how many values it holds."""
    return dict(
        page.evaluate(
            "id => { const el = document.getElementById(id);"
            " return el && el.data ? el.data.map(t => [t.name, (t.y || []).filter(v => v !== null).length]) : []; }",
            chart_id,
        )
    )


def test_a_phone_page_shows_its_attributes_and_draws_its_thermal_history(
    live_server: Any,
    make_member: Callable[..., Any],
    make_device: Callable[..., Any],
    make_network: Callable[..., Any],
    make_job: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
) -> None:
    page, console_errors = browser_page
    member = make_member()
    phone = make_phone(make_device, name="browser-pixel-7")
    graph = graph_with_ops(12, name="thermal-net")
    model = make_network(member.team, graph)
    jobs = [
        finish_phone_job(
            make_job(member.team, model=model, device=phone, settings={"delegate": "xnnpack", "cores": "big"}),
            graph,
            finished_minutes_ago=minutes,
            hot_c=hot,
            flags=[f"hot: {hot} °C at start > 40 °C"] if hot > 40 else [],
        )
        for minutes, hot in ((40, 35.0), (20, 41.0), (5, 44.5))
    ]

    log_in(page, live_server.url, member, f"/devices/{phone.pk}/")
    page.wait_for_selector("#chart-thermal-history .main-svg")
    facts = page.inner_text(".facts")
    for text in ("Pixel 7", "GS201", "arm64-v8a", "14 (SDK 34)", "big: cores 6-7 @ 2.85 GHz", "Mali-G710", "7.4 GiB"):
        assert text in facts, text
    drawn = _trace_points(page, "chart-thermal-history")
    assert drawn == {"hottest zone before": 3, "hottest zone after": 3, "battery before": 3, "cool-down threshold": 3}
    assert _trace_points(page, "chart-latency-history") == {f"thermal-net (#{model.pk})": 3}
    screenshots(page, "phone-device")

    # The last job's page: the mean (no histogram), its flag, and the conditions it ran in.
    page.click(f"a[href='/jobs/{jobs[-1].pk}/']")
    page.wait_for_selector("#chart-cold-warm .main-svg")
    assert "the tool reports averages only" in page.inner_text("#tile-mean-only")
    assert page.inner_text("#tile-flags .badge") == "hot"
    assert page.is_visible("#no-samples") and page.query_selector("#chart-samples") is None
    conditions = page.inner_text("#conditions")
    for text in ("xnnpack", "6-7 (big cluster)", "waited 12.5 s to cool below 40 °C", "schedutil", "44.5 °C"):
        assert text in conditions, text
    screenshots(page, "phone-job")
    assert console_errors == []


def test_the_submit_form_narrows_phone_settings_and_a_phone_job_shows_them(
    live_server: Any,
    make_member: Callable[..., Any],
    make_device: Callable[..., Any],
    make_network: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
) -> None:
    page, console_errors = browser_page
    member = make_member()
    phone = make_phone(make_device, name="browser-phone")
    cpu = make_device(capabilities=CPU, name="browser-cpu")
    model = make_network(member.team)
    base = live_server.url
    log_in(page, base, member, "/jobs/new/")
    gpu, big = "select[name=delegate] option[value=gpu]", "select[name=core_cluster] option[value=big]"

    # The phone alone: its delegates, clusters and cool-down are all offered.
    page.check(f"#devices-list input[value='{phone.pk}']")
    assert not _disabled(page, gpu) and not _disabled(page, big)
    assert not _disabled(page, "input[name=cooldown_c]")
    page.select_option("select[name=delegate]", "gpu")
    page.fill("input[name=cooldown_c]", "40")

    # With the CPU too: no delegate but the default, no cluster, no cool-down.
    page.check(f"#devices-list input[value='{cpu.pk}']")
    assert _disabled(page, gpu) and _disabled(page, big)
    assert not _disabled(page, "select[name=delegate] option[value='']")
    assert page.input_value("select[name=delegate]") == ""
    assert _disabled(page, "input[name=cooldown_c]") and page.input_value("input[name=cooldown_c]") == ""
    screenshots(page, "submit-phone-and-cpu")

    # The phone alone again; a cluster replaces the CPU ids.
    page.uncheck(f"#devices-list input[value='{cpu.pk}']")
    assert not _disabled(page, gpu) and not _disabled(page, "input[name=cores]")
    page.select_option("select[name=core_cluster]", "big")
    assert _disabled(page, "input[name=cores]")
    page.select_option("select[name=delegate]", "xnnpack")
    page.fill("input[name=cooldown_c]", "40")
    page.fill("input[name=cooldown_max_s]", "120")
    page.check(f"#models-list input[value='{model.pk}']")
    page.click("button[type=submit]:has-text('Queue jobs')")
    page.wait_for_url(f"{base}/jobs/*/")
    chips = page.inner_text(".chips")
    for text in ("delegate xnnpack", "cores 6,7", "cool down below 40 °C", "cool-down limit 120 s"):
        assert text in chips, text
    screenshots(page, "phone-job-queued")
    assert console_errors == []

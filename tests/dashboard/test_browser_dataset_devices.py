"""The qed phones in a real browser (Debian's chromium against a live server), imported from the
shared data as the demo imports them: the fleet shows them as dataset devices, and a phone's page
lists its imported measurements in a table that filters and sorts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.dashboard.test_browser import browser_page, log_in, screenshots

__all__ = ["browser_page", "screenshots"]  # the browser fixtures, shared with the main browser test

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_imported_phones_are_dataset_devices_with_their_measurements_on_their_page(
    live_server: Any,
    make_member: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
) -> None:
    from server.predictors.qed_import import import_qed

    page, console_errors = browser_page
    member = make_member()
    pixel4 = next(d.device for d in import_qed().devices if d.device.name == "pixel4")

    log_in(page, live_server.url, member, "/")
    states = page.locator("#fleet-table [data-device-state]").all_inner_texts()
    assert states == ["dataset"] * 6, states
    assert "offline" not in page.inner_text("#fleet-table") and "never" not in page.inner_text("#fleet-table")
    screenshots(page, "dataset-fleet")

    page.click(f"#fleet-table a[href='/devices/{pixel4.pk}/']")
    page.wait_for_selector("#imported-table")
    assert page.inner_text("h1 [data-device-state]") == "dataset"
    assert "Adreno 640" in page.inner_text(".facts")
    rows = page.locator("#imported-table tbody tr")
    assert rows.count() == 67
    # Filter by name, then sort by end-to-end latency, slowest first on the second click.
    page.fill('[data-filter-for="imported-table"]', "resnet")
    visible = page.locator("#imported-table tbody tr:visible")
    assert 0 < visible.count() < 67
    assert all("resnet" in n for n in visible.evaluate_all("rs => rs.map(r => r.dataset.network)"))
    page.fill('[data-filter-for="imported-table"]', "")
    header = page.locator("#imported-table th", has_text="End-to-end (ms)")
    header.click()
    header.click()
    e2e = [float(v) for v in rows.evaluate_all("rs => rs.map(r => r.cells[1].dataset.value)")]
    assert e2e == sorted(e2e, reverse=True) and e2e[0] > e2e[-1] > 0
    kernels = [int(v) for v in rows.evaluate_all("rs => rs.map(r => r.cells[3].dataset.value)")]
    assert all(k > 0 for k in kernels)
    screenshots(page, "dataset-device")
    assert not console_errors, console_errors

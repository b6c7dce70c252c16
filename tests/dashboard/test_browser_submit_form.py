"""The submit form in a real browser: choosing devices narrows the settings to what every chosen
device declared it can run (Debian's chromium against a live server)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from devicelab.backends.base import Capabilities
from tests.dashboard.test_browser import browser_page, log_in, screenshots

__all__ = ["browser_page", "screenshots"]  # the browser fixtures, shared with the main browser test

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CPU = Capabilities(precisions=("fp32",), max_threads=2, pins_cores=True, cores=(0, 1), formats=("onnx",))
GPU = Capabilities(precisions=("fp32", "fp16"), max_threads=8, formats=("ir",))


def _disabled(page: Any, selector: str) -> bool:
    return bool(page.eval_on_selector(selector, "el => el.disabled"))


def test_choosing_devices_narrows_the_settings(
    live_server: Any,
    make_member: Callable[..., Any],
    make_device: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
) -> None:
    page, console_errors = browser_page
    member = make_member()
    cpu = make_device(capabilities=CPU, name="browser-cpu")
    gpu = make_device(kind="opencl", capabilities=GPU, name="browser-gpu")
    base = live_server.url

    log_in(page, base, member, "/jobs/new/")
    fp16 = "select[name=precision] option[value=fp16]"

    # Only the GPU: fp16 is offered, cores cannot be pinned, up to 8 threads.
    page.check(f"#devices-list input[value='{gpu.pk}']")
    assert not _disabled(page, fp16)
    assert _disabled(page, "input[name=cores]")
    assert page.get_attribute("input[name=threads]", "max") == "8"
    page.select_option("select[name=precision]", "fp16")

    # Add the CPU: fp16 is gone (and the choice falls back to fp32), at most 2 threads.
    page.check(f"#devices-list input[value='{cpu.pk}']")
    assert _disabled(page, fp16)
    assert page.input_value("select[name=precision]") == "fp32"
    assert page.get_attribute("input[name=threads]", "max") == "2"
    screenshots(page, "submit-narrowed")

    # Only the CPU: cores can be pinned again.
    page.uncheck(f"#devices-list input[value='{gpu.pk}']")
    assert not _disabled(page, "input[name=cores]")
    assert console_errors == []

"""The submit form in a real browser: the device and zoo lists filter by text and kind, and
choosing devices narrows the settings (cold starts included) to what every chosen device
declared it can run (Debian's chromium against a live server)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from devicelab.backends.base import Capabilities
from tests.dashboard.test_browser import browser_page, log_in, screenshots

__all__ = ["browser_page", "screenshots"]  # the browser fixtures, shared with the main browser test

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CPU = Capabilities(precisions=("fp32",), max_threads=2, pins_cores=True, cores=(0, 1), formats=("onnx",))
GPU = Capabilities(precisions=("fp32", "fp16"), max_threads=8, formats=("ir",), max_cold_runs=4)


def _disabled(page: Any, selector: str) -> bool:
    return bool(page.eval_on_selector(selector, "el => el.disabled"))


def _shown(page: Any, list_id: str) -> list[str]:
    """The values of the rows of a checklist that are not hidden."""
    return list(
        page.eval_on_selector_all(f"#{list_id} label.check:not([hidden]) input", "els => els.map(e => e.value)")
    )


def test_filtering_the_lists_and_choosing_devices_narrows_the_settings(
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

    # The lists filter by kind and by text over the label and the row's attributes (hardware).
    assert page.is_visible("[data-list-tools=devices-list]")
    page.select_option("[data-list-kind=devices-list]", "opencl")
    assert _shown(page, "devices-list") == [str(gpu.pk)]
    assert page.inner_text("[data-list-count=devices-list]") == "1 of 2 shown"
    page.select_option("[data-list-kind=devices-list]", "")
    page.fill("[data-list-filter=devices-list]", "test gpu")  # its hardware, not in its label
    assert _shown(page, "devices-list") == [str(gpu.pk)]
    page.press("[data-list-filter=devices-list]", "Enter")  # filters; does not send the form
    page.fill("[data-list-filter=devices-list]", "")
    assert sorted(_shown(page, "devices-list")) == sorted([str(cpu.pk), str(gpu.pk)])
    page.fill("[data-list-filter=zoo-list]", "resnet")
    zoo_rows = _shown(page, "zoo-list")  # by name, or by family (resnext50_32x4d is a resnet)
    assert {"resnet18", "resnet50", "resnext50_32x4d"} <= set(zoo_rows) and "mobilenet_v2" not in zoo_rows
    page.check("#zoo-list input[value=resnet18]")
    page.fill("[data-list-filter=zoo-list]", "mobilenet")
    assert "resnet18" in _shown(page, "zoo-list")  # a chosen row stays in sight
    assert page.url == base + "/jobs/new/"

    # Only the GPU: fp16 is offered, cores cannot be pinned, up to 8 threads.
    page.check(f"#devices-list input[value='{gpu.pk}']")
    assert not _disabled(page, fp16)
    assert _disabled(page, "input[name=cores]")
    assert page.get_attribute("input[name=threads]", "max") == "8"
    assert page.get_attribute("input[name=cold_runs]", "max") == "4"
    page.select_option("select[name=precision]", "fp16")
    page.fill("input[name=cold_runs]", "4")

    # Add the CPU: fp16 is gone (and the choice falls back to fp32), at most 2 threads.
    page.check(f"#devices-list input[value='{cpu.pk}']")
    assert _disabled(page, fp16)
    assert page.input_value("select[name=precision]") == "fp32"
    assert page.get_attribute("input[name=threads]", "max") == "2"
    # The CPU measures the one cold start of its run: at most 1, and the 4 asked for comes down.
    assert page.get_attribute("input[name=cold_runs]", "max") == "1"
    assert page.input_value("input[name=cold_runs]") == "1"
    screenshots(page, "submit-narrowed")

    # Only the CPU: cores can be pinned again.
    page.uncheck(f"#devices-list input[value='{gpu.pk}']")
    assert not _disabled(page, "input[name=cores]")
    assert console_errors == []

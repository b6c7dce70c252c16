"""A phone's page says why it takes no job (issue 34 items 5 and 6): a phone the configured
benchmark_model cannot run on names both ABIs, and a phone listed ``unauthorized`` names the
prompt to accept."""

from __future__ import annotations

import html as html_lib
from collections.abc import Callable
from typing import Any

import pytest

from devicelab.backends.android import backend
from devicelab.backends.base import DeviceInfo
from tests.server.test_phone_abi_refused import emulator

__all__ = ["emulator"]  # the fixture: an x86_64 phone on the adb double, an arm64 binary configured


@pytest.mark.django_db
def test_the_page_of_a_phone_the_binary_cannot_run_on_says_why(
    make_member: Callable, web_client: Callable, emulator: DeviceInfo
) -> None:
    from server.devices.services import register_devices

    (device,) = register_devices("worker-abi", [emulator])
    page = html_lib.unescape(web_client(make_member()).get(f"/devices/{device.pk}/").content.decode())
    assert "takes no jobs: the configured benchmark_model is an arm64-v8a binary" in page
    assert "x86_64, x86" in page


@pytest.mark.django_db
def test_the_page_of_an_unauthorized_phone_names_the_prompt(make_member: Callable, web_client: Callable) -> None:
    from server.devices.services import register_devices
    from server.profiling.services import take_devices_offline

    info = backend.waiting_info("LOCKED-9", "unauthorized")
    (device,) = register_devices("worker-u", [info])
    take_devices_offline({device.pk: "adb lists it 'unauthorized': accept the USB debugging prompt on the phone"})
    page: Any = html_lib.unescape(web_client(make_member()).get(f"/devices/{device.pk}/").content.decode())
    assert "accept the USB debugging prompt" in page and "LOCKED-9 (unauthorized)" in page

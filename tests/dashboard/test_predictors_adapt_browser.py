"""The adapt form in a real browser: a user's phone typed in with three measured zoo networks is
queued as an adapted predictor, and its page lists what it will be adapted from."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.dashboard.test_browser import browser_page, log_in, screenshots
from tests.server.predictor_data import ready_predictor

__all__ = ["browser_page", "screenshots"]  # the browser fixtures, shared with the main browser test

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_adapt_form_queues_a_predictor_for_a_users_phone(
    live_server: Any,
    make_member: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
) -> None:
    from server.predictors.models import Predictor
    from server.predictors.qed_import import ensure_qed_device

    page, console_errors = browser_page
    member = make_member()
    ready_predictor(ensure_qed_device("s10")[0])
    base = live_server.url

    log_in(page, base, member, "/predictors/")
    page.fill("#adapt-form input[name=new_device]", "My Phone")
    page.fill("#adapt-form input[name=gpu]", "Adreno 640")
    page.fill("#adapt-form textarea[name=shots]", "mobilenet_v2 7.5\nresnet18 15.2\nsqueezenet_1_1 4.1")
    screenshots(page, "predictors-adapt-01-form")
    page.click("#adapt-form button[type=submit]")

    row = Predictor.objects.get(source="adapted")
    page.wait_for_url(base + f"/predictors/{row.pk}/")
    assert page.locator("#adapted-shots tbody tr").count() == 3
    assert page.locator("#adapted-sources tbody tr").count() == 1
    screenshots(page, "predictors-adapt-02-queued")
    assert console_errors == []

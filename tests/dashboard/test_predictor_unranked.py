"""The predictor pages never mark a version tested on too few networks "best": the list and its page
say it is not ranked and why, and the best is the rankable version even when its MAPE is higher."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from tests.dashboard.predictor_factories import make_predictor

pytestmark = pytest.mark.django_db


def test_a_version_tested_on_one_network_is_shown_unranked_and_never_best(
    make_member: Callable[..., Any], make_device: Callable[..., Any], web_client: Callable[[Any], Any]
) -> None:
    me = make_member()
    device = make_device()
    lucky = make_predictor(device, me.team, "gbdt", version=2, e2e_mape=0.01, n_test=1)
    solid = make_predictor(device, me.team, "gbdt", version=1, e2e_mape=0.05)
    client = web_client(me)

    html = client.get("/predictors/").content.decode()
    lucky_row = re.search(rf'<tr data-predictor-id="{lucky.pk}">.*?</tr>', html, re.S)
    solid_row = re.search(rf'<tr data-predictor-id="{solid.pk}" class="best">.*?</tr>', html, re.S)
    assert lucky_row and "data-unranked" in lucky_row.group(0) and "data-best" not in lucky_row.group(0)
    assert "1 test network(s)" in lucky_row.group(0)  # the reason, in the badge's title
    assert solid_row and "data-best" in solid_row.group(0)

    page = client.get(f"/predictors/{lucky.pk}/").content.decode()
    assert "best on this device" not in page and 'id="rank-reason"' in page
    assert "its test MAPE comes from 1 test network(s)" in page
    comparison = re.search(r'<table class="table sortable" id="method-comparison">.*?</table>', page, re.S)
    assert comparison and comparison.group(0).count("data-best") == 1  # the solid version, not this one

    page = client.get(f"/predictors/{solid.pk}/").content.decode()
    assert "best on this device" in page and 'id="rank-reason"' not in page

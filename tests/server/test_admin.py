"""Every model has a working admin page: list, filters and search render."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib import admin

pytestmark = pytest.mark.django_db

APPS = ("accounts", "devices", "networks", "profiling")


def test_every_model_is_registered() -> None:
    from django.apps import apps

    for label in APPS:
        for model in apps.get_app_config(label).get_models():
            assert admin.site.is_registered(model), model


@pytest.mark.parametrize("label", APPS)
def test_changelists_render_with_search(admin_client: Any, label: str, member: Any, make_job: Any) -> None:
    from django.apps import apps

    make_job(member.team)
    for model in apps.get_app_config(label).get_models():
        url = f"/admin/{label}/{model._meta.model_name}/"
        assert admin_client.get(url).status_code == 200, url
        assert admin_client.get(url, {"q": "x"}).status_code == 200, url

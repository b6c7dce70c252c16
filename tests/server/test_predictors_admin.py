"""The predictor app's admin pages render: list, filters and search."""

from __future__ import annotations

from typing import Any

import pytest

from tests.server.predictor_data import ready_predictor

pytestmark = pytest.mark.django_db


def test_every_predictor_model_has_a_working_admin_page(admin_client: Any) -> None:
    from django.apps import apps
    from django.contrib import admin

    from server.predictors.qed_import import ensure_qed_device
    from server.predictors.tables import build_nb201_table

    row = ready_predictor(ensure_qed_device("s10")[0])
    build_nb201_table(row, [0, 1])
    for model in apps.get_app_config("predictors").get_models():
        assert admin.site.is_registered(model), model
        url = f"/admin/predictors/{model._meta.model_name}/"
        assert admin_client.get(url).status_code == 200, url
        assert admin_client.get(url, {"q": "x"}).status_code == 200, url
    assert admin_client.get(f"/admin/predictors/predictor/{row.pk}/change/").status_code == 200

"""A model page shows an opaque operator (an uploaded .tflite's ARG_MAX) in its operator table
like any other: its type, the operator it stands for, its shapes, no MACs."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from server.networks.services import upload_model
from tests.devicelab.graph.opaque_models import argmax_model


@pytest.mark.django_db
def test_the_model_page_lists_the_opaque_operator(make_member: Callable, web_client: Callable) -> None:
    me = make_member()
    model, _ = upload_model(me.team, None, argmax_model(), "argmax.tflite")
    resp = web_client(me).get(f"/models/{model.pk}/")
    assert resp.status_code == 200
    assert [row["type"] for row in resp.context["operators"]] == ["conv2d", "relu", "opaque"]
    html = resp.content.decode()
    (row,) = [r for r in html.split("<tr ") if r.startswith('data-op-type="opaque"')]
    assert "classes" in row and "ARG_MAX" in row and "[1, 16, 16]" in row

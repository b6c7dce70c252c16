"""The dashboard's own static files and plotly.js (from the plotly package) are served offline."""

from __future__ import annotations

from typing import Any

import plotly
import pytest
from django.contrib.staticfiles import finders

from dashboard.staticfiles import PLOTLY_JS, PlotlyJsFinder


def test_plotly_js_is_found_in_the_installed_plotly_package() -> None:
    found = finders.find(PLOTLY_JS)
    assert found and found.startswith(str(plotly.__path__[0]))
    assert finders.find("dashboard/vendor/other.js") is None


def test_collectstatic_lists_plotly_js_under_its_static_path() -> None:
    (path, storage), *rest = list(PlotlyJsFinder().list([]))
    assert rest == []
    assert f"{storage.prefix}/{path}" == PLOTLY_JS  # type: ignore[attr-defined]
    assert storage.exists(path)


@pytest.mark.django_db
@pytest.mark.parametrize(
    "path", [PLOTLY_JS, "dashboard/dashboard.css", "dashboard/dashboard.js", "dashboard/favicon.svg"]
)
def test_static_files_are_served(client: Any, path: str) -> None:
    resp = client.get(f"/static/{path}")
    assert resp.status_code == 200
    head = b"".join(resp.streaming_content)[:300]
    if path == PLOTLY_JS:
        assert b"plotly.js v" in head

"""The ReDoc page loads its script from our static files and no fonts, scripts or styles from
other origins (the lab answers offline, and its Content-Security-Policy would block them)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest
from django.contrib.staticfiles import finders
from rest_framework.test import APIClient

pytestmark = pytest.mark.django_db

BUNDLE = "/static/drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js"


class _Assets(HTMLParser):
    """Every URL the page asks a browser to load: scripts, links (styles, fonts, preconnects,
    icons) and url()/@import inside <style>."""

    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self._in_style = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "script" and values.get("src"):
            self.urls.append(str(values["src"]))
        if tag == "link" and values.get("href"):
            self.urls.append(str(values["href"]))
        self._in_style = tag == "style"

    def handle_endtag(self, tag: str) -> None:
        if tag == "style":
            self._in_style = False

    def handle_data(self, data: str) -> None:
        if self._in_style:
            self.urls += re.findall(r"""url\(\s*['"]?([^'")]+)""", data)
            self.urls += re.findall(r"""@import\s+['"]([^'"]+)""", data)


def test_redoc_loads_nothing_from_other_origins() -> None:
    page = APIClient().get("/api/redoc/")
    assert page.status_code == 200
    html = page.content.decode()
    assets = _Assets()
    assets.feed(html)
    assert BUNDLE in assets.urls
    external = [u for u in assets.urls if re.match(r"^(https?:)?//", u)]
    assert external == []
    assert "fonts.googleapis" not in html and "fonts.gstatic" not in html and "cdn.redoc.ly" not in html


def test_the_redoc_bundle_is_served_locally() -> None:
    assert finders.find("drf_spectacular_sidecar/redoc/bundles/redoc.standalone.js")
    asset = APIClient().get(BUNDLE)
    assert asset.status_code == 200
    body = b"".join(asset.streaming_content) if asset.streaming else asset.content
    assert b"Redoc" in body[:200_000] and len(body) > 500_000

"""plotly.js served as a static file straight from the plotly Python package (no CDN, no copy)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import plotly
from django.contrib.staticfiles.finders import BaseFinder
from django.core.files.storage import FileSystemStorage

PLOTLY_JS = "dashboard/vendor/plotly.min.js"
"""The static path the templates load plotly.js from."""

_PACKAGE_DATA = Path(plotly.__file__).resolve().parent / "package_data"


class PlotlyJsFinder(BaseFinder):
    """Finds ``dashboard/vendor/plotly.min.js`` in the installed plotly package, so the browser
    always gets the plotly.js that matches the Python library that built the figures."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.storage = FileSystemStorage(location=str(_PACKAGE_DATA))
        # collectstatic puts the file under this prefix in STATIC_ROOT.
        self.storage.prefix = PLOTLY_JS.rsplit("/", 1)[0]  # type: ignore[attr-defined]

    def check(self, **kwargs: Any) -> list[Any]:
        """No settings to check."""
        return []

    # Django's own finders answer [] for "not here" (a None would be collected as a match);
    # django-stubs declare None, hence the ignore.
    def find(self, path: str, find_all: bool = False) -> str | list[str]:  # type: ignore[override]
        """The file's absolute path for ``PLOTLY_JS``; an empty list otherwise."""
        if path != PLOTLY_JS:
            return []
        found = str(_PACKAGE_DATA / "plotly.min.js")
        return [found] if find_all else found

    def list(self, ignore_patterns: Any) -> Iterator[tuple[str, FileSystemStorage]]:
        """The one file, for collectstatic."""
        yield "plotly.min.js", self.storage

"""A zoo of real-world networks built from code, with no download.

Each family lives in its own module and registers its models with ``registry.register``;
importing this package imports every module in it.
"""

from __future__ import annotations

import importlib
import pkgutil

from devicelab.graph.zoo.registry import ZooEntry, build, entries

for _module in pkgutil.iter_modules(__path__):
    if _module.name != "registry":
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["ZooEntry", "build", "entries"]

"""Which backend module serves which device kind, imported only when asked for.

Each backend imports its runtime (onnxruntime, pyopencl, adbutils) at module level, so importing
one is how we learn whether its runtime is installed. ``discover_all`` asks every backend that
imports and skips, with a logged reason, those that do not (or whose discovery fails), so a
worker without an OpenCL driver still offers its CPU.
"""

from __future__ import annotations

import importlib
import logging
from types import ModuleType

from devicelab.backends.base import DEVICE_KINDS, DeviceInfo

log = logging.getLogger(__name__)

BACKEND_MODULES: dict[str, str] = {kind: f"devicelab.backends.{kind}" for kind in DEVICE_KINDS}


class BackendUnavailable(ImportError):
    """A backend exists in the vocabulary but cannot be imported here (module or runtime missing)."""


def backend_for(kind: str) -> ModuleType:
    """The backend module for a device kind; ``ValueError`` for an unknown kind,
    ``BackendUnavailable`` when its module or runtime is not installed."""
    try:
        module_name = BACKEND_MODULES[kind]
    except KeyError:
        raise ValueError(f"unknown device kind {kind!r}; known: {sorted(BACKEND_MODULES)}") from None
    try:
        return importlib.import_module(module_name)
    except ImportError as e:
        missing = getattr(e, "name", None)
        if missing == module_name:
            reason = f"backend module {module_name} is not written yet"
        else:
            reason = f"its runtime is not installed ({missing or e})"
        raise BackendUnavailable(f"{kind} backend unavailable: {reason}") from e


def discover_all(kinds: tuple[str, ...] | None = None) -> list[DeviceInfo]:
    """Devices of every available backend (or of ``kinds``), skipping and logging the rest."""
    devices: list[DeviceInfo] = []
    for kind in kinds or tuple(BACKEND_MODULES):
        try:
            module = backend_for(kind)
        except BackendUnavailable as e:
            log.info("skipping %s", e)
            continue
        try:
            found = module.discover()
        except Exception:  # a broken driver must not hide the other backends' devices
            log.exception("%s backend: discovery failed; skipping it", kind)
            continue
        log.info("%s backend: %d device(s)", kind, len(found))
        devices.extend(found)
    return devices

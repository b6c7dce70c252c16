"""Which backend serves which device kind, imported only when asked for.

Each backend module imports its runtime (onnxruntime, pyopencl, adbutils) at module level, so
importing one is how we learn whether its runtime is installed. A backend module exposes its
``Backend`` instance as ``BACKEND``; ``backend_for`` checks that it is one. ``discover_all`` asks
every backend that imports and skips, with a logged reason, those that do not (or whose discovery
fails), so a worker without an OpenCL driver still offers its CPU.
"""

from __future__ import annotations

import importlib
import logging

from devicelab.backends.base import Backend, DeviceInfo

log = logging.getLogger(__name__)

# kind -> the module that defines its ``BACKEND`` (the only module that imports its runtime).
BACKEND_MODULES: dict[str, str] = {
    "cpu": "devicelab.backends.cpu",
    "opencl": "devicelab.backends.opencl.backend",
    "android": "devicelab.backends.android.backend",
}


class BackendUnavailable(ImportError):
    """A backend exists in the vocabulary but cannot be imported here (module or runtime missing)."""


def backend_for(kind: str) -> Backend:
    """The backend of a device kind; ``ValueError`` for an unknown kind, ``BackendUnavailable``
    when its module or runtime is not installed, ``TypeError`` when its module defines no
    ``Backend``."""
    try:
        module_name = BACKEND_MODULES[kind]
    except KeyError:
        raise ValueError(f"unknown device kind {kind!r}; known: {sorted(BACKEND_MODULES)}") from None
    try:
        module = importlib.import_module(module_name)
    except ImportError as e:
        missing = getattr(e, "name", None)
        if missing == module_name:
            reason = f"backend module {module_name} is not written yet"
        else:
            reason = f"its runtime is not installed ({missing or e})"
        raise BackendUnavailable(f"{kind} backend unavailable: {reason}") from e
    backend = getattr(module, "BACKEND", None)
    if not isinstance(backend, Backend):
        raise TypeError(
            f"{module_name}.BACKEND must be a devicelab.backends.base.Backend, got {type(backend).__name__}"
        )
    return backend


def discover_all(kinds: tuple[str, ...] | None = None) -> list[DeviceInfo]:
    """Devices of every available backend (or of ``kinds``), skipping and logging the rest."""
    devices: list[DeviceInfo] = []
    for kind in kinds or tuple(BACKEND_MODULES):
        try:
            backend = backend_for(kind)
        except BackendUnavailable as e:
            log.info("skipping %s", e)
            continue
        except TypeError:  # a module that defines no Backend: its bug must not hide the other devices
            log.exception("%s backend: not a Backend; skipping it", kind)
            continue
        try:
            found = backend.discover()
        except Exception:  # a broken driver must not hide the other backends' devices
            log.exception("%s backend: discovery failed; skipping it", kind)
            continue
        log.info("%s backend: %d device(s)", kind, len(found))
        devices.extend(found)
    return devices

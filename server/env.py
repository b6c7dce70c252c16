"""Typed readers for settings that come from the environment.

Each helper returns the default when the variable is unset or empty (docker-compose passes
unset variables through as empty strings) and raises ``ImproperlyConfigured`` naming the
variable and the bad value otherwise, so a typo fails at start-up rather than at first use.
"""

from __future__ import annotations

import logging
import os

from django.core.exceptions import ImproperlyConfigured

log = logging.getLogger("latencylab.settings")

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}

# Names already reported by ``note_embedded_default``: the log says it once per process.
_reported: set[str] = set()

# Set by a process that starts the service's processes (``latencylab up``, ``demo``) to the names
# it has reported: its children use the same defaults (same environment, same var/) and leave the
# user one line per default instead of one per process.
REPORTED_VARIABLE = "LATENCYLAB_DEFAULTS_REPORTED"


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    if value is None or value.strip() == "":
        return None
    return value.strip()


def is_set(name: str) -> bool:
    """Whether the variable is set to a non-empty value."""
    return _raw(name) is not None


def env_str(name: str, default: str) -> str:
    """A string variable, or ``default`` when unset."""
    value = _raw(name)
    return default if value is None else value


def env_int(name: str, default: int, *, minimum: int | None = None, maximum: int | None = None) -> int:
    """An integer variable within [minimum, maximum], or ``default`` when unset."""
    raw = _raw(name)
    if raw is None:
        return default
    try:
        value = int(raw.replace("_", ""))
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None
    if minimum is not None and value < minimum:
        raise ImproperlyConfigured(f"{name}={raw!r} must be >= {minimum}")
    if maximum is not None and value > maximum:
        raise ImproperlyConfigured(f"{name}={raw!r} must be <= {maximum}")
    return value


def env_bool(name: str, default: bool) -> bool:
    """A boolean variable (true/false, 1/0, yes/no, on/off), or ``default`` when unset."""
    raw = _raw(name)
    if raw is None:
        return default
    if raw.lower() in _TRUE:
        return True
    if raw.lower() in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use true/false, 1/0, yes/no or on/off")


def env_list(name: str, default: list[str]) -> list[str]:
    """A comma-separated list variable (blank items dropped), or ``default`` when unset."""
    raw = _raw(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def note_embedded_default(name: str, default: str) -> None:
    """Log, once per process, that ``name`` is unset and the embedded ``default`` is in use
    (not at all when the parent process listed ``name`` in ``LATENCYLAB_DEFAULTS_REPORTED``)."""
    if name in _reported:
        return
    _reported.add(name)
    if name in env_list(REPORTED_VARIABLE, []):
        return
    log.warning("%s is not set; using the embedded default: %s", name, default)


def reported_defaults() -> dict[str, str]:
    """``{LATENCYLAB_DEFAULTS_REPORTED: names}`` for the environment of a child process, so it does
    not repeat what this process reported (empty when it reported nothing)."""
    return {REPORTED_VARIABLE: ",".join(sorted(_reported))} if _reported else {}

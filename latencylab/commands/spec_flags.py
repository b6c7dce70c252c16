"""Command-line flags derived from a devicelab spec's declaration (``devicelab.spec``).

``add_spec_flags(parser, ProfileSettings)`` adds one flag per declared field (``--threads``,
``--warmup`` where the declaration renames it, ``--breakdown/--no-breakdown`` for a bool) with its
choices and help; ``spec_values`` reads back the ones given, checked by the same declaration, so
``--runs 0`` is refused here with the words the server would use.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from typing import Any

from devicelab.spec import problems, settings_of


def add_spec_flags(
    parser: argparse.ArgumentParser,
    spec: type,
    types: Mapping[str, Callable[[str], Any]] | None = None,
    metavars: Mapping[str, str] | None = None,
    notes: Mapping[str, str] | None = None,
) -> None:
    """A flag per field of ``spec`` that declares one; ``types`` parse some fields' text (a
    parser may return a dict of several fields, as ``--on-noise rerun:3`` does), and ``notes``
    say how, after the declaration's help."""
    types = types or {}
    metavars = metavars or {}
    notes = notes or {}
    for s in settings_of(spec):
        if not s.flag:
            continue
        text = f"{s.help} {notes[s.name]}" if s.name in notes else s.help
        kwargs: dict[str, Any] = {"dest": s.name, "help": text.replace("%", "%%")}
        rule = s.rule
        if s.name in types:
            kwargs["type"] = types[s.name]
        elif rule.type is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif rule.choices:
            kwargs["choices"] = rule.choices
        elif rule.type in (int, float):
            kwargs["type"] = rule.type
        if s.name in metavars:
            kwargs["metavar"] = metavars[s.name]
        parser.add_argument(s.flag, **kwargs)


def spec_values(args: argparse.Namespace, spec: type) -> dict[str, Any]:
    """The fields of ``spec`` given as flags; ``ValueError`` naming the flag (``--runs must be
    between 1 and 10000, got 0``) for a value its declaration refuses. List fields are left to
    their parsers and the server (a list of cores may be a cluster's name there)."""
    values: dict[str, Any] = {}
    for s in settings_of(spec):
        value = getattr(args, s.name, None) if s.flag else None
        if isinstance(value, dict):
            values.update(value)
        elif value is not None:
            values[s.name] = value
    flags = {s.name: s.flag or s.name for s in settings_of(spec)}
    scalars = {k: v for k, v in values.items() if not any(s.name == k and s.rule.is_list for s in settings_of(spec))}
    for error in problems(spec, scalars):
        raise ValueError(f"{flags[error.key]} {error.reason}")
    return values

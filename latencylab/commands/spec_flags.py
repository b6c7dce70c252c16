"""Command-line flags derived from a devicelab spec's declaration (``devicelab.spec``).

``add_spec_flags(parser, ProfileSettings)`` adds one flag per declared field (``--threads``,
``--warmup`` where the declaration renames it, ``--breakdown/--no-breakdown`` for a bool) with its
choices and help; ``spec_values`` reads back the ones given, checked by the same declaration, so
``--runs 0`` is refused here with the words the server would use.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from devicelab.spec import Setting, described, problems, settings_of


def add_spec_flags(
    parser: argparse.ArgumentParser,
    spec: type,
    types: Mapping[str, Callable[[str], Any]] | None = None,
    metavars: Mapping[str, str] | None = None,
    notes: Mapping[str, str] | None = None,
    extend: Iterable[str] = (),
    required: Iterable[str] = (),
) -> None:
    """A flag per field of ``spec`` that declares one; ``types`` parse some fields' text (a
    parser may return a dict of several fields, as ``--on-noise rerun:3`` does), and ``notes``
    say how, after the declaration's help. A list of integers or strings without a parser of
    its own is read comma-separated (``--sizes 2,3``); the fields in ``extend`` may be repeated
    (``--shape 8x8x8 --shape 16x16x16``), their lists joined; those in ``required`` must be given."""
    types = types or {}
    metavars = metavars or {}
    notes = notes or {}
    repeated = set(extend)
    for s in settings_of(spec):
        if not s.flag:
            continue
        text = f"{described(s)} {notes[s.name]}" if s.name in notes else described(s)
        kwargs: dict[str, Any] = {"dest": s.name, "help": text.replace("%", "%%")}
        rule = s.rule
        if s.name in repeated:
            kwargs["action"] = "extend"
        if s.name in set(required):
            kwargs["required"] = True
        if s.name in types:
            kwargs["type"] = types[s.name]
        elif rule.is_list:
            kwargs["type"] = comma_list(s)
            kwargs.setdefault("metavar", "A,B,...")
        elif rule.type is bool:
            kwargs["action"] = argparse.BooleanOptionalAction
        elif rule.choices:
            kwargs["choices"] = rule.choices
        elif rule.type in (int, float):
            kwargs["type"] = rule.type
        if s.name in metavars:
            kwargs["metavar"] = metavars[s.name]
        parser.add_argument(s.flag, **kwargs)


def comma_list(setting: Setting) -> Callable[[str], list[Any]]:
    """The parser of a list field's flag: items comma-separated, each checked by the declaration
    (``--kinds C,Q``: ``unknown kinds ['Q']; the kinds are C, C_1x1, ...``)."""
    item = setting.rule.item
    if item is None or item.type not in (int, str):
        raise TypeError(f"{setting.name}: a list of lists or of booleans needs a parser of its own (or flag='')")
    noun = setting.name.replace("_", " ")

    def parse(value: str) -> list[Any]:
        parts = [p.strip() for p in value.split(",") if p.strip()]
        if item.type is int:
            if not all(p.isascii() and p.lstrip("-").isdigit() for p in parts):
                raise argparse.ArgumentTypeError(f"{value!r} is not a comma-separated list of integers (1,2)")
            items: list[Any] = [int(p) for p in parts]
        else:
            items = parts
        if item.choices:
            unknown = [v for v in items if v not in item.choices]
            if unknown:
                raise argparse.ArgumentTypeError(f"unknown {noun} {unknown}; the {noun} are {', '.join(item.choices)}")
        for v in items:
            wrong = item.problem(v)
            if wrong is not None:
                raise argparse.ArgumentTypeError(f"{value!r}: each of {noun} {wrong[1]}")
        return items

    return parse


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

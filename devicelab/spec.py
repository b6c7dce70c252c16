"""A spec declared once: a frozen dataclass whose fields say their type, bounds, choices and help.

A spec (``ProfileSettings``, ``SweepSpec``, ``PlanOptions``, ``SharingSpec``, ``RemoteSettings``)
declares each field with ``setting``::

    threads: int = setting(1, ge=1, le=MAX_THREADS, help="Intra-op threads.")

The field's type is its annotation (``int``, ``float``, ``str``, ``bool``, ``X | None``,
``tuple[X, ...]`` for a list, ``tuple[X, X, X]`` for a list of three); the rest is the field's
metadata. From that one declaration ``check`` validates an instance (its ``__post_init__`` calls
it), the server derives its serializer fields (``server.api.spec_fields``), the dashboard its form
fields and the command line its flags, so a new setting is one line plus its use.

This module imports nothing but the standard library: the command line builds its parser from it
without importing numpy or Django.
"""

from __future__ import annotations

import dataclasses
import json
import math
import types
import typing
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

_KEY = "devicelab.spec"
MAX_SEED = 2**32 - 1  # a spec's seed seeds numpy's generators, whose seeds are 32-bit
_SCALARS: tuple[type, ...] = (bool, int, float, str)


class SpecError(ValueError):
    """A field of a spec holds what its declaration refuses; ``key`` names it (``cores[2]`` for an
    item of a list), ``reason`` says what is wrong, and the message is both: ``threads must be
    between 1 and 1024, got 0``."""

    def __init__(self, key: str, reason: str) -> None:
        super().__init__(f"{key} {reason}")
        self.key = key
        self.reason = reason


@dataclass(frozen=True)
class Items:
    """What each item of a list field may be (``setting(..., items=Items(ge=1, le=8))``)."""

    ge: float | None = None
    le: float | None = None
    choices: tuple[str, ...] = ()
    items: Items | None = None  # a list of lists: what each inner item may be


@dataclass(frozen=True)
class Rule:
    """What a value may be: its type, and its bounds, choices or length."""

    type: type  # bool, int, float, str, or tuple (a JSON list)
    nullable: bool = False
    ge: float | None = None
    le: float | None = None
    choices: tuple[str, ...] = ()
    blank: bool = False  # a string field with choices also takes "" (the device's own default)
    unit: str = ""  # said after a bound in messages: "between 1 and 119 °C"
    item: Rule | None = None  # a list's items
    min_items: int | None = None
    max_items: int | None = None
    unique: bool = False  # a list names an item at most once

    @property
    def is_list(self) -> bool:
        """Whether the value is a JSON list (a tuple in the dataclass)."""
        return self.type is tuple

    def describe(self) -> str:
        """What the value must be, as said in a message: ``an integer``, ``a number or null``."""
        words = {bool: "true or false", int: "an integer", float: "a number", str: "a string", tuple: "a list"}
        return words[self.type] + (" or null" if self.nullable else "")

    def problem(self, value: Any) -> tuple[tuple[int, ...], str] | None:
        """What is wrong with ``value``, as (where: the indices of an item of a list, or (); the
        reason); None when it may be."""
        if value is None:
            return None if self.nullable else ((), f"must be {self.describe()}, got None")
        if not self._has_type(value):
            return (), f"must be {self.describe()}, got {value!r}"
        if self.is_list:
            return self._list_problem(value)
        if self.choices and value not in self.choices and not (self.blank and value == ""):
            return (), f"{value!r} is not one of {', '.join(self.choices)}" + (" (or empty)" if self.blank else "")
        if self.type in (int, float):
            return self._bound_problem(value)
        return None

    def _has_type(self, value: Any) -> bool:
        if self.type is bool:
            return isinstance(value, bool)
        if self.type is int:
            return isinstance(value, int) and not isinstance(value, bool)
        if self.type is float:
            return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
        if self.type is str:
            return isinstance(value, str)
        return isinstance(value, list | tuple)

    def _bound_problem(self, value: float) -> tuple[tuple[int, ...], str] | None:
        lo, hi = self.ge, self.le
        if (lo is None or value >= lo) and (hi is None or value <= hi):
            return None
        unit = f" {self.unit}" if self.unit else ""
        if lo is not None and hi is not None:
            return (), f"must be between {number(lo)} and {number(hi)}{unit}, got {value!r}"
        if lo is not None:
            return (), f"must be at least {number(lo)}{unit}, got {value!r}"
        assert hi is not None
        return (), f"must be at most {number(hi)}{unit}, got {value!r}"

    def _list_problem(self, value: Sequence[Any]) -> tuple[tuple[int, ...], str] | None:
        n = len(value)
        if self.min_items is not None and self.min_items == self.max_items and n != self.min_items:
            return (), f"must have {self.min_items} items, got {n}"
        if self.min_items is not None and n < self.min_items:
            return (), f"must have at least {self.min_items} item(s), got {n}"
        if self.max_items is not None and n > self.max_items:
            return (), f"must have at most {self.max_items} items, got {n}"
        if self.item is not None:
            for i, item in enumerate(value):
                wrong = self.item.problem(item)
                if wrong is not None:
                    return (i, *wrong[0]), wrong[1]
        if self.unique:
            seen: list[Any] = []
            for item in value:
                # 1 == True in Python: items are compared by type too
                if any(type(s) is type(item) and s == item for s in seen):
                    return (), f"lists {item!r} twice"
                seen.append(item)
        return None


@dataclass(frozen=True)
class Setting:
    """One declared field of a spec: its name, default, rule and the words people read."""

    name: str
    default: Any
    rule: Rule
    help: str  # one or two sentences, for the API's schema, the form and the command line
    label: str  # the form's label
    flag: str  # the command line's flag ("--warmup"); "" when the command line does not offer it
    choice_labels: tuple[tuple[str, str], ...]  # the form's words for each choice


def described(setting: Setting) -> str:
    """The field's help, with its default unless the help already says what it is (the API's
    schema and the command line's help say it so). A default its own rule refuses is none: the
    field must be given."""
    if "default" in setting.help.lower() or setting.rule.problem(setting.default) is not None:
        return setting.help
    default = list(setting.default) if isinstance(setting.default, tuple) else setting.default
    return f"{setting.help} Default {json.dumps(default, ensure_ascii=False)}."


def setting(
    default: Any,
    *,
    help: str,
    ge: float | None = None,
    le: float | None = None,
    choices: Sequence[str] = (),
    blank: bool = False,
    unit: str = "",
    items: Items | None = None,
    min_items: int | None = None,
    max_items: int | None = None,
    unique: bool = False,
    label: str = "",
    flag: str | None = None,
    choice_labels: Mapping[str, str] | None = None,
) -> Any:
    """A dataclass field declared with its bounds and words (see the module docstring).

    ``flag``: the command line's flag when it is not ``--`` and the name with dashes; ``""`` for
    none. ``label``: the form's, by default the name in words. A list default may be a tuple."""
    meta = {
        "help": help,
        "ge": ge,
        "le": le,
        "choices": tuple(choices),
        "blank": blank,
        "unit": unit,
        "items": items,
        "min_items": min_items,
        "max_items": max_items,
        "unique": unique,
        "label": label,
        "flag": flag,
        "choice_labels": tuple((choice_labels or {}).items()),
    }
    return dataclasses.field(default=default, metadata={_KEY: meta})


def number(x: float) -> str:
    """A bound as people write it: ``3600`` for 3600.0, ``0.5`` for 0.5."""
    return str(int(x)) if float(x).is_integer() else repr(x)


def _rule(annotation: Any, meta: Mapping[str, Any] | Items | None) -> Rule:
    """The rule of a value of type ``annotation``, with the bounds of ``meta``."""
    nullable = False
    args = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) or typing.get_origin(annotation) is typing.Union:
        inner = [a for a in args if a is not type(None)]
        if len(inner) != 1:
            raise TypeError(f"a spec field is one type or that type | None, not {annotation!r}")
        nullable, annotation = True, inner[0]
        args = typing.get_args(annotation)
    if isinstance(meta, Items):
        m: Mapping[str, Any] = {"ge": meta.ge, "le": meta.le, "choices": meta.choices, "items": meta.items}
    else:
        m = meta or {}
    if typing.get_origin(annotation) is tuple:
        fixed = None if len(args) == 2 and args[1] is Ellipsis else len(args)
        if fixed is not None and len(set(args)) != 1:
            raise TypeError(f"a spec's tuple holds items of one type, not {annotation!r}")
        item = _rule(args[0], m.get("items"))
        return Rule(
            tuple,
            nullable=nullable,
            item=item,
            min_items=fixed if fixed is not None else m.get("min_items"),
            max_items=fixed if fixed is not None else m.get("max_items"),
            unique=bool(m.get("unique")),
        )
    if annotation not in _SCALARS:
        raise TypeError(f"a spec field is bool, int, float, str, X | None or a tuple of them, not {annotation!r}")
    return Rule(
        annotation,
        nullable=nullable,
        ge=m.get("ge"),
        le=m.get("le"),
        choices=tuple(m.get("choices") or ()),
        blank=bool(m.get("blank")),
        unit=str(m.get("unit") or ""),
    )


_CACHE: dict[type, tuple[Setting, ...]] = {}


def settings_of(cls: type) -> tuple[Setting, ...]:
    """The declared fields of the spec ``cls``, in their order (every field must use ``setting``)."""
    cached = _CACHE.get(cls)
    if cached is not None:
        return cached
    hints = typing.get_type_hints(cls)
    out = []
    for f in dataclasses.fields(cls):
        meta = f.metadata.get(_KEY)
        if meta is None:
            raise TypeError(f"{cls.__name__}.{f.name} is not declared with devicelab.spec.setting")
        flag = meta["flag"]
        out.append(
            Setting(
                name=f.name,
                default=f.default,
                rule=_rule(hints[f.name], meta),
                help=meta["help"],
                label=meta["label"] or f.name.replace("_", " ").capitalize(),
                flag=("--" + f.name.replace("_", "-")) if flag is None else flag,
                choice_labels=meta["choice_labels"],
            )
        )
    _CACHE[cls] = tuple(out)
    return _CACHE[cls]


def declared(cls: type, name: str) -> Setting:
    """The declaration of field ``name`` of the spec ``cls``."""
    for s in settings_of(cls):
        if s.name == name:
            return s
    raise KeyError(f"{cls.__name__} declares no field {name!r}")


def problems(cls: type, values: Mapping[str, Any]) -> Iterator[SpecError]:
    """What is wrong with each of ``values`` (some of the fields of ``cls``, as JSON gives them)."""
    for s in settings_of(cls):
        if s.name in values:
            wrong = s.rule.problem(values[s.name])
            if wrong is not None:
                yield SpecError(s.name + "".join(f"[{i}]" for i in wrong[0]), wrong[1])


def _frozen(value: Any) -> Any:
    return tuple(_frozen(v) for v in value) if isinstance(value, list | tuple) else value


def check(instance: Any, spec: type | None = None) -> None:
    """Raise ``SpecError`` for the first field of ``instance`` its declaration refuses; lists
    become tuples (the dataclass is frozen and hashable) and integers of a float field floats.
    Its ``__post_init__`` calls this. ``spec``: the declared class whose fields to check, when
    ``instance``'s class adds fields of its own (a spec with its resolved parts)."""
    cls = spec or type(instance)
    values = {s.name: getattr(instance, s.name) for s in settings_of(cls)}
    for error in problems(cls, values):
        raise error
    for s in settings_of(cls):
        value = values[s.name]
        if s.rule.is_list and isinstance(value, list | tuple):
            object.__setattr__(instance, s.name, _frozen(value))
        elif s.rule.type is float and isinstance(value, int):
            object.__setattr__(instance, s.name, float(value))


Spec = TypeVar("Spec")


def from_dict(cls: type[Spec], data: Mapping[str, Any], what: str = "") -> Spec:
    """The spec ``cls`` from plain data (keys left out take their defaults); ``ValueError`` for
    an unknown key, ``SpecError`` for a value its declaration refuses."""
    known = sorted(s.name for s in settings_of(cls))
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise ValueError(f"unknown {what or cls.__name__} key(s) {unknown}; known keys: {known}")
    return cls(**data)


def as_dict(instance: Any, spec: type | None = None) -> dict[str, Any]:
    """Plain data for JSON: tuples become lists; ``spec`` as for ``check``."""

    def plain(value: Any) -> Any:
        return [plain(v) for v in value] if isinstance(value, tuple) else value

    return {s.name: plain(getattr(instance, s.name)) for s in settings_of(spec or type(instance))}

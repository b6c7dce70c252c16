"""An experiment's result as JSON and back (a Celery message today, an HTTP post from a lab machine
next), with one codec for every record: ``to_json`` writes a dataclass as plain JSON, ``from_json``
reads it back by walking the dataclass's declared types, so a bad payload is refused at the
boundary with a message that names the key's path (``fusion sweep.rows[2].throughput must be a
number, got str 'fast'``).

What the types mean on the wire:

* ``int``: an integer, never a boolean; ``float``: any JSON number (``1`` for ``1.0``), never a
  boolean; ``str``; ``bool``: ``true`` or ``false``; ``None``: ``null``; ``X | None``: ``null`` or X;
  ``Literal[...]``: one of the values;
* ``list[X]`` and ``tuple[X, ...]``: a JSON array of X (a tuple with one type per item: an array of
  that length); ``dict[str, X]``: a JSON object of X;
* a dataclass: a JSON object with a key per field, in the fields' order: a key missing (for a
  field without a default) or unknown is refused;
* a ``TypedDict``: a JSON object of its declared keys (``Required[...]`` ones must be there, an
  undeclared one is refused), each value of its declared type;
* ``Any`` (so ``JsonDict``): kept as it came, detail the record carries but nothing reads key by key;
* ``Annotated[T, OwnJson("a sharing spec")]``: a type that reads its own JSON with
  ``T.from_dict()`` (a spec, checked by its own declaration); ``to_json`` writes any value that
  has an ``as_dict()`` with it.

A record that needs more than its types say (a key that must be there for the pages to read it)
declares ``_check_json(self, where)``, called once it is read; one whose JSON has keys besides its
fields extends ``as_dict()``. Records subclass ``JsonRecord`` for their public ``as_dict()`` /
``from_dict()``.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable, Mapping
from typing import (
    Annotated,
    Any,
    ClassVar,
    Literal,
    NotRequired,
    Required,
    TypeAlias,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

JsonDict = dict[str, Any]
"""A JSON object kept as it came: detail that the record carries but nothing reads key by key."""

T = TypeVar("T")
R = TypeVar("R", bound="JsonRecord")


class PayloadError(ValueError):
    """A result's JSON is not what its record declares; the message names the key."""


@dataclasses.dataclass(frozen=True)
class OwnJson:
    """Marks a field (``Annotated[T, OwnJson("a sharing spec")]``) whose type writes and reads its
    own JSON with ``as_dict()`` and ``from_dict()``; ``what`` names it when it refuses a value."""

    what: str


@dataclasses.dataclass(frozen=True)
class NanAsNull:
    """Marks a float (``Annotated[float, NanAsNull()]``, ``Reported``) whose NaN means "not
    reported" (a runtime that prints no median): JSON has no NaN, so it travels as null and is
    read back as NaN."""


Reported = Annotated[float, NanAsNull()]
"""A statistic that may be missing: a float, NaN when not reported; null on the wire."""


def _nan_as_null(hint: Any) -> bool:
    return get_origin(hint) is Annotated and any(isinstance(m, NanAsNull) for m in hint.__metadata__)


def is_int(value: object) -> bool:
    """An integer and not a boolean."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    """A JSON number (an integer or a float) and not a boolean."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _bad(where: str, wanted: str, value: object) -> PayloadError:
    return PayloadError(f"{where} must be {wanted}, got {_kind(value)} {value!r:.80}")


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    """A dataclass's or TypedDict's resolved field types, ``Annotated`` kept."""
    return get_type_hints(cls, include_extras=True)


def _own(hint: Any) -> OwnJson | None:
    """The ``OwnJson`` mark of an ``Annotated`` type, if it has one."""
    if get_origin(hint) is Annotated:
        return next((m for m in hint.__metadata__ if isinstance(m, OwnJson)), None)
    return None


# ---------------------------------------------------------------------------------------------
# Writing


# Values written as they are, recognised before anything else is asked of them.
_PLAIN = frozenset({str, int, float, bool, type(None)})


def to_json(value: Any) -> Any:
    """Plain JSON data of ``value``: a value with an ``as_dict()`` (a record, a spec) as that
    writes it, another dataclass as an object of its fields (``fields_json``), tuples as lists,
    mappings and lists item by item; everything else as it is."""
    if type(value) in _PLAIN:
        return value
    if not isinstance(value, type) and callable(getattr(value, "as_dict", None)):
        return value.as_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return fields_json(value)
    if isinstance(value, Mapping):
        return {k: to_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    return value


def fields_json(record: Any) -> JsonDict:
    """A dataclass as a JSON object: a key per field, in the fields' order, each ``to_json``."""
    cls: Any = type(record)
    return {name: write(getattr(record, name)) for name, write in _field_writers(cls)}


@functools.cache
def _field_writers(cls: Any) -> tuple[tuple[str, Callable[[Any], Any]], ...]:
    """A dataclass's fields with the function that writes each: ``to_json``, or a shortcut where
    the declared type says the value is plain already (a number, a list of numbers)."""
    try:
        hints = _hints(cls)
    except Exception:  # noqa: BLE001 - annotations that do not resolve: write every field generically
        hints = {}
    return tuple((f.name, _writer(hints.get(f.name, Any))) for f in dataclasses.fields(cls))


def _same(value: Any) -> Any:
    return value if type(value) in _PLAIN else to_json(value)


def _writer(hint: Any) -> Callable[[Any], Any]:
    """How to write a value declared ``hint``: plain scalars and lists of them without the walk."""
    if hint in _SCALARS:
        return _same
    if _nan_as_null(hint):
        return lambda value: None if value != value else value  # NaN is the one value unequal to itself
    origin = get_origin(hint)
    if origin is Union or origin is types.UnionType:
        options = [a for a in get_args(hint) if a is not type(None)]
        if len(options) == 1 and len(options) < len(get_args(hint)):
            inner = _writer(options[0])
            return lambda value: None if value is None else inner(value)
    if origin is list:
        (item,) = get_args(hint) or (Any,)
        if item in _SCALARS:
            return lambda value: [x if type(x) in _PLAIN else to_json(x) for x in value]
        if get_origin(item) is list and get_args(item) and get_args(item)[0] in _SCALARS:
            return lambda value: [[x if type(x) in _PLAIN else to_json(x) for x in row] for row in value]
    return to_json


# ---------------------------------------------------------------------------------------------
# Reading

_SCALARS: dict[object, tuple[str, Any]] = {
    str: ("a string", lambda v: isinstance(v, str)),
    bool: ("true or false", lambda v: isinstance(v, bool)),
    int: ("an integer", is_int),
    float: ("a number", is_number),
}


def from_json(cls: type[T], data: object, where: str) -> T:
    """``cls`` (a dataclass) read from the JSON ``to_json`` wrote; ``PayloadError`` naming the
    first key (by its path from ``where``) that is missing, of the wrong type or unknown."""
    return cast(T, _reader(cast(Any, cls))(data, where))


# Where a value sits in the payload: the payload's name, or (parent, key) for a value inside one.
# Built as tuples while reading and written out only for an error: a path string per value read
# would cost more than the reading.
Where: TypeAlias = "str | tuple[Where, str | int]"
Reader = Callable[[object, Where], Any]


def _path(where: Where) -> str:
    """The path of a value as the error messages write it (``fusion sweep.rows[2].throughput``)."""
    parts: list[str | int] = []
    while isinstance(where, tuple):
        where, key = where
        parts.append(key)
    text = str(where)
    for key in reversed(parts):
        text += f"[{key}]" if isinstance(key, int) else f".{key}"
    return text


def _read(hint: Any, value: object, where: Where) -> Any:
    """``value`` read as the type ``hint`` at path ``where``."""
    return _reader(hint)(value, where)


@functools.cache
def _reader(hint: Any) -> Reader:
    """The function that reads a value of type ``hint``, made once per type."""
    if hint is Any:
        return lambda value, where: value
    if hint is None or hint is type(None):
        return _read_null
    origin = get_origin(hint)
    if origin is Annotated:
        own = _own(hint)
        base = hint.__origin__
        if _nan_as_null(hint):
            number = _reader(base)
            return lambda value, where: float("nan") if value is None else number(value, where)
        if own is None:
            return _reader(base)
        return lambda value, where: _read_own(base, own, value, where)
    if origin is Required or origin is NotRequired:  # a TypedDict's key, kept by include_extras
        return _reader(get_args(hint)[0])
    if origin is Union or origin is types.UnionType:
        return _union_reader(get_args(hint))
    if origin is Literal:
        return _literal_reader(get_args(hint))
    if hint in _SCALARS:
        return _scalar_reader(hint)
    if origin in (list, tuple):
        return _array_reader(hint, origin)
    if origin is dict or hint is dict:
        args = get_args(hint)
        item = args[1] if args else Any
        return _dict_reader(item)
    if is_typeddict(hint):
        return functools.partial(_read_shape, hint)
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _record_reader(hint)

    def unreadable(value: object, where: Where) -> Any:
        raise TypeError(f"{_path(where)}: the wire codec does not read {hint!r}")

    return unreadable


def _read_null(value: object, where: Where) -> None:
    if value is not None:
        raise _bad(_path(where), "null", value)
    return None


def _scalar_reader(hint: Any) -> Reader:
    wanted, ok = _SCALARS[hint]

    def read(value: object, where: Where) -> Any:
        if not ok(value):
            raise _bad(_path(where), wanted, value)
        return float(cast(float, value)) if hint is float else value

    return read


def _literal_reader(choices: tuple[Any, ...]) -> Reader:
    def read(value: object, where: Where) -> Any:
        if not any(value == c and type(value) is type(c) for c in choices):
            raise _bad(_path(where), f"one of {list(choices)}", value)
        return value

    return read


def _dict_reader(item: Any) -> Reader:
    def read(value: object, where: Where) -> Any:
        read_item = _reader(item)
        return {k: read_item(v, (where, k)) for k, v in _object(value, where).items()}

    return read


def _object(value: object, where: Where) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise _bad(_path(where), "a JSON object", value)
    return value


def _union_reader(options: tuple[Any, ...]) -> Reader:
    """``X | None``: null, or an X; a union of several types: the first that reads ``value``."""
    nullable = type(None) in options
    others = [o for o in options if o is not type(None)]

    if len(others) == 1:
        only = _reader(others[0])

        def read_one(value: object, where: Where) -> Any:
            if value is None and nullable:
                return None
            return only(value, where)

        return read_one

    def read(value: object, where: Where) -> Any:
        if value is None and nullable:
            return None
        for option in others:
            try:
                return _reader(option)(value, where)
            except PayloadError:
                continue
        raise _bad(_path(where), " or ".join(_describe(o) for o in options), value)

    return read


def _describe(hint: Any) -> str:
    return _SCALARS[hint][0] if hint in _SCALARS else "null" if hint is type(None) else str(hint)


# Item types whose values are taken in one pass over a list when every item is exactly of the type.
_PLAIN_ITEMS: dict[Any, type] = {int: int, str: str, bool: bool}


def _array_reader(hint: Any, origin: type) -> Reader:
    """``list[X]``, ``tuple[X, ...]`` or ``tuple[X, Y]`` from a JSON array."""
    args = get_args(hint)
    fixed = origin is tuple and bool(args) and args[-1] is not Ellipsis
    item = args[0] if args else Any
    # a list of plain scalars is checked in one pass; only a list with a bad item is read item by
    # item, to name it
    kinds = _PLAIN_ITEMS.get(item) if not fixed else None
    inner = _PLAIN_ITEMS.get(get_args(item)[0]) if get_origin(item) is list and get_args(item) else None

    def read(value: object, where: Where) -> Any:
        if not isinstance(value, list | tuple):
            raise _bad(_path(where), "a list", value)
        if kinds is not None and all(type(v) is kinds for v in value):
            return tuple(value) if origin is tuple else list(value)
        if inner is not None and origin is list and (rows := _plain_rows(value, inner)) is not None:
            return rows  # a list of lists of plain scalars (shapes)
        if fixed:
            if len(value) != len(args):
                raise _bad(_path(where), f"a list of {len(args)} items", value)
            return tuple(_reader(a)(v, (where, i)) for i, (a, v) in enumerate(zip(args, value, strict=True)))
        read_item = _reader(item)
        items = [read_item(v, (where, i)) for i, v in enumerate(value)]
        return tuple(items) if origin is tuple else items

    return read


def _plain_rows(value: list[Any] | tuple[Any, ...], kind: type) -> list[list[Any]] | None:
    """Copies of ``value``'s rows when every row is a list of exactly ``kind``; None otherwise."""
    rows = []
    for row in value:
        if row.__class__ is not list:
            return None
        for v in row:
            if v.__class__ is not kind:
                return None
        rows.append(row.copy())
    return rows


def _read_shape(shape: type, value: object, where: Where) -> JsonDict:
    """A ``TypedDict``: its declared keys only, its required ones present, each of its type."""
    data = _object(value, where)
    declared = _hints(shape)
    unknown = sorted(set(data) - set(declared))
    if unknown:
        raise PayloadError(f"{_path(where)} has unknown key(s) {unknown}; declared: {sorted(declared)}")
    missing = sorted(k for k, hint in declared.items() if k not in data and _required(shape, hint))
    if missing:
        raise PayloadError(f"{_path(where)}.{missing[0]} is missing")
    return {k: _reader(declared[k])(v, (where, k)) for k, v in data.items()}


def _required(shape: type, hint: Any) -> bool:
    """Whether a TypedDict's key must be there. Read from the resolved hint: under ``from
    __future__ import annotations`` Python 3.11's ``__required_keys__`` does not see ``Required``."""
    origin = get_origin(hint)
    return origin is Required or (origin is not NotRequired and bool(getattr(shape, "__total__", True)))


@functools.cache
def _record_fields(cls: type) -> tuple[tuple[str, Reader, bool, tuple[type, ...] | None], ...]:
    """A dataclass's fields: name, reader, whether the payload must have it, and the JSON types a
    value may have to be taken as it is without its reader (a string, an integer, an object kept
    whole; None when the reader must look). The readers are looked up once here: hashing a
    generic type (``list[list[int]]``) per value read is slow."""
    hints = _hints(cls)
    return tuple(
        (
            f.name,
            _lazy_reader(hints[f.name]),
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
            _taken_as_is(hints[f.name]),
        )
        for f in dataclasses.fields(cls)
    )


def _taken_as_is(hint: Any) -> tuple[type, ...] | None:
    """The exact JSON types a value of ``hint`` may have to need no reading at all."""
    if hint is str or hint is bool:
        return (hint,)
    if hint is int:
        return (int,)  # exactly int: a bool is refused by the reader
    if hint is float or _nan_as_null(hint):
        return (float,)  # an integer is made a float, and a Reported null a NaN, by the reader
    if hint is Any:
        return (str, int, float, bool, dict, list, type(None))
    origin = get_origin(hint)
    if (origin is dict or hint is dict) and (not get_args(hint) or get_args(hint)[1] is Any):
        return (dict,)
    if origin is Union or origin is types.UnionType:
        parts = [_taken_as_is(a) if a is not type(None) else (type(None),) for a in get_args(hint)]
        if all(p is not None for p in parts):
            return tuple(t for p in parts if p is not None for t in p)
    return None


def _lazy_reader(hint: Any) -> Reader:
    """``_reader(hint)``, made at its first use (a record may name its own type in a field)."""
    made: list[Reader] = []

    def read(value: object, where: Where) -> Any:
        if not made:
            made.append(_reader(hint))
        return made[0](value, where)

    return read


def _read_record(cls: type, value: object, where: Where) -> Any:
    """A dataclass: a key per field (a field with a default may be left out), no other keys."""
    data = _object(value, where)
    values: JsonDict = {}
    for name, read, required, as_is in _record_fields(cls):
        if name in data:
            item = data[name]
            values[name] = item if as_is is not None and type(item) in as_is else read(item, (where, name))
        elif required:
            raise PayloadError(f"{_path(where)}.{name} is missing")
    if len(values) != len(data):
        unknown = sorted(set(data) - set(values))
        raise PayloadError(f"{_path(where)} has unknown key(s) {unknown}")
    record = _construct(cls, values)
    check = getattr(record, "_check_json", None)
    if check is not None:
        check(_path(where))
    return record


_ABSENT = object()


@functools.cache
def _record_reader(cls: type) -> Reader:
    """The reader of a dataclass: for a plain one, a function compiled for its fields (one
    statement per field, no loop, no per-value lookups), which hands the payload to
    ``_read_record`` at the first thing it does not expect (a key missing, an unknown one, not
    an object), so every refusal is ``_read_record``'s, with its message. Reading a 300-operator
    profile is a loop over 500 records, and the loop's own work was most of it."""
    slow = functools.partial(_read_record, cls)
    makers = _plain_init(cls)
    if makers is None:
        return slow
    fields = _record_fields(cls)
    hints = _hints(cls)
    scope: dict[str, Any] = {"slow": slow, "new": object.__new__, "cls": cls, "ABSENT": _ABSENT, "path": _path}

    def resolver(i: int, hint: Any) -> Reader:
        # a field's reader is made at its first use (a record may name its own type in a field),
        # and then put in the compiled function's globals in place of this
        def read(value: object, where: Where) -> Any:
            scope[f"read{i}"] = made = _reader(hint)
            return made(value, where)

        return read

    body = ["if value.__class__ is not dict:", "    return slow(value, where)", "get = value.get"]
    body.append(f"present = {sum(required for _, _, required, _ in fields)}")
    for i, ((name, _, required, as_is), (_, make)) in enumerate(zip(fields, makers, strict=True)):
        scope[f"read{i}"], scope[f"as_is{i}"], scope[f"make{i}"] = resolver(i, hints[name]), as_is, make
        body += [f"v{i} = get({name!r}, ABSENT)", f"if v{i} is ABSENT:"]
        body.append("    return slow(value, where)" if required else f"    v{i} = make{i}()")
        body.append("else:")
        if not required:
            body.append("    present += 1")
        hint = hints[name]
        rows, optional = _rows_kind(hint), _optional_record(hint)
        if rows is not None:  # shapes: rows of plain scalars checked in one call
            scope[f"kind{i}"], scope["plain_rows"] = rows, _plain_rows
            body.append(f"    if v{i}.__class__ is list and (r := plain_rows(v{i}, kind{i})) is not None:")
            body.append(f"        v{i} = r")
            body.append("    else:")
            body.append(f"        v{i} = read{i}(v{i}, (where, {name!r}))")
        elif optional is not None:  # a record or null: the record's own reader, called directly
            scope[f"read{i}"] = resolver(i, optional)
            body.append(f"    if v{i} is not None:")
            body.append(f"        v{i} = read{i}(v{i}, (where, {name!r}))")
        elif as_is is not None:
            body.append(f"    if v{i}.__class__ not in as_is{i}:")
            body.append(f"        v{i} = read{i}(v{i}, (where, {name!r}))")
        else:
            body.append(f"    v{i} = read{i}(v{i}, (where, {name!r}))")
    body.append("if len(value) != present:")
    body.append("    return slow(value, where)")
    body.append("record = new(cls)")
    body.append("record.__dict__.update({" + ", ".join(f"{name!r}: v{i}" for i, (name, *_) in enumerate(fields)) + "})")
    if hasattr(cls, "_check_json"):
        body.append("record._check_json(path(where))")
    body.append("return record")
    source = "def read(value, where):\n" + "".join(f"    {line}\n" for line in body)
    exec(compile(source, f"<wire reader of {cls.__qualname__}>", "exec"), scope)  # noqa: S102
    return cast(Reader, scope["read"])


def _rows_kind(hint: Any) -> type | None:
    """For ``list[list[X]]`` with X a plain scalar type (shapes): X; None for any other type."""
    if get_origin(hint) is not list or not get_args(hint):
        return None
    row = get_args(hint)[0]
    if get_origin(row) is not list or not get_args(row):
        return None
    return _PLAIN_ITEMS.get(get_args(row)[0])


def _optional_record(hint: Any) -> type | None:
    """For ``R | None`` with R a dataclass: R; None for any other type."""
    if get_origin(hint) is not Union and get_origin(hint) is not types.UnionType:
        return None
    options = [a for a in get_args(hint) if a is not type(None)]
    if len(options) != 1 or len(get_args(hint)) != 2:
        return None
    record = options[0]
    return record if isinstance(record, type) and dataclasses.is_dataclass(record) else None


@functools.cache
def _plain_init(cls: type) -> tuple[tuple[str, Any], ...] | None:
    """For a dataclass whose ``__init__`` only stores its fields (no ``__post_init__``, no slots,
    the generated ``__init__``): each field's default maker; None for any other class."""
    if (
        hasattr(cls, "__post_init__")
        or "__slots__" in cls.__dict__
        # the generated __init__ is compiled from a string; a hand-written one has a real file
        or getattr(getattr(cls.__dict__.get("__init__"), "__code__", None), "co_filename", "") != "<string>"
    ):
        return None
    makers: list[tuple[str, Any]] = []
    for f in dataclasses.fields(cls):
        if f.default_factory is not dataclasses.MISSING:
            makers.append((f.name, f.default_factory))
        elif f.default is not dataclasses.MISSING:
            makers.append((f.name, functools.partial(lambda v: v, f.default)))
        else:
            makers.append((f.name, None))
    return tuple(makers)


def _construct(cls: type, values: JsonDict) -> Any:
    """``cls(**values)``; for a plain dataclass, its fields set directly: a frozen dataclass's
    ``__init__`` sets each field through ``object.__setattr__``, a third of reading a profile."""
    makers = _plain_init(cls)
    if makers is None:
        return cls(**values)
    record: Any = object.__new__(cls)
    for name, make in makers:
        if name not in values:
            values[name] = make()
    record.__dict__.update(values)
    return record


def _read_own(cls: Any, own: OwnJson, value: object, where: Where) -> Any:
    """A type that reads its own JSON (a spec): its refusal becomes the payload's, at ``where``."""
    data = _object(value, where)
    try:
        return cls.from_dict(data)
    except KeyError as exc:
        raise PayloadError(f"{_path(where)} is not {own.what}: it has no key {exc}") from None
    except (TypeError, ValueError) as exc:
        raise PayloadError(f"{_path(where)} is not {own.what}: {exc}") from None


class JsonRecord:
    """A dataclass whose JSON is its fields (``to_json`` / ``from_json``); ``json_name`` names a
    whole payload of it in errors (``fusion sweep``)."""

    json_name: ClassVar[str] = ""

    def as_dict(self) -> JsonDict:
        """Plain data for JSON."""
        return fields_json(self)

    def json_ready(self) -> JsonDict:
        """What orjson writes as ``as_dict()`` would: the same JSON, possibly with dataclasses left
        for orjson to write natively where their fields are their JSON (a record overrides it to
        skip a walk that costs more than the encoding)."""
        return self.as_dict()

    @classmethod
    def from_dict(cls: type[R], data: object) -> R:
        """The inverse of ``as_dict``; ``PayloadError`` naming the first missing, mistyped or
        unknown key."""
        return from_json(cls, data, cls.json_name or cls.__name__)


__all__ = [
    "JsonDict",
    "JsonRecord",
    "NanAsNull",
    "OwnJson",
    "PayloadError",
    "Reported",
    "fields_json",
    "from_json",
    "is_int",
    "is_number",
    "to_json",
]

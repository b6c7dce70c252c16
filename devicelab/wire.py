"""Reading an experiment's result back from the JSON that carried it (a Celery message today, an
HTTP post from a lab machine next): each key read with its type checked, every error naming the
key's path, so a bad payload is refused at the boundary with a message a person can act on.

Result records (``devicelab.fusion.results``, ``devicelab.tenancy.results``,
``devicelab.remote.results``) read themselves with ``Fields``: a key missing, of the wrong type, or
not known to the record is a ``PayloadError``. Numbers are JSON's: an integer is accepted where a
float is expected (``1`` for ``1.0``), a boolean never is a number.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar, get_type_hints

JsonDict = dict[str, Any]
"""A JSON object kept as it came: detail that the record carries but nothing reads key by key."""

T = TypeVar("T")


class PayloadError(ValueError):
    """A result's JSON is not what its record declares; the message names the key."""


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


class Fields:
    """One JSON object being read into a record; ``where`` is its path (``sweep.rows[3]``)."""

    def __init__(self, data: object, where: str) -> None:
        if not isinstance(data, Mapping):
            raise PayloadError(f"{where} must be a JSON object, got {_kind(data)}")
        self.data: Mapping[str, Any] = data
        self.where = where
        self.seen: set[str] = set()

    def path(self, key: str) -> str:
        """The path of ``key`` in the payload."""
        return f"{self.where}.{key}"

    def has(self, key: str) -> bool:
        """Whether the object has ``key`` (for keys a record declares optional)."""
        return key in self.data

    def raw(self, key: str) -> Any:
        """The value of a required key, unchecked."""
        self.seen.add(key)
        if key not in self.data:
            raise PayloadError(f"{self.path(key)} is missing")
        return self.data[key]

    def _bad(self, key: str, wanted: str, value: object) -> PayloadError:
        return PayloadError(f"{self.path(key)} must be {wanted}, got {_kind(value)} {value!r:.80}")

    def text(self, key: str) -> str:
        """A required string."""
        value = self.raw(key)
        if not isinstance(value, str):
            raise self._bad(key, "a string", value)
        return value

    def integer(self, key: str) -> int:
        """A required integer."""
        value = self.raw(key)
        if not is_int(value):
            raise self._bad(key, "an integer", value)
        return int(value)

    def number(self, key: str) -> float:
        """A required number."""
        value = self.raw(key)
        if not is_number(value):
            raise self._bad(key, "a number", value)
        return float(value)

    def flag(self, key: str) -> bool:
        """A required boolean."""
        value = self.raw(key)
        if not isinstance(value, bool):
            raise self._bad(key, "true or false", value)
        return value

    def optional(self, key: str, read: Callable[[str], T]) -> T | None:
        """A required key that may be null, read with ``read`` (``f.optional("padding", f.integer)``)."""
        return None if self.raw(key) is None else read(key)

    def obj(self, key: str) -> JsonDict:
        """A required JSON object, kept as it came."""
        value = self.raw(key)
        if not isinstance(value, Mapping):
            raise self._bad(key, "a JSON object", value)
        return dict(value)

    def array(self, key: str) -> list[Any]:
        """A required JSON array, its items unchecked."""
        value = self.raw(key)
        if not isinstance(value, list | tuple):
            raise self._bad(key, "a list", value)
        return list(value)

    def objs(self, key: str) -> tuple[JsonDict, ...]:
        """A required list of JSON objects, each kept as it came."""
        items = self.array(key)
        for i, item in enumerate(items):
            if not isinstance(item, Mapping):
                raise PayloadError(f"{self.path(key)}[{i}] must be a JSON object, got {_kind(item)}")
        return tuple(dict(item) for item in items)

    def texts(self, key: str) -> tuple[str, ...]:
        """A required list of strings."""
        return self._items(key, self.array(key), lambda v: isinstance(v, str), "a string")

    def integers(self, key: str) -> tuple[int, ...]:
        """A required list of integers."""
        return tuple(int(v) for v in self._items(key, self.array(key), is_int, "an integer"))

    def numbers(self, key: str) -> tuple[float, ...]:
        """A required list of numbers."""
        return tuple(float(v) for v in self._items(key, self.array(key), is_number, "a number"))

    def _items(self, key: str, items: list[Any], ok: Callable[[Any], bool], wanted: str) -> tuple[Any, ...]:
        for i, item in enumerate(items):
            if not ok(item):
                raise PayloadError(f"{self.path(key)}[{i}] must be {wanted}, got {_kind(item)} {item!r:.80}")
        return tuple(items)

    def mapping(self, key: str, ok: Callable[[Any], bool], wanted: str) -> JsonDict:
        """A required JSON object whose every value passes ``ok`` (``wanted`` says what it must be)."""
        value = self.obj(key)
        for name, item in value.items():
            if not ok(item):
                raise PayloadError(f"{self.path(key)}.{name} must be {wanted}, got {_kind(item)} {item!r:.80}")
        return value

    def record(self, key: str, read: Callable[[Fields], T]) -> T:
        """A required nested object, read by a record's reader."""
        return read(Fields(self.raw(key), self.path(key)))

    def records(self, key: str, read: Callable[[Fields], T]) -> tuple[T, ...]:
        """A required list of nested objects, each read by a record's reader."""
        return tuple(read(Fields(item, f"{self.path(key)}[{i}]")) for i, item in enumerate(self.array(key)))

    def by_name(self, key: str, read: Callable[[Fields], T]) -> dict[str, T]:
        """A required JSON object of nested objects by name, each read by a record's reader."""
        return {name: read(Fields(item, f"{self.path(key)}.{name}")) for name, item in self.obj(key).items()}

    def shaped(self, key: str, shape: type) -> JsonDict:
        """A required JSON object of a declared shape (a ``TypedDict``): every key declared, and
        each value of a plain declared type (``str``, ``int``, ``float``, ``bool``) of that type;
        values of other declared types are kept as they came. The caller casts the result."""
        value = self.obj(key)
        declared = get_type_hints(shape)
        unknown = sorted(set(value) - set(declared))
        if unknown:
            raise PayloadError(f"{self.path(key)} has unknown key(s) {unknown}; declared: {sorted(declared)}")
        for name, item in value.items():
            wanted = declared[name]
            check = _PLAIN.get(wanted)
            if check is not None and not check(item):
                raise PayloadError(f"{self.path(key)}.{name} must be {wanted.__name__}, got {_kind(item)} {item!r:.80}")
        return value

    def done(self) -> None:
        """Refuse keys the record does not declare: a payload from a newer lab is not half-read."""
        unknown = sorted(set(self.data) - self.seen)
        if unknown:
            raise PayloadError(f"{self.where} has unknown key(s) {unknown}")


def _is_str(value: object) -> bool:
    return isinstance(value, str)


def _is_bool(value: object) -> bool:
    return isinstance(value, bool)


def is_int(value: object) -> bool:
    """An integer and not a boolean."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> bool:
    """A JSON number (an integer or a float) and not a boolean."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def optional_number(value: object) -> bool:
    """A number or null."""
    return value is None or is_number(value)


_PLAIN: dict[object, Callable[[object], bool]] = {str: _is_str, int: is_int, float: is_number, bool: _is_bool}


def read(data: object, where: str, reader: Callable[[Fields], T]) -> T:
    """Read a whole payload: ``reader`` takes its fields and must read every key."""
    return reader(Fields(data, where))


__all__ = ["Fields", "JsonDict", "PayloadError", "is_int", "is_number", "optional_number", "read"]

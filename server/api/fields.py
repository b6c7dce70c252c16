"""Serializer fields that take JSON values as they are: no ``"4"`` for 4, no ``1`` for true.

DRF's own fields convert what they can (``IntegerField`` reads ``"4"`` and ``4.0``,
``BooleanField`` reads ``"yes"``); the API's bodies are JSON, so a value of the wrong type is a
mistake in the client and is refused with the value it sent. Messages leave out the field's
name where the caller puts it in front (``settings.threads must be ...``).
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

# Row ids are ``BigAutoField``s (``DEFAULT_AUTO_FIELD``): 1 .. 2**63 - 1. A bigger number names no
# row, and the database cannot even compare it (PostgreSQL: "bigint out of range").
MAX_ID = 2**63 - 1


class StrictIntegerField(serializers.IntegerField):
    """A JSON integer (not a bool, float or string), within ``min_value`` .. ``max_value``."""

    default_error_messages = {
        "invalid": "must be an integer, got {value!r}",
        "null": "must be an integer, got None",
        "range": "must be between {min_value} and {max_value}, got {value!r}",
        "min_value": "must be >= {min_value}, got {value!r}",
        "max_value": "must be <= {max_value}, got {value!r}",
    }

    def to_internal_value(self, data: Any) -> int:
        """The integer, or a ``ValidationError`` that shows the value sent."""
        if isinstance(data, bool) or not isinstance(data, int):
            self.fail("invalid", value=data)
        # Bounds are checked here rather than by DRF's validators, whose messages cannot show the value.
        low, high = self.min_value, self.max_value
        if low is not None and high is not None and not low <= data <= high:
            self.fail("range", min_value=low, max_value=high, value=data)
        if low is not None and data < low:
            self.fail("min_value", min_value=low, value=data)
        if high is not None and data > high:
            self.fail("max_value", max_value=high, value=data)
        return data


class StrictFloatField(serializers.FloatField):
    """A JSON number (an integer or a float, not a bool or a string), finite, within the bounds."""

    default_error_messages = {
        "invalid": "must be a number, got {value!r}",
        "min_value": "must be >= {min_value}, got {value!r}",
        "max_value": "must be <= {max_value}, got {value!r}",
    }

    def to_internal_value(self, data: Any) -> float:
        """The number as a float, or a ``ValidationError`` that shows the value sent."""
        if isinstance(data, bool) or not isinstance(data, (int, float)) or data != data or abs(data) == float("inf"):
            self.fail("invalid", value=data)
        if self.min_value is not None and data < self.min_value:
            self.fail("min_value", min_value=self.min_value, value=data)
        if self.max_value is not None and data > self.max_value:
            self.fail("max_value", max_value=self.max_value, value=data)
        return float(data)


class IdField(StrictIntegerField):
    """A row id: a JSON integer in 1 .. ``MAX_ID``; the message names the key (``device must be an id ...``)."""

    def __init__(self, key: str, **kwargs: Any) -> None:
        message = f"{key} must be an id (a positive integer), got {{value!r}}"
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_ID)
        kwargs["error_messages"] = {"invalid": message, "min_value": message, "max_value": message, "range": message}
        super().__init__(**kwargs)


class StrictBooleanField(serializers.BooleanField):
    """JSON ``true`` or ``false`` only."""

    default_error_messages = {
        "invalid": "must be true or false, got {value!r}",
        "null": "must be true or false, got None",
    }

    def to_internal_value(self, data: Any) -> bool:
        """The boolean, or a ``ValidationError`` that shows the value sent."""
        if not isinstance(data, bool):
            self.fail("invalid", value=data)
        return data


class StrictCharField(serializers.CharField):
    """A JSON string, kept as sent (not stripped; numbers are not turned into strings)."""

    default_error_messages = {"invalid": "must be a string, got {value!r}", "null": "must be a string, got None"}

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("trim_whitespace", False)
        kwargs.setdefault("allow_blank", True)
        super().__init__(**kwargs)

    def to_internal_value(self, data: Any) -> str:
        """The string, or a ``ValidationError`` that shows the value sent."""
        if not isinstance(data, str):
            self.fail("invalid", value=data)
        return data

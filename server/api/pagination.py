"""Page-number pagination for every list endpoint, its parameters as strict as the schema says."""

from __future__ import annotations

from typing import Any

from django.core.paginator import Paginator
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import PageNumberPagination
from rest_framework.request import Request


class Pagination(PageNumberPagination):
    """50 items a page by default; ``?page_size=`` 1 .. 500; ``?page=`` from 1.

    DRF's own reads a bad ``page_size`` as "the default" and ``page=`` (empty) as 1; here a value
    that is not a positive integer in range, or a parameter given twice, is a 400 naming it. A page
    past the last one stays DRF's 404 ("Invalid page.").
    """

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500
    last_page_strings = ()  # ``?page=last`` is not a number

    def get_page_size(self, request: Request) -> int:
        """``?page_size=``, or the default when it is left out."""
        size = _positive_int(request, self.page_size_query_param, self.max_page_size)
        return self.page_size if size is None else size

    def get_page_number(self, request: Request, paginator: Paginator) -> int:
        """``?page=``, or 1 when it is left out."""
        number = _positive_int(request, self.page_query_param, None)
        return 1 if number is None else number

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        """DRF's declarations of ``page`` and ``page_size``, with their bounds."""
        parameters: list[dict[str, Any]] = super().get_schema_operation_parameters(view)
        for parameter in parameters:
            parameter["schema"]["minimum"] = 1
            if parameter["name"] == self.page_size_query_param:
                parameter["schema"]["maximum"] = self.max_page_size
        return parameters


def _positive_int(request: Request, name: str, maximum: int | None) -> int | None:
    """Query parameter ``name`` as an integer in 1 .. ``maximum``; None when left out; else a 400."""
    values = request.query_params.getlist(name)
    if not values:
        return None
    if len(values) > 1:
        raise ValidationError({name: [f"{name} is given {len(values)} times; give it once"]})
    text = values[0]
    bounds = f"1 .. {maximum}" if maximum is not None else ">= 1"
    # The length first: ``int()`` of a 5,000-digit string raises ValueError (CPython's digit limit).
    number = int(text) if text.isascii() and text.isdigit() and len(text) <= 30 else 0
    if number < 1 or (maximum is not None and number > maximum):
        raise ValidationError({name: [f"{name} must be an integer {bounds}, got {text!r}"]})
    return number

"""Page-number pagination for every list endpoint."""

from __future__ import annotations

from rest_framework.pagination import PageNumberPagination


class Pagination(PageNumberPagination):
    """50 items a page by default; ``?page_size=`` up to 500."""

    page_size = 50
    page_size_query_param = "page_size"
    max_page_size = 500

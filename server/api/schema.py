"""OpenAPI additions: how ``ApiTokenAuthentication`` appears in the schema, and the error answers
every operation can give, declared once for all of them.

A view documents its own answers (its success, and errors of its own such as 409); ``AutoSchema``
adds, where the view has not, the answers that come from the machinery around it: 401/403 from
authentication and permissions, 429 from throttles, 400 from filters, pagination and body
parsing, 404 from a path id or a page past the end, 413/415 from a body too big or of another
type, 414 from the web server. ``tests/server/test_api_conformance.py`` runs schemathesis against
a live server to keep this true.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.openapi import AutoSchema as SpectacularAutoSchema
from rest_framework import serializers
from rest_framework.permissions import AllowAny

from server.api.fields import MAX_ID


class ApiTokenScheme(OpenApiAuthenticationExtension):
    """``Authorization: Token <key>``."""

    target_class = "server.accounts.authentication.ApiTokenAuthentication"
    name = "tokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        """An API key in the Authorization header, prefixed with ``Token``."""
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "API key, sent as `Authorization: Token <key>` (create one with "
            "`latencylab user add NAME --team TEAM`).",
        }


class ErrorSerializer(serializers.Serializer):
    """An error answer: ``detail`` says why; a 400 for bad fields has a list of messages per field instead."""

    detail = serializers.CharField(required=False)


class AutoSchema(SpectacularAutoSchema):
    """drf-spectacular's schema of an operation, plus the error answers its machinery gives."""

    def get_operation(
        self, path: str, path_regex: str, path_prefix: str, method: str, registry: Any
    ) -> dict[str, Any] | None:
        """The operation with every answer it can give, its path id's bounds, and its filters' empty values."""
        operation: dict[str, Any] | None = super().get_operation(path, path_regex, path_prefix, method, registry)
        if operation is None:
            return None
        filters = getattr(getattr(self.view, "filterset_class", None), "base_filters", {})
        for parameter in operation.get("parameters", []):
            if parameter["in"] == "path" and parameter["schema"].get("type") == "integer":
                parameter["schema"].update({"format": "int64", "minimum": 1, "maximum": MAX_ID})
            if parameter["in"] == "query" and parameter["name"] in filters:
                parameter["allowEmptyValue"] = True  # ``?state=`` filters nothing (server/api/filters.py)
        responses: dict[str, Any] = operation["responses"]
        for code, description in self._error_answers(operation).items():
            responses.setdefault(code, {"description": description})
        error = self.resolve_serializer(ErrorSerializer, "response").ref
        for code, response in responses.items():
            # 414 comes from gunicorn (an HTML page), before the API sees the request.
            if code.startswith("4") and code != "414" and "content" not in response:
                response["content"] = {"application/json": {"schema": error}}
        operation["responses"] = dict(sorted(responses.items()))
        return operation

    def _error_answers(self, operation: dict[str, Any]) -> dict[str, str]:
        """The error answers of ``operation`` that come from the machinery, by status code."""
        answers: dict[str, str] = {}
        query = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
        path = [p["name"] for p in operation.get("parameters", []) if p["in"] == "path"]
        body = "requestBody" in operation
        if body:
            answers["400"] = "the body is not valid (malformed JSON, or bad fields: the messages name them)"
            answers["413"] = "the body is over the upload limit (LATENCYLAB_MAX_UPLOAD_BYTES)"
            answers["415"] = "the body's content type is not one this operation reads"
        elif query:
            answers["400"] = f"a query parameter ({', '.join(query)}) is not valid or given twice; the message names it"
        if path:
            answers["404"] = "nothing with this id, or not your team's"
        elif "page" in query:
            answers["404"] = "the page is past the last one"
        if query or path:
            answers["414"] = "the request line is over the web server's limit (an HTML page from gunicorn)"
        if not any(isinstance(p, AllowAny) for p in self.view.get_permissions()):
            answers["401"] = "no credentials, or an API token that is not valid"
            answers["403"] = "your user belongs to no team (or a session request lacks its CSRF token)"
        if self.view.get_throttles():
            answers["429"] = "too many requests (anonymous, or with bad tokens) from your address; retry later"
        return answers

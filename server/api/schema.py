"""OpenAPI additions: how ``ApiTokenAuthentication`` appears in the schema."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


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

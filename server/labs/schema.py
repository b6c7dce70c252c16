"""How ``LabTokenAuthentication`` appears in the OpenAPI schema (imported by the app's ``ready``)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension


class LabTokenScheme(OpenApiAuthenticationExtension):  # type: ignore[no-untyped-call]
    """``Authorization: Lab <token>``."""

    target_class = "server.labs.authentication.LabTokenAuthentication"
    name = "labTokenAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        """A lab token in the Authorization header, prefixed with ``Lab``."""
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "A lab machine's token, sent as `Authorization: Lab <token>` (create one with "
            "`latencylab lab add NAME` on the server host, or in the admin).",
        }

"""The REST API: serializers, views, routes and the OpenAPI schema."""

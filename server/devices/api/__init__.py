"""The devices' REST API: serializers, filters, views and routes."""

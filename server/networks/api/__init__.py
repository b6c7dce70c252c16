"""The networks' REST API: serializers, views and routes."""

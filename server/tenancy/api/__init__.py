"""The multi-tenant sharing REST API: sweeps, their request bodies, filters, views and routes."""

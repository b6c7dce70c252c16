"""The fusion REST API: sweeps and plans, their request bodies, filters, views and routes."""

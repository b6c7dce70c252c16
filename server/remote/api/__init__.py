"""The remote-inference REST API: runs, their request bodies, views and routes."""

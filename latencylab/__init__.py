"""LatencyLab's command line and (later) its Python client for NAS tools."""

"""The LatencyLab Django project: settings, URLs and one app per domain."""

"""The web dashboard: device fleet, models, jobs with live progress, per-operator breakdowns."""

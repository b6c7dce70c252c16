"""Profiling jobs, their lifecycle, and the timings they produce."""

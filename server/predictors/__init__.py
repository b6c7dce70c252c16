"""Latency predictors: trained from stored timings or imported measurements, versioned, served."""

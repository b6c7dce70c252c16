"""Benchmark history: series of one model on one kind of hardware over time, and the changes in them."""

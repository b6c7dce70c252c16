"""Uploaded networks: the file, its parsed graph, and its costs."""

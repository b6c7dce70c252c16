"""The worker room: the Celery app, the thin profiling task, and the device agent a lab machine runs.

``python -m workers.run`` (or ``latencylab worker``) starts the agent; see ``workers.run`` for
how it guarantees one job per device at a time.
"""

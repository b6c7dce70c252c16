"""Sub-commands of the ``latencylab`` CLI, one module per group."""

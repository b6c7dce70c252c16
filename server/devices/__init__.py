"""The lab's devices: what workers found, whether they are reachable, and which are alike."""

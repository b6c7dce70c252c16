"""The one error of the fuser."""

from __future__ import annotations


class FusionError(ValueError):
    """Kernels that cannot be fused as asked; the message names the kernel and the reason."""


__all__ = ["FusionError"]

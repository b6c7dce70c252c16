"""ParallelFusion: independent OpenCL kernels fused source-to-source into one (seed paper 000,
section 4.2). See docs/fusion.md.

``parse`` (preprocessing and pycparser), ``rewrite`` (renaming, table 2), ``fuse`` (the fused
kernel, figures 5 and 6) and ``launch`` (section 4.2's rounding) need no OpenCL driver;
``cache``, ``run`` and ``graph_launches`` do (pyopencl), and are imported from their modules.
Sweeps (section 5): ``kinds`` (the paper's operator kinds and MFLOPs, no driver), ``pool``
(networks loaded on a device), ``compare`` (private outputs, the output check, interleaved
timing) and ``sweep`` (``plan_sweep``, ``run_sweep``), also imported from their modules.
The planner (beyond the paper): ``plan`` (which ready kernels to fuse at each step),
``plan_model`` (the latency model and measured benefits), ``plan_load``, ``plan_calibrate`` and
``plan_run`` (``compare_plan``: sequential vs the plan vs fuse-all, outputs checked).
``on_device`` is what a worker calls for a sweep or plan job.
"""

from __future__ import annotations

from devicelab.fusion.errors import FusionError
from devicelab.fusion.fuse import FusedKernel, SubKernel, fuse
from devicelab.fusion.launch import FusedLayout, fused_offsets, fused_work_size, plan_layout, rounding_unit

__all__ = [
    "FusedKernel",
    "FusedLayout",
    "FusionError",
    "SubKernel",
    "fuse",
    "fused_offsets",
    "fused_work_size",
    "plan_layout",
    "rounding_unit",
]

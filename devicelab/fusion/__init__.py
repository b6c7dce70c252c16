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

Each is imported from its module; this package imports none of them, so that ``spec`` (what a
sweep or plan takes, declared once) imports no numpy: the command line builds its flags from it.
"""

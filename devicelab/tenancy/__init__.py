"""Multi-tenant sharing of one OpenCL device (issue 21; seed 003, Jain et al., "Dynamic Space-Time
Scheduling for GPU Inference"): R tenants, each with its own weights and inputs on the device,
served by exclusive access, time-only, space-only or space-time (batched super-kernel) sharing.

Django-free. The modules, by what they hold:

* ``gemm``: SGEMM problems, register tiles, launches of the batched kernels, the numpy check;
* ``programs``: the kernels' programs, built once per device and loaded as binaries elsewhere;
* ``memory``: footprints, the memory budget, allocations, memory-bound errors;
* ``scheduling``: the strategy interface, the round-robin scheduler, the submitter threads;
* ``gemm_strategies``: the strategies for SGEMM tenants;
* ``network_layers`` and ``network_strategies``: the strategies for network tenants, and which
  layers space-time batches;
* ``checks``: outputs against each tenant's exclusive run;
* ``rows``, ``sweep``, ``table1``: result rows, the interleaved sweep, table 1;
* ``ceiling``: numpy's SGEMM on the same cores.

pyopencl is imported by most of these modules; import this package only where OpenCL is meant
to be used (``devicelab.tenancy.sweep``), like ``devicelab.backends.opencl``.

Each is imported from its module; this package imports none of them, so that ``spec`` (what a
sweep takes, declared once) imports no numpy or pyopencl: the command line builds its flags from it.
"""

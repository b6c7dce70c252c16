"""The OpenCL backend: the lab's own kernels (``kernels/*.cl``), planned, built and timed on any
OpenCL device.

Importing this package, ``plan``, ``fusion``, ``tiling`` or ``limits`` needs no OpenCL driver
(the predictors plan kernels in the web process); ``backend`` (the registry's ``BACKEND``),
``devices``, ``programs`` and ``runner`` import pyopencl.
"""

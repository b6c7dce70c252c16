"""Building an OpenCL program from source with exactly the options the lab chose.

pyopencl's ``Program.build`` appends ``-I <pyopencl's include folder>`` to every build: a path
inside the Python environment. Drivers that keep compiled programs on disk key them by source
and options (PoCL's kernel cache; NVIDIA's compute cache), so every new virtual environment or
checkout (a reinstalled worker, each CI clone) compiled every kernel again: on PoCL, minutes of
compilation before the first measurement. Our kernels include nothing from pyopencl, so they
are built through the program object itself, with the lab's options only: the same source and
options give the same key on any machine layout, and a driver's cache serves them.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import pyopencl as cl


def build_program(ctx: cl.Context, source: str, options: Sequence[str]) -> cl.Program:
    """``source`` built for every device of ``ctx`` with ``options`` and nothing else.

    A build failure raises ``cl.RuntimeError`` whose message holds the driver's build log, as
    ``Program.build`` does; a successful build's log (PoCL's loop remarks) is not shown."""
    program = cl._cl._Program(ctx, source)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", cl.CompilerWarning)
        program.build(" ".join(options).encode(), None)
    return cl.Program(program)

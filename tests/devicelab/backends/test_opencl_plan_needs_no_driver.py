"""The OpenCL plan imports without pyopencl: a web process answering an OpenCL predictor's request
plans kernels but never loads the driver bindings."""

from __future__ import annotations

import subprocess
import sys


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)


def test_importing_the_opencl_plan_does_not_import_pyopencl() -> None:
    done = _python(
        "import sys\n"
        "import devicelab.backends.opencl.plan, devicelab.backends.opencl\n"
        "import devicelab.backends.opencl.fusion, devicelab.backends.opencl.tiling\n"
        "import devicelab.predict.deduce_opencl\n"
        "assert 'pyopencl' not in sys.modules, 'pyopencl was imported'\n"
    )
    assert done.returncode == 0, done.stderr


def test_the_opencl_plan_works_where_pyopencl_cannot_be_imported() -> None:
    done = _python(
        "import sys\n"
        "sys.modules['pyopencl'] = None  # as if it were not installed\n"
        "from devicelab.backends.opencl.plan import kernels_for_graph\n"
        "from devicelab.graph import zoo\n"
        "print(len(kernels_for_graph(zoo.build('mobilenet_v2'))))\n"
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 0

"""The kernel sources keep the contract that lets a later step fuse independent kernels
source-to-source (ParallelFusion): one __kernel per file, global sizes as arguments with the
early-return guard, only get_global_id, no barriers or local memory, one shared helper text."""

from __future__ import annotations

import re

import pytest

from devicelab.backends.opencl.plan import KERNELS
from devicelab.backends.opencl.programs import kernel_functions, kernel_source

FORBIDDEN = (
    "barrier",
    "__local",
    "local ",
    "get_local_id",
    "get_local_size",
    "get_group_id",
    "get_num_groups",
    "get_global_size",
    "get_global_offset",
    "#define",
    "#include",
)
HELPER = re.compile(r"^real_v ll_act\(.*?^}\n", re.DOTALL | re.MULTILINE)


@pytest.mark.parametrize("name", KERNELS)
def test_one_kernel_with_global_sizes_as_arguments(name: str) -> None:
    src = kernel_source(name)
    assert kernel_functions(src) == [name]
    signature = re.search(rf"__kernel\s+void\s+{name}\s*\(([^)]*)\)", src).group(1)
    params = [p.strip() for p in signature.split(",")]
    assert params[:2] == ["const int gs0", "const int gs1"]
    assert "const int i0 = get_global_id(0);" in src and "const int i1 = get_global_id(1);" in src
    assert "if (i0 >= gs0 || i1 >= gs1) return;" in src
    code = "\n".join(line.split("//")[0] for line in src.splitlines())  # comments may mention anything
    for word in FORBIDDEN:
        assert word not in code, f"{name}.cl uses {word!r}"


def test_the_shared_helper_is_the_same_text_everywhere() -> None:
    helpers = {name: HELPER.findall(kernel_source(name)) for name in KERNELS}
    with_helper = {name: h[0] for name, h in helpers.items() if h}
    assert set(with_helper) >= {
        "conv2d",
        "conv2d_1x1",
        "depthwise_conv2d",
        "fully_connected",
        "binary",
        "activation",
        "scale_shift",
    }
    assert all(len(h) <= 1 for h in helpers.values())
    assert len(set(with_helper.values())) == 1

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
HELPER = re.compile(r"^(?:__attribute__\(\(\w+\)\) )?(?:real_v|idx_v|void) (ll_\w+)\(.*?^}\n", re.DOTALL | re.MULTILINE)


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


def test_shared_helpers_are_the_same_text_everywhere() -> None:
    texts: dict[str, set[str]] = {}
    users: dict[str, set[str]] = {}
    for name in KERNELS:
        for match in HELPER.finditer(kernel_source(name)):
            texts.setdefault(match.group(1), set()).add(match.group(0))
            users.setdefault(match.group(1), set()).add(name)
    assert set(texts) == {"ll_act", "ll_act_any", "ll_load", "ll_store", "ll_rows"}
    assert all(len(t) == 1 for t in texts.values()), "a helper's text differs between files"
    epilogues = {
        "conv2d",
        "conv2d_flat",
        "conv2d_1x1",
        "depthwise_conv2d",
        "depthwise_conv2d_flat",
        "fully_connected",
        "binary",
        "activation",
        "scale_shift",
    }
    assert users["ll_act"] == users["ll_act_any"] == epilogues
    assert users["ll_load"] == {"conv2d", "conv2d_flat", "depthwise_conv2d", "pool2d"}
    assert users["ll_rows"] == {"conv2d_flat", "depthwise_conv2d_flat"}


@pytest.mark.parametrize("name", KERNELS)
def test_nothing_but_helpers_and_the_kernel_at_file_scope(name: str) -> None:
    src = HELPER.sub("", kernel_source(name))
    code = [line for line in src.splitlines() if line.strip() and not line.lstrip().startswith("//")]
    assert code[0].startswith(f"__kernel void {name}(")

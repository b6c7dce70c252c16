"""A backend kernel given a tenant axis: one launch runs a step of the plan for many tenants.

Space-time batches a network's GEMM-able steps through the batched SGEMM (``network_layers``).
Every other step (depthwise convolutions, pooling, element-wise adds, global pooling...) is the
backend's own 2-D kernel. To batch such a step across the tenants, the kernel gets a third axis,
the tenant, by edits to its source at parser-given positions (``devicelab.fusion.parse``) that
change nothing it computes:

* every ``__global`` or ``__constant`` pointer parameter ``p`` is renamed ``<prefix>p``, a
  ``long`` parameter ``<prefix>p_stride`` is added, and the body starts by declaring ``p`` again,
  with its own declaration text, as ``<prefix>p + tenant * <prefix>p_stride``: the body reads
  and writes the tenant's region of a buffer that holds every tenant's (the activation arenas;
  weights gathered per step), at a stride in elements of the pointer's own type;
* the tenant is ``get_global_id(2)`` (strided: all tenants, offline) or
  ``<prefix>tenants[get_global_id(2)]`` (indexed: the online scheduler's batch, any subset), as
  the added ``<prefix>indexed`` argument says;
* the launch is the tenant's own (g0, g1) with its own work-group (l0, l1), plus a third axis as
  long as the batch with work-group extent 1: a work-group never spans two tenants, so a kernel's
  ``__local`` memory and barriers see its own tenant only;
* a work-item built-in asked about dimension 2 answers what the 2-D launch answered (id 0,
  size 1), so those calls become constants, and ``get_work_dim()`` becomes 2. A call whose
  dimension is not a constant, or of a built-in that spans the whole ND-range
  (``get_global_linear_id``), is refused: the step then runs per tenant.

The rest of the text is the backend's, expanded with the backend's own build options: a batched
step computes the same bits as the tenant's own launch of the backend's kernel.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache

from devicelab.fusion.errors import FusionError
from devicelab.fusion.parse import ParsedKernel, parse_kernel, split_options, tokenize

ADDRESS_SPACES = frozenset({"__global", "global", "__constant", "constant"})
SCALAR_BYTES = {
    "char": 1,
    "uchar": 1,
    "bool": 1,
    "short": 2,
    "ushort": 2,
    "half": 2,
    "int": 4,
    "uint": 4,
    "float": 4,
    "long": 8,
    "ulong": 8,
    "double": 8,
    "size_t": 8,  # only where the device's address bits are 64; checked by ``element_bytes``
}
# Built-ins whose answer along dimension 2 is a constant in a 2-D launch.
DIM2_CONSTANTS = {
    "get_global_id": "0",
    "get_local_id": "0",
    "get_group_id": "0",
    "get_global_offset": "0",
    "get_global_size": "1",
    "get_local_size": "1",
    "get_enqueued_local_size": "1",
    "get_num_groups": "1",
}
WHOLE_RANGE_BUILTINS = frozenset({"get_global_linear_id"})


class TenantAxisError(FusionError):
    """A kernel that cannot be given a tenant axis; the message says which and why."""


@dataclass(frozen=True)
class AxisPointer:
    """A pointer parameter the tenant axis offsets."""

    index: int  # its position among the kernel's own parameters
    name: str
    element_bytes: int  # what one step of the pointer is, so a byte stride can be converted


@dataclass(frozen=True)
class TenantAxisKernel:
    """A kernel's source with the tenant axis; its arguments are the kernel's own, then one
    stride (in elements) per pointer in ``pointers``, then the tenant index buffer and the flag."""

    kernel: str  # the kernel function's name, unchanged
    key: str  # names the generated source (a program cache key)
    source: str  # preprocessed: build it with ``options``, which carry no -D any more
    options: tuple[str, ...]
    params: int  # how many parameters the kernel had
    pointers: tuple[AxisPointer, ...]


def element_bytes(declaration: str) -> int:
    """The size of what a pointer parameter points to, from its declaration text."""
    for word in (t.value for t in tokenize(declaration)):
        base = word.rstrip("0123456789")
        width = word[len(base) :]
        if base in SCALAR_BYTES and base != "size_t":
            lanes = int(width) if width else 1
            if lanes not in (1, 2, 3, 4, 8, 16):
                break
            return SCALAR_BYTES[base] * (4 if lanes == 3 else lanes)  # a 3-vector is stored as 4
    raise TenantAxisError(f"cannot tell the element size of the pointer parameter {declaration.strip()!r}")


def _prefix(parsed: ParsedKernel) -> str:
    prefix = "ll_ta_"
    while any(name.startswith(prefix) for name in parsed.identifiers):
        prefix += "_"
    return prefix


def _pointer(parsed: ParsedKernel, index: int) -> AxisPointer | None:
    param = parsed.params[index]
    text = parsed.text[param.start : param.end]
    words = {t.value for t in tokenize(text)}
    if "*" not in words or not words & ADDRESS_SPACES:
        return None  # a scalar, or a __local/__private pointer (a work-group's own memory)
    if "[" in words:
        raise TenantAxisError(f"kernel {parsed.name!r}: array parameter {param.name!r} is not supported")
    return AxisPointer(index, param.name, element_bytes(text))


def _builtin_edits(parsed: ParsedKernel) -> list[tuple[int, int, str]]:
    edits = []
    for call in parsed.builtins:
        if call.builtin in WHOLE_RANGE_BUILTINS:
            raise TenantAxisError(f"kernel {parsed.name!r} calls {call.builtin}, which spans every tenant")
        if call.builtin == "get_work_dim":
            edits.append((call.offset, call.end, "((uint)2)"))
            continue
        if call.builtin not in DIM2_CONSTANTS:
            continue  # barriers and the like: a work-group is one tenant's
        if call.dim is None:
            raise TenantAxisError(
                f"kernel {parsed.name!r}: {call.builtin} at offset {call.offset} has no constant dimension"
            )
        if call.dim == 2:
            value = DIM2_CONSTANTS[call.builtin]
            edits.append((call.offset, call.end, f"((size_t){value})"))
    return edits


def add_tenant_axis(source: str, options: tuple[str, ...], kernel: str) -> TenantAxisKernel:
    """The kernel ``kernel`` of ``source`` (built with ``options``) with a tenant axis (cached)."""
    return _add_tenant_axis(source, tuple(options), kernel)


@lru_cache(maxsize=256)
def _add_tenant_axis(source: str, options: tuple[str, ...], kernel: str) -> TenantAxisKernel:
    try:
        parsed = parse_kernel(source, options, kernel)
    except TenantAxisError:
        raise
    except FusionError as e:
        raise TenantAxisError(str(e)) from e
    prefix = _prefix(parsed)
    pointers = [p for p in (_pointer(parsed, i) for i in range(len(parsed.params))) if p is not None]
    if not pointers:
        raise TenantAxisError(f"kernel {kernel!r} has no __global pointer parameter to offset per tenant")
    edits = _builtin_edits(parsed)
    declarations = []
    for ptr in pointers:
        param = parsed.params[ptr.index]
        text = parsed.text[param.start : param.end].rstrip()
        if not text.endswith(param.name):
            raise TenantAxisError(f"kernel {kernel!r}: parameter {param.name!r} is not declared name-last")
        name_at = param.start + len(text) - len(param.name)
        edits.append((name_at, name_at + len(param.name), f"{prefix}{param.name}"))
        declarations.append(f"    {text} = {prefix}{param.name} + {prefix}tenant * {prefix}{param.name}_stride;")
    added = [f"const long {prefix}{p.name}_stride" for p in pointers]
    added += [f"__global const int* {prefix}tenants", f"const int {prefix}indexed"]
    last = parsed.params[-1]
    edits.append((last.end, last.end, ", " + ", ".join(added)))
    head = (
        f"\n    const size_t {prefix}tenant = {prefix}indexed ? "
        f"(size_t){prefix}tenants[get_group_id(2)] : get_group_id(2);\n" + "\n".join(declarations) + "\n"
    )
    edits.append((parsed.body_start + 1, parsed.body_start + 1, head))
    text = parsed.text
    for start, end, new in sorted(edits, key=lambda e: e[0], reverse=True):
        text = text[:start] + new + text[end:]
    _, rest = split_options(options)
    key = f"{kernel}@tenant_axis#{hashlib.sha256((text + ' '.join(rest)).encode()).hexdigest()[:16]}"
    return TenantAxisKernel(kernel, key, text, rest, len(parsed.params), tuple(pointers))


__all__ = ["AxisPointer", "TenantAxisError", "TenantAxisKernel", "add_tenant_axis", "element_bytes"]

"""The two edits ParallelFusion makes to each sub-kernel (section 4.2): renaming identifiers that
would collide in one fused kernel, and rewriting the work-item built-ins by table 2.

**Renaming.** Everything a fused kernel's body can see is one namespace: the parameters of every
sub-kernel (they become parameters of one kernel) and every file-scope name (helper functions,
file-scope constants). A sub-kernel's parameter or file-scope name that any other sub-kernel
also spells is renamed with the suffix ``_<i>`` (``_<i>_<n>`` if that is taken too), the
paper's "suffix to duplicate identifiers". File-scope items whose tokens are identical in
every sub-kernel that has them (our shared helpers ``ll_act``, ``ll_store``... when the
sub-kernels share their types and widths), and that use no file-scope name that is not itself
shared, are kept once and never renamed. A rename is applied everywhere its name is declared
or used in its scope: a parameter's in the kernel function, a file-scope name's in the whole
source, which is a consistent renaming even where a local declaration shadows the name.

**Table 2.** In sub-kernel ``k_i`` fused along dimension 0 at ``offset_i`` (``global_size_dim{d}_i``
is the extent of its part of the ND-range in dimension ``d``):

==================  ====================================================
OpenCL              fused
==================  ====================================================
get_global_id(0)    get_global_id(0) - offset_i
get_global_size(d)  global_size_dim{d}_i
get_num_groups(d)   global_size_dim{d}_i / get_local_size(d)
get_group_id(0)     get_group_id(0) - offset_i / get_local_size(0)
get_work_dim()      the sub-kernel's own number of dimensions
==================  ====================================================

Other dimensions are not offset, so ``get_global_id(d)`` and ``get_group_id(d)`` for ``d > 0``
stay as they are, and so do ``get_local_id`` and ``get_local_size``. Every rewrite keeps the
built-in's ``size_t`` type. The group-relative rows are exact only when each offset is a
multiple of the work-group size, which ``fuse`` checks before it lets a sub-kernel use them.

**Table 2 in the packed layout** (``launch.plan_packed_layout``: a 1-D launch, each sub-kernel's
range linearised into its part). The branch of ``k_i`` first recovers its own ids, as ``uint``,
from its linear id ``l = get_global_id(0) - offset_i`` (``global_id0_i = l % global_size_dim0_i``,
``global_id1_i = l / global_size_dim0_i % global_size_dim1_i``..., the last without the ``%``):

==================  ====================================================
OpenCL              fused, packed
==================  ====================================================
get_global_id(d)    (size_t)global_id{d}_i (0 for ``d`` past its own dimensions)
get_global_size(d)  global_size_dim{d}_i
get_num_groups(d)   global_size_dim{d}_i / get_local_size(d)
get_group_id(d)     (size_t)global_id{d}_i / get_local_size(d)
get_work_dim()      the sub-kernel's own number of dimensions
==================  ====================================================

A dimension in which the sub-kernel's range has extent 1 takes no part: its id is the constant
0. A range of one row, ``(n, 1)``, recovers only ``global_id0_i``, the linear id itself, with no
division, and its row id is a constant the compiler sees is the same for the whole work-group
(a CPU compiler then computes what depends on it once per work-group).

``get_local_id`` and ``get_local_size`` stay: in a 1-D launch they read 0 and 1 past dimension
0, which is what a sub-kernel whose own work-group is ``(L0, 1, ...)`` sees, and along dimension
0 they are its own when the fused work-group is ``L0`` and its linearised rows are a multiple of
``L0`` long (``fuse`` checks both before it lets a sub-kernel that uses them be packed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from devicelab.fusion.errors import FusionError
from devicelab.fusion.parse import REFUSED_BUILTINS, REFUSED_PREFIXES, BuiltinCall, ParsedKernel
from devicelab.fusion.spec import PACKED, PAPER


@dataclass(frozen=True)
class FusedNames:
    """The identifiers the fused kernel adds (figures 5 and 6), behind a prefix that no
    sub-kernel spells (empty unless one does)."""

    prefix: str
    kernel: str
    dims: int

    def offset(self, i: int) -> str:
        """Argument: where sub-kernel ``i`` starts along dimension 0."""
        return f"{self.prefix}offset_{i}"

    def size(self, d: int, i: int) -> str:
        """Argument: the extent of sub-kernel ``i``'s part in dimension ``d``."""
        return f"{self.prefix}global_size_dim{d}_{i}"

    def macro(self, what: str) -> str:
        """Figure 6's macros (GLOBAL_SIZE, GLOBAL_ID_CONDITION, SKIP_ID) and the packed layout's
        (WORK_ITEMS), for this many dimensions."""
        return f"{self.prefix}{what}_{self.dims}_DIMS"

    def linear_id(self, i: int) -> str:
        """Packed layout, local variable: sub-kernel ``i``'s linear id within its part."""
        return f"{self.prefix}linear_id_{i}"

    def global_id(self, d: int, i: int) -> str:
        """Packed layout, local variable: sub-kernel ``i``'s own global id in dimension ``d``."""
        return f"{self.prefix}global_id{d}_{i}"

    def all_for(self, count: int) -> set[str]:
        """Every name added for ``count`` sub-kernels (in either layout)."""
        macros = ("GLOBAL_SIZE", "GLOBAL_ID_CONDITION", "SKIP_ID", "WORK_ITEMS")
        names = {self.kernel, *(self.macro(m) for m in macros)}
        for i in range(count):
            names.add(self.offset(i))
            names.add(self.linear_id(i))
            names.update(self.size(d, i) for d in range(self.dims))
            names.update(self.global_id(d, i) for d in range(self.dims))
        return names


def fused_names(kernel: str, dims: int, count: int, taken: Iterable[str]) -> FusedNames:
    """Names for the fused kernel's additions that collide with none of ``taken``."""
    taken = set(taken)
    for attempt in range(100):
        prefix = "" if attempt == 0 else f"pf{attempt}_"
        names = FusedNames(prefix, f"{prefix}{kernel}", dims)
        if not names.all_for(count) & taken:
            return names
    raise FusionError("no free prefix for the fused kernel's names")  # 100 prefixes all spelled: not real code


# ---------------------------------------------------------------------------------------------
# Renaming


@dataclass(frozen=True)
class RenamePlan:
    """What to rename in each sub-kernel, and which file-scope items are kept once."""

    shared: frozenset[str]  # file-scope names emitted once, unrenamed
    file_scope: tuple[dict[str, str], ...]  # per sub-kernel: renamed file-scope names
    params: tuple[dict[str, str], ...]  # per sub-kernel: renamed parameters


def shared_file_scope_names(parsed: Sequence[ParsedKernel]) -> frozenset[str]:
    """File-scope names defined by the same tokens in every sub-kernel that defines them (at least
    two), whose items use only file-scope names that are shared as well."""
    definitions: dict[str, list[tuple[int, int]]] = {}
    for k, p in enumerate(parsed):
        for j, item in enumerate(p.items):
            if item.name is not None and not item.is_kernel:
                definitions.setdefault(item.name, []).append((k, j))
    shared = {
        name
        for name, defs in definitions.items()
        if len({k for k, _ in defs}) >= 2 and len({parsed[k].items[j].key for k, j in defs}) == 1
    }
    defined = set(definitions)
    changed = True
    while changed:  # a helper stays shared only if everything it calls is
        changed = False
        for name in sorted(shared):
            k, j = definitions[name][0]
            uses = (parsed[k].items[j].refs & defined) - {name}
            if not uses <= shared:
                shared.discard(name)
                changed = True
    return frozenset(shared)


def plan_renames(parsed: Sequence[ParsedKernel], reserved: Iterable[str] = ()) -> RenamePlan:
    """The renames that make the sub-kernels' parameters and file-scope names distinct."""
    shared = shared_file_scope_names(parsed)
    reserved = set(reserved)
    taken = set(reserved).union(*(p.identifiers for p in parsed))
    file_scope: list[dict[str, str]] = []
    params: list[dict[str, str]] = []
    for i, p in enumerate(parsed):
        others = set(reserved).union(*(q.identifiers for k, q in enumerate(parsed) if k != i))
        own_file = {n for n in p.file_scope_names - shared if n in others}
        own_params = {q.name for q in p.params if q.name in others}
        maps: list[dict[str, str]] = []
        for names in (own_file, own_params):
            renames: dict[str, str] = {}
            for name in sorted(names):
                renames[name] = fresh = _fresh(f"{name}_{i}", taken)
                taken.add(fresh)
            maps.append(renames)
        file_scope.append(maps[0])
        params.append(maps[1])
    return RenamePlan(shared, tuple(file_scope), tuple(params))


def _fresh(base: str, taken: set[str]) -> str:
    name, n = base, 1
    while name in taken:
        name, n = f"{base}_{n}", n + 1
    return name


# ---------------------------------------------------------------------------------------------
# Table 2


def rewrite_builtin(
    call: BuiltinCall,
    i: int,
    own_dims: int,
    names: FusedNames,
    layout: str = PAPER,
    live_dims: tuple[int, ...] | None = None,
) -> str | None:
    """What replaces one built-in call in sub-kernel ``i`` (None: it stays as written), by table 2
    in the paper layout or in the packed one (see the module docstring). In the packed layout,
    ids are recovered in the ``live_dims`` (by default all its own dimensions) and are 0 in the
    others."""
    b, d = call.builtin, call.dim
    if b in REFUSED_BUILTINS or b.startswith(REFUSED_PREFIXES):
        raise FusionError(f"{b}() cannot run in a fused kernel (its work-items no longer form the sub-kernel's range)")
    if b == "get_work_dim":
        return f"((uint){own_dims})"
    if b not in ("get_global_id", "get_global_size", "get_num_groups", "get_group_id"):
        return None  # local ids and sizes: the work-group is the sub-kernel's own
    if d is None:
        raise FusionError(f"{b}() needs a constant dimension to be rewritten by table 2")
    if layout == PACKED and b in ("get_global_id", "get_group_id"):
        if d not in (range(own_dims) if live_dims is None else live_dims):
            return "((size_t)0)"  # OpenCL: 0 beyond the work dimensions
        if b == "get_global_id":
            return f"((size_t){names.global_id(d, i)})"
        return f"((size_t){names.global_id(d, i)} / get_local_size({d}))"
    if b == "get_global_id":
        return f"(get_global_id(0) - (size_t){names.offset(i)})" if d == 0 else None
    if b == "get_group_id":
        return f"(get_group_id(0) - (size_t){names.offset(i)} / get_local_size(0))" if d == 0 else None
    if d >= names.dims:
        return "((size_t)1)"  # OpenCL: 1 beyond the work dimensions
    if b == "get_global_size":
        return f"((size_t){names.size(d, i)})"
    return f"((size_t){names.size(d, i)} / get_local_size({d}))"  # get_num_groups


# ---------------------------------------------------------------------------------------------
# Applying the edits


@dataclass(frozen=True)
class Edit:
    """Replace ``text[start:end]`` by ``new``."""

    start: int
    end: int
    new: str


def rename_edits(parsed: ParsedKernel, item: int, renames: Mapping[str, str]) -> list[Edit]:
    """The edits that rename, in one file-scope item, every occurrence of the names in ``renames``."""
    return [
        Edit(n.offset, n.offset + len(n.name), renames[n.name])
        for n in parsed.names
        if n.item == item and n.name in renames
    ]


def builtin_edits(
    parsed: ParsedKernel,
    i: int,
    own_dims: int,
    names: FusedNames,
    layout: str = PAPER,
    live_dims: tuple[int, ...] | None = None,
) -> list[Edit]:
    """Table 2's edits in the kernel function, for the paper or the packed layout; a work-item
    built-in in a helper is refused (a helper cannot see the kernel's offsets)."""
    edits = []
    for call in parsed.builtins:
        if call.item != parsed.kernel_item:
            if rewrite_builtin(call, i, own_dims, names, layout, live_dims) is not None:
                raise FusionError(
                    f"kernel {parsed.name!r}: helper {parsed.items[call.item].name!r} calls {call.builtin}(); "
                    "only the kernel function may, so that it can be rewritten"
                )
            continue
        new = rewrite_builtin(call, i, own_dims, names, layout, live_dims)
        if new is not None:
            edits.append(Edit(call.offset, call.end, new))
    return edits


def apply_edits(text: str, start: int, end: int, edits: Iterable[Edit]) -> str:
    """``text[start:end]`` with the edits that fall inside it applied."""
    inside = sorted((e for e in edits if start <= e.start and e.end <= end), key=lambda e: e.start)
    out: list[str] = []
    at = start
    for e in inside:
        if e.start < at:
            raise FusionError(f"overlapping edits at offset {e.start}")
        out.append(text[at : e.start])
        out.append(e.new)
        at = e.end
    out.append(text[at:end])
    return "".join(out)


__all__ = [
    "Edit",
    "FusedNames",
    "RenamePlan",
    "apply_edits",
    "builtin_edits",
    "fused_names",
    "plan_renames",
    "rename_edits",
    "rewrite_builtin",
    "shared_file_scope_names",
]

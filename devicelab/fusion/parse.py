"""Reading one OpenCL C kernel source as the fuser needs it: preprocessed, tokenized and parsed.

Three steps, each by a real tool rather than patterns over the text:

1. **Preprocess** with the kernel's own build options (``pcpp``, a C99 preprocessor in pure
   Python): our kernels take their types and tiling from ``-D`` options (``real_v``, ``VW``,
   ``OCB``...), and two sub-kernels of one fused kernel may have different values for them, so
   each sub-kernel is expanded with its own before the pieces are put together. Comments go too.
2. **Tokenize** the expanded text with pycparser's C lexer, which gives every token's position.
3. **Parse** it with pycparser's C parser. pycparser reads C99, not OpenCL C, so it parses a
   copy in which the OpenCL-only words (address spaces, ``__kernel``, access qualifiers) and
   ``__attribute__((...))`` are blanked out with spaces of the same length, behind a line of
   ``typedef``s for OpenCL's scalar and vector types. Blanking keeps every line and column, so
   the positions the parser reports are positions in the real text.

What comes out (``ParsedKernel``) is the expanded text and, as positions into it, what the
renaming and the built-in rewriting edit: the file-scope items (helpers, pragmas, kernels), the
kernel's parameters and body, every declaration of and reference to an ordinary identifier
(struct fields and vector components excluded), and every call of a work-item built-in. The
text itself is never re-generated: the fused kernel is the sub-kernels' own code with edits at
parser-given positions, so it computes what they compute.
"""

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pcpp import Preprocessor
from pycparser import c_ast
from pycparser.c_lexer import CLexer
from pycparser.c_parser import CParser, ParseError

from devicelab.fusion.errors import FusionError

# Words of OpenCL C that C99 lacks and that change no parse once removed.
OPENCL_QUALIFIERS = frozenset(
    {
        "__kernel",
        "kernel",
        "__global",
        "global",
        "__local",
        "local",
        "__constant",
        "constant",
        "__private",
        "private",
        "__read_only",
        "read_only",
        "__write_only",
        "write_only",
        "__read_write",
        "read_write",
    }
)
KERNEL_WORDS = frozenset({"__kernel", "kernel"})
_SCALARS = ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "float", "double", "half")
OPENCL_TYPES = (
    "bool",
    "uchar",
    "ushort",
    "uint",
    "ulong",
    "half",
    "size_t",
    "ptrdiff_t",
    "intptr_t",
    "uintptr_t",
    "event_t",
    "sampler_t",
    "image1d_t",
    "image1d_array_t",
    "image1d_buffer_t",
    "image2d_t",
    "image2d_array_t",
    "image3d_t",
    *(f"{s}{n}" for s in _SCALARS for n in (2, 3, 4, 8, 16)),
)
# Macros the OpenCL compiler predefines (OpenCL C 1.2, section 6.10; extension names): a source
# whose conditionals test them cannot be expanded ahead of the compiler.
COMPILER_MACRO_PREFIXES = ("__OPENCL", "CL_VERSION_", "cl_", "FP_FAST_FMA")
COMPILER_MACROS = frozenset(
    {"__IMAGE_SUPPORT__", "__ENDIAN_LITTLE__", "__FAST_RELAXED_MATH__", "__EMBEDDED_PROFILE__", "__kernel_exec"}
)
_PARSED_FILE = "<kernel>"  # the parser's file name for the real text (the typedef line has none)

# Work-item built-ins (OpenCL C 1.2, section 6.12.1) by what the fuser does with them.
REWRITTEN_BUILTINS = frozenset({"get_global_id", "get_global_size", "get_num_groups", "get_group_id", "get_work_dim"})
GROUP_BUILTINS = frozenset(
    {
        "get_local_id",
        "get_local_size",
        "get_local_linear_id",
        "get_enqueued_local_size",
        "get_group_id",
        "get_num_groups",
    }
)
# A barrier in one branch of a fused kernel waits for work-items that never come; the linear
# ids and collectives span the whole ND-range, which no longer is the sub-kernel's. Sub-groups
# (cl_khr_subgroups) and the asynchronous copies, which every work-item of a group must reach,
# are collectives too.
REFUSED_BUILTINS = frozenset(
    {
        "barrier",
        "work_group_barrier",
        "sub_group_barrier",
        "get_global_linear_id",
        "get_num_sub_groups",
        "get_max_sub_group_size",
        "get_enqueued_num_sub_groups",
        "wait_group_events",
    }
)
REFUSED_PREFIXES = ("work_group_", "sub_group_", "get_sub_group_", "async_work_group_", "intel_sub_group_")
LOCAL_MEMORY_WORDS = frozenset({"__local", "local"})


@dataclass(frozen=True)
class Token:
    """One token of the expanded text and where it starts."""

    offset: int
    kind: str  # pycparser's token type: ID, LPAREN, SEMI, PPPRAGMA...
    value: str

    @property
    def end(self) -> int:
        """Offset just past the token."""
        return self.offset + len(self.value)


@dataclass(frozen=True)
class Item:
    """A file-scope item: a function definition, a declaration or a pragma."""

    kind: str  # "function", "declaration" or "pragma"
    name: str | None  # what it defines (None for a pragma)
    start: int
    end: int
    key: tuple[str, ...]  # its tokens: two items with the same key are the same code
    refs: frozenset[str]  # the ordinary identifiers it uses
    is_kernel: bool = False


@dataclass(frozen=True)
class Param:
    """A parameter of the kernel: its name and declaration text span."""

    name: str
    start: int
    end: int
    writes: bool  # a pointer to non-const memory: the kernel may write through it


@dataclass(frozen=True)
class Name:
    """An ordinary identifier where it is declared or used, inside file-scope item ``item``."""

    offset: int
    name: str
    item: int


@dataclass(frozen=True)
class BuiltinCall:
    """A call of a work-item built-in (or of one the fuser refuses)."""

    offset: int
    end: int  # just past its closing parenthesis
    builtin: str
    dim: int | None  # its constant argument (None: no argument, or not a constant)
    item: int


@dataclass(frozen=True)
class ParsedKernel:
    """One kernel's expanded source and the positions the fuser edits (see the module docstring)."""

    name: str
    text: str
    items: tuple[Item, ...]
    kernel_item: int  # index in ``items`` of the kernel function ``name``
    params: tuple[Param, ...]
    body_start: int  # the kernel body's opening brace
    body_end: int  # just past its closing brace
    names: tuple[Name, ...]
    builtins: tuple[BuiltinCall, ...]
    identifiers: frozenset[str]  # every identifier token of the text
    kernel_attributes: bool  # the kernel carries an __attribute__ (a fused kernel would lose it)
    local_memory: bool = False  # the text declares __local memory (shared within a work-group)

    @property
    def file_scope_names(self) -> frozenset[str]:
        """Names defined at file scope other than by a kernel function."""
        return frozenset(it.name for it in self.items if it.name is not None and not it.is_kernel)

    def builtins_used(self) -> frozenset[str]:
        """The work-item built-ins the kernel calls."""
        return frozenset(c.builtin for c in self.builtins)

    def group_dependence(self) -> tuple[str, ...]:
        """What lets the kernel tell which work-items share its work-group: the work-group
        built-ins it calls, and ``__local`` memory (empty: any grouping computes the same)."""
        used = sorted(self.builtins_used() & GROUP_BUILTINS)
        return (*used, "__local memory") if self.local_memory else tuple(used)


# ---------------------------------------------------------------------------------------------
# Build options


def split_options(options: Sequence[str]) -> tuple[list[tuple[str, str]], tuple[str, ...]]:
    """The ``-D`` macro definitions (name, value) of a build-option list, and the other options."""
    defines: list[tuple[str, str]] = []
    others: list[str] = []
    it = iter(options)
    for opt in it:
        if opt.startswith("-D"):
            body = opt[2:] or next(it, "")
            name, eq, value = body.partition("=")
            defines.append((name.strip(), value if eq else "1"))
        else:
            others.append(opt)
    return defines, tuple(others)


class _Preprocessor(Preprocessor):  # type: ignore[misc]  # pcpp ships no types
    """pcpp's preprocessor, with its errors collected instead of printed."""

    def __init__(self) -> None:
        super().__init__()
        self.line_directive = None  # no '#line': positions stay those of the expanded text
        self.errors: list[str] = []

    def on_error(self, file: str, line: int, msg: str) -> None:
        self.errors.append(f"line {line}: {msg}")

    def _unknown(self, name: Any) -> None:
        name = str(getattr(name, "value", name))
        if name.startswith(COMPILER_MACRO_PREFIXES) or name in COMPILER_MACROS:
            # only the OpenCL compiler knows it, and we expand before it sees the source
            self.errors.append(f"a conditional depends on {name}, which only the OpenCL compiler defines")

    def on_unknown_macro_in_defined_expr(self, tok: Any) -> bool:
        self._unknown(tok)
        return False  # the C standard's answer

    def on_unknown_macro_in_expr(self, ident: Any) -> int:
        self._unknown(ident)
        return 0  # the C standard's answer


def preprocess(source: str, options: Sequence[str]) -> str:
    """The source with its ``-D`` build options defined, macros expanded and comments removed."""
    pp = _Preprocessor()
    for name, value in split_options(options)[0]:
        pp.define(f"{name} {value}")
    out = io.StringIO()
    try:
        pp.parse(source, "kernel.cl")
        pp.write(out)
    except Exception as e:  # pcpp raises plain exceptions on some malformed directives
        raise FusionError(f"preprocessing failed: {type(e).__name__}: {e}") from e
    if pp.errors:
        raise FusionError(f"preprocessing failed: {'; '.join(pp.errors[:5])}")
    return out.getvalue()


# ---------------------------------------------------------------------------------------------
# Tokens


def tokenize(text: str) -> list[Token]:
    """pycparser's tokens of a C text, with their offsets."""
    errors: list[str] = []
    lexer = CLexer(lambda msg, line, column: errors.append(f"{line}:{column}: {msg}"))
    lexer.input(text)
    starts = _line_starts(text)
    tokens = []
    while (tok := lexer.token()) is not None:
        tokens.append(Token(starts[tok.lineno - 1] + tok.column - 1, tok.type, tok.value))
    if errors:
        raise FusionError(f"cannot tokenize the kernel source: {'; '.join(errors[:5])}")
    return tokens


def _line_starts(text: str) -> list[int]:
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def _matching(tokens: Sequence[Token], i: int) -> int:
    """Index of the token closing the bracket opened at ``tokens[i]``."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    stack = [pairs[tokens[i].value]]
    for j in range(i + 1, len(tokens)):
        v = tokens[j].value
        if v in pairs:
            stack.append(pairs[v])
        elif v in (")", "]", "}"):
            if v != stack.pop():
                break
            if not stack:
                return j
    raise FusionError(f"unbalanced {tokens[i].value!r} at offset {tokens[i].offset}")


def _masked(text: str, tokens: Sequence[Token]) -> str:
    """The text with OpenCL-only words and attributes blanked (same length, same lines)."""
    chars = list(text)
    i = 0
    while i < len(tokens):
        t = tokens[i]
        end = t.end
        if t.kind == "ID" and t.value in OPENCL_QUALIFIERS:
            pass
        elif t.kind == "ID" and t.value in ("__attribute__", "__attribute"):
            if i + 1 >= len(tokens) or tokens[i + 1].value != "(":
                raise FusionError(f"__attribute__ without its arguments at offset {t.offset}")
            i = _matching(tokens, i + 1)
            end = tokens[i].end
        else:
            i += 1
            continue
        for k in range(t.offset, end):
            if chars[k] != "\n":
                chars[k] = " "
        i += 1
    return "".join(chars)


# ---------------------------------------------------------------------------------------------
# The parse


def _children(node: c_ast.Node) -> Iterator[tuple[str, c_ast.Node]]:
    for field, child in node.children():
        if isinstance(node, c_ast.StructRef) and field == "field":
            continue  # a struct member or vector component (.x, .s0, .lo), not an ordinary identifier
        if isinstance(node, (c_ast.Struct, c_ast.Union)):
            continue  # member declarations name fields, not ordinary identifiers
        yield field, child


def _walk(node: c_ast.Node) -> Iterator[c_ast.Node]:
    yield node
    for _, child in _children(node):
        yield from _walk(child)


def _constant_int(node: Any) -> int | None:
    if isinstance(node, c_ast.Constant) and node.type in ("int", "unsigned int", "long int", "unsigned long int"):
        try:
            return int(node.value.rstrip("uUlL"), 0)
        except ValueError:
            return None
    return None


class _Positions:
    """Maps the parser's (line, column) coordinates to offsets, checking what is there."""

    def __init__(self, text: str, tokens: Sequence[Token]) -> None:
        self.text = text
        self.starts = _line_starts(text)
        self.index = {t.offset: i for i, t in enumerate(tokens)}

    def offset(self, coord: Any, expect: str | None = None) -> int:
        if coord is None or getattr(coord, "file", None) != _PARSED_FILE:
            raise FusionError(f"the parser gave no position for {expect!r}")
        off = self.starts[int(coord.line) - 1] + int(coord.column) - 1
        if expect is not None and self.text[off : off + len(expect)] != expect:
            raise FusionError(f"the parser placed {expect!r} at offset {off}, where the text differs")
        return off

    def token_index(self, offset: int) -> int:
        try:
            return self.index[offset]
        except KeyError:
            raise FusionError(f"no token starts at offset {offset}") from None


def _item_end(node: c_ast.Node, pos: _Positions, tokens: Sequence[Token]) -> int:
    """Index of the last token of a file-scope item."""
    if isinstance(node, c_ast.FuncDef):
        return _matching(tokens, pos.token_index(pos.offset(node.body.coord, "{")))
    if isinstance(node, c_ast.Pragma):
        i = pos.token_index(pos.offset(node.coord))
        return i + 1 if i + 1 < len(tokens) and tokens[i + 1].kind == "PPPRAGMASTR" else i
    # a declaration: up to its semicolon outside any bracket
    i = pos.token_index(pos.offset(node.coord))
    depth = 0
    while i < len(tokens):
        v = tokens[i].value
        if v in "([{":
            depth += 1
        elif v in ")]}":
            depth -= 1
        elif v == ";" and depth == 0:
            return i
        i += 1
    raise FusionError(f"declaration at offset {pos.offset(node.coord)} has no end")


def _param_spans(tokens: Sequence[Token], open_index: int) -> list[tuple[int, int]]:
    """(start, end) offsets of each parameter between the parenthesis at ``open_index`` and its mate."""
    close = _matching(tokens, open_index)
    spans: list[tuple[int, int]] = []
    first, depth = open_index + 1, 0
    for j in range(open_index + 1, close + 1):
        v = tokens[j].value
        if v in "([{" and j != close:
            depth += 1
        elif v in ")]}" and j != close:
            depth -= 1
        elif (v == "," and depth == 0) or j == close:
            if j > first:
                spans.append((tokens[first].offset, tokens[j - 1].end))
            first = j + 1
    return spans


def _writes(decl: c_ast.Decl) -> bool:
    t = decl.type
    if not isinstance(t, c_ast.PtrDecl):
        return False
    inner = t.type
    return "const" not in getattr(inner, "quals", [])


@lru_cache(maxsize=512)
def parse_kernel(source: str, options: tuple[str, ...], name: str) -> ParsedKernel:
    """Preprocess, tokenize and parse the kernel ``name`` of an OpenCL C source (cached)."""
    text = preprocess(source, options)
    tokens = tokenize(text)
    preamble = " ".join(f"typedef int {t};" for t in OPENCL_TYPES)
    try:
        ast = CParser().parse(f'{preamble}\n#line 1 "{_PARSED_FILE}"\n{_masked(text, tokens)}', "<opencl-types>")
    except ParseError as e:
        raise FusionError(f"kernel {name!r} does not parse: {e}") from e
    pos = _Positions(text, tokens)
    nodes = [n for n in ast.ext if getattr(n.coord, "file", None) == _PARSED_FILE]

    items: list[Item] = []
    names: list[Name] = []
    builtins: list[BuiltinCall] = []
    next_token = 0
    kernel_item: int | None = None
    kernel_node: c_ast.FuncDef | None = None
    for index, node in enumerate(nodes):
        last = _item_end(node, pos, tokens)
        start, end = tokens[next_token].offset, tokens[last].end
        item_tokens = tokens[next_token : last + 1]
        next_token = last + 1
        found_names = _names_in(node, pos, index)
        names.extend(found_names)
        builtins.extend(_builtin_calls(node, pos, tokens, index))
        refs = frozenset(n.name for n in found_names)
        if isinstance(node, c_ast.Pragma):
            items.append(Item("pragma", None, start, end, tuple(t.value for t in item_tokens), refs))
            continue
        if isinstance(node, c_ast.FuncDef):
            fname = node.decl.name
            name_at = pos.offset(_declarator(node.decl).coord, fname)
            is_kernel = any(t.value in KERNEL_WORDS for t in item_tokens if t.offset < name_at)
            items.append(Item("function", fname, start, end, tuple(t.value for t in item_tokens), refs, is_kernel))
            if is_kernel and fname == name:
                kernel_item, kernel_node = index, node
            continue
        if isinstance(node, c_ast.Decl) and isinstance(node.type, (c_ast.Struct, c_ast.Union, c_ast.Enum)):
            raise FusionError(f"kernel {name!r}: a file-scope struct, union or enum is not supported")
        if isinstance(node, c_ast.Decl) and node.name:
            items.append(Item("declaration", node.name, start, end, tuple(t.value for t in item_tokens), refs))
            continue
        raise FusionError(
            f"kernel {name!r}: file-scope {type(node).__name__} at offset {start} is not supported "
            "(only functions, named declarations and pragmas)"
        )
    if kernel_item is None or kernel_node is None:
        kernels = [it.name for it in items if it.is_kernel]
        raise FusionError(f"no __kernel function {name!r} in the source; it defines {kernels}")

    item = items[kernel_item]
    name_index = pos.token_index(pos.offset(_declarator(kernel_node.decl).coord, name))
    spans = _param_spans(tokens, name_index + 1)
    decls = [p for p in (kernel_node.decl.type.args.params if kernel_node.decl.type.args else [])]
    decls = [d for d in decls if isinstance(d, c_ast.Decl)]  # '(void)' declares none
    if len(spans) != len(decls) and not (len(decls) == 0 and len(spans) == 1):
        raise FusionError(f"kernel {name!r}: {len(spans)} parameter texts for {len(decls)} parameters")
    params = tuple(
        Param(d.name, s, e, _writes(d)) for d, (s, e) in zip(decls, spans[: len(decls)], strict=True) if d.name
    )
    body_open = pos.offset(kernel_node.body.coord, "{")
    body_close = tokens[_matching(tokens, pos.token_index(body_open))].end
    attrs = any(t.value in ("__attribute__", "__attribute") for t in tokens if item.start <= t.offset < body_open)
    return ParsedKernel(
        name=name,
        text=text,
        items=tuple(items),
        kernel_item=kernel_item,
        params=params,
        body_start=body_open,
        body_end=body_close,
        names=tuple(names),
        builtins=tuple(builtins),
        identifiers=frozenset(t.value for t in tokens if t.kind == "ID"),
        kernel_attributes=attrs,
        local_memory=any(t.kind == "ID" and t.value in LOCAL_MEMORY_WORDS for t in tokens),
    )


def _names_in(node: c_ast.Node, pos: _Positions, item: int) -> list[Name]:
    """Every declaration of and reference to an ordinary identifier in one file-scope item."""
    out: list[Name] = []
    for n in _walk(node):
        if isinstance(n, c_ast.ID):
            out.append(Name(pos.offset(n.coord, n.name), n.name, item))
        elif isinstance(n, c_ast.Decl) and n.name:
            out.append(Name(pos.offset(_declarator(n).coord, n.name), n.name, item))
    return out


def _declarator(decl: c_ast.Decl) -> c_ast.TypeDecl:
    """The innermost type of a declaration, which holds its name and where the name is written
    (the declaration's own position is that of its first pointer or bracket)."""
    t = decl.type
    while not isinstance(t, c_ast.TypeDecl):
        t = t.type
    return t


def _builtin_calls(node: c_ast.Node, pos: _Positions, tokens: Sequence[Token], item: int) -> list[BuiltinCall]:
    out: list[BuiltinCall] = []
    for n in _walk(node):
        if not (isinstance(n, c_ast.FuncCall) and isinstance(n.name, c_ast.ID)):
            continue
        fname = n.name.name
        if not (
            fname in REWRITTEN_BUILTINS
            or fname in GROUP_BUILTINS
            or fname in REFUSED_BUILTINS
            or fname.startswith(REFUSED_PREFIXES)
        ):
            continue
        at = pos.offset(n.name.coord, fname)
        i = pos.token_index(at)
        if i + 1 >= len(tokens) or tokens[i + 1].value != "(":
            raise FusionError(f"call of {fname} at offset {at} has no argument list")
        close = tokens[_matching(tokens, i + 1)]
        args = n.args.exprs if n.args is not None else []
        dim = _constant_int(args[0]) if len(args) == 1 else None
        out.append(BuiltinCall(at, close.end, fname, dim, item))
    return out


__all__ = [
    "BuiltinCall",
    "GROUP_BUILTINS",
    "Item",
    "LOCAL_MEMORY_WORDS",
    "Name",
    "OPENCL_QUALIFIERS",
    "OPENCL_TYPES",
    "Param",
    "ParsedKernel",
    "REFUSED_BUILTINS",
    "REWRITTEN_BUILTINS",
    "Token",
    "parse_kernel",
    "preprocess",
    "split_options",
    "tokenize",
]

"""ELF headers for the double's executables: a binary built for one Android ABI, as the real
toolchains write it (elf.h: ``e_ident`` with its class and data encoding, ``e_machine`` at offset
18), so that a phone whose ``ro.product.cpu.abilist`` lacks that ABI refuses to run it the way
Android's shell does (``not executable: 64-bit ELF file``, exit 126)."""

from __future__ import annotations

import struct

# Android ABI -> (EI_CLASS, e_machine): ELFCLASS32 = 1, ELFCLASS64 = 2; EM_386 = 3, EM_ARM = 40,
# EM_X86_64 = 62, EM_AARCH64 = 183.
ABIS = {"arm64-v8a": (2, 183), "armeabi-v7a": (1, 40), "x86_64": (2, 62), "x86": (1, 3)}
_BY_HEADER = {v: k for k, v in ABIS.items()}
ET_DYN = 3  # a position-independent executable, as the NDK links them


def header(abi: str) -> bytes:
    """The ELF header of a little-endian executable for ``abi`` (64 bytes for 64-bit, 52 for 32-bit)."""
    cls, machine = ABIS[abi]
    ident = b"\x7fELF" + bytes([cls, 1, 1, 0]) + bytes(8)  # class, LSB, EV_CURRENT, System V
    size = 64 if cls == 2 else 52
    rest = struct.pack("<HHI", ET_DYN, machine, 1)  # e_type, e_machine, e_version
    return (ident + rest).ljust(size, b"\0")


def built_for(abi: str, payload: bytes) -> bytes:
    """``payload`` (a double's program, e.g. ``benchmark_model_binary()``) behind an ELF header for ``abi``."""
    return header(abi) + payload


def read(content: bytes) -> tuple[str, bytes] | None:
    """``(abi, payload)`` of a file ``built_for`` an ABI, or None when it has no such header."""
    if len(content) < 52 or content[:4] != b"\x7fELF" or content[4] not in (1, 2) or content[5] != 1:
        return None
    abi = _BY_HEADER.get((content[4], int.from_bytes(content[18:20], "little")))
    if abi is None:
        return None
    return abi, content[64 if content[4] == 2 else 52 :]


__all__ = ["ABIS", "built_for", "header", "read"]

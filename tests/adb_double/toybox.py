"""The command-line tools of the double's phones, as Android's toybox (and mksh builtins) answer.

Messages follow toybox's conventions (``<tool>: <message>`` on stderr, exit 1, and ``(see
"<tool> --help")`` after usage errors). ``taskset`` is toybox 0.8.9's, the one Android 13-15
ship: ``taskset [-ap] [mask] [PID | cmd [args...]]`` with a hex mask only (``-c`` cpu lists came
in 2025), and it runs the command with the affinity the emulated programs then honour.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from tests.adb_double.shell import SIGNAL_NUMBERS, SIGTERM, Proc, Program

ENOENT, EACCES = "No such file or directory", "Permission denied"


def _fail(proc: Proc, tool: str, message: str, code: int = 1) -> int:
    proc.err(f"{tool}: {message}\n")
    return code


def _usage(proc: Proc, tool: str, message: str) -> int:
    return _fail(proc, tool, f'{message} (see "{tool} --help")')


def _paths(args: list[str]) -> list[str]:
    return [a for a in args if not a.startswith("-") or a == "-"]


# -- files ---------------------------------------------------------------------------------------


def cat(proc: Proc) -> int:
    """``cat [FILE...]`` (stdin when none)."""
    status = 0
    paths = _paths(proc.argv[1:])
    if not paths:
        proc.out(proc.stdin)
    for path in paths:
        full = proc.resolve(path)
        f = proc.phone.fs.get(full)
        if f is None:
            reason = "Is a directory" if proc.phone.fs.is_dir(full) else ENOENT
            status = _fail(proc, "cat", f"{path}: {reason}")
        else:
            proc.out(f.read())
    return status


def ls(proc: Proc) -> int:
    """``ls [-1al] [PATH...]``: names, one a line."""
    status = 0
    fs = proc.phone.fs
    for path in _paths(proc.argv[1:]) or [proc.cwd]:
        full = proc.resolve(path)
        if fs.is_dir(full):
            proc.out("".join(f"{n}\n" for n in fs.listdir(full)))
        elif fs.get(full) is not None:
            proc.out(f"{path}\n")
        else:
            status = _fail(proc, "ls", f"{path}: {ENOENT}")
    return status


def echo(proc: Proc) -> int:
    """``echo [-n] ARG...``."""
    args = proc.argv[1:]
    if args[:1] == ["-n"]:
        proc.out(" ".join(args[1:]))
    else:
        proc.out(" ".join(args) + "\n")
    return 0


def rm(proc: Proc) -> int:
    """``rm [-rf] PATH...``."""
    flags = "".join(a[1:] for a in proc.argv[1:] if a.startswith("-"))
    status = 0
    fs = proc.phone.fs
    for path in _paths(proc.argv[1:]):
        full = proc.resolve(path)
        if fs.is_dir(full):
            if "r" not in flags:
                status = _fail(proc, "rm", f"{path}: Is a directory")
            else:
                fs.rmtree(full)
        elif not fs.remove(full) and "f" not in flags:
            status = _fail(proc, "rm", f"{path}: {ENOENT}")
    return status


def cp(proc: Proc) -> int:
    """``cp SOURCE... DEST``: files only (toybox's ``-r`` is not needed here); DEST a directory
    when there are several sources."""
    paths = _paths(proc.argv[1:])
    if len(paths) < 2:
        return _usage(proc, "cp", "Needs 2 arguments")
    fs = proc.phone.fs
    *sources, dest = paths
    into = fs.is_dir(proc.resolve(dest))
    if len(sources) > 1 and not into:
        return _fail(proc, "cp", f"'{dest}' not directory")
    status = 0
    for src in sources:
        f = fs.get(proc.resolve(src))
        if f is None:
            status = _fail(proc, "cp", f"{src}: {ENOENT}")
            continue
        target = proc.resolve(dest) + "/" + src.rsplit("/", 1)[-1] if into else proc.resolve(dest)
        if not fs.is_dir(target.rsplit("/", 1)[0] or "/"):
            status = _fail(proc, "cp", f"{dest}: {ENOENT}")
            continue
        fs.write(target, f.read(), mode=f.mode)
    return status


def chmod(proc: Proc) -> int:
    """``chmod MODE PATH...`` with an octal mode or ``[ugoa]+x``-style changes."""
    args = [a for a in proc.argv[1:] if a not in ("-R",)]
    if len(args) < 2:
        return _usage(proc, "chmod", "Needs 2 arguments")
    mode, status = args[0], 0
    for path in args[1:]:
        f = proc.phone.fs.get(proc.resolve(path))
        if f is None:
            status = _fail(proc, "chmod", f"{path}: {ENOENT}")
            continue
        symbolic = re.fullmatch(r"([ugoa]*)([+-])([rwx]+)", mode)
        if symbolic:
            who, op, perms = symbolic.groups()
            bits = sum({"r": 4, "w": 2, "x": 1}[p] for p in perms)
            shifts = [6, 3, 0] if who in ("", "a") else [{"u": 6, "g": 3, "o": 0}[w] for w in who]
            mask = sum(bits << s for s in shifts)
            f.mode = f.mode | mask if op == "+" else f.mode & ~mask
        elif re.fullmatch(r"[0-7]{1,4}", mode):
            f.mode = int(mode, 8)
        else:
            return _fail(proc, "chmod", f"bad mode '{mode}'")
    return status


def sha256sum(proc: Proc) -> int:
    """``sha256sum FILE...``."""
    status = 0
    for path in _paths(proc.argv[1:]):
        f = proc.phone.fs.get(proc.resolve(path))
        if f is None:
            status = _fail(proc, "sha256sum", f"{path}: {ENOENT}")
        else:
            proc.out(f"{hashlib.sha256(f.read()).hexdigest()}  {path}\n")
    return status


def mkdir(proc: Proc) -> int:
    """``mkdir [-p] DIR...``."""
    for path in _paths(proc.argv[1:]):
        proc.phone.fs.mkdir(proc.resolve(path))
    return 0


def getprop(proc: Proc) -> int:
    """``getprop [NAME [DEFAULT]]``."""
    args, props = proc.argv[1:], proc.phone.props
    if args:
        proc.out(f"{props.get(args[0], args[1] if len(args) > 1 else '')}\n")
    else:
        proc.out("".join(f"[{k}]: [{v}]\n" for k, v in sorted(props.items())))
    return 0


# -- processes -----------------------------------------------------------------------------------


def sleep(proc: Proc) -> int:
    """``sleep SECONDS`` (wall clock; a signal ends it)."""
    try:
        seconds = float(proc.argv[1])
    except (IndexError, ValueError):
        return _usage(proc, "sleep", "Needs 1 argument")
    proc.sleep(seconds)
    return 0


def pidof(proc: Proc) -> int:
    """``pidof NAME...``: the pids of running processes with that name."""
    names = set(proc.argv[1:])
    pids = sorted(p.pid for p in list(proc.phone.processes.values()) if p.name in names)
    if not pids:
        return 1
    proc.out(" ".join(str(p) for p in reversed(pids)) + "\n")
    return 0


def kill(proc: Proc) -> int:
    """``kill [-SIGNAL | -s SIGNAL] PID...``."""
    args, signal = proc.argv[1:], SIGTERM
    if args[:1] == ["-s"] and len(args) > 1:
        args, name = args[2:], args[1]
        signal = int(name) if name.isdigit() else SIGNAL_NUMBERS.get(name.upper().removeprefix("SIG"), -1)
    elif args and args[0].startswith("-") and len(args[0]) > 1:
        name = args.pop(0)[1:]
        signal = int(name) if name.isdigit() else SIGNAL_NUMBERS.get(name.upper().removeprefix("SIG"), -1)
    if signal < 0:
        return _fail(proc, "kill", "Unknown signal")
    if not args:
        return _usage(proc, "kill", "Needs 1 argument")
    status = 0
    for arg in args:
        target = proc.phone.processes.get(int(arg)) if arg.isdigit() else None
        if target is None:
            status = _fail(proc, "kill", f"kill {arg}: No such process")
        else:
            target.kill(signal)
    return status


def _mask_text(cpus: frozenset[int]) -> str:
    return f"{sum(1 << c for c in cpus):x}"


def taskset(proc: Proc) -> int:
    """toybox ``taskset [-ap] [mask] [PID | cmd [args...]]`` (hex mask only)."""
    args = proc.argv[1:]
    flags = ""
    while args and args[0].startswith("-") and len(args[0]) > 1:
        opt = args.pop(0)
        if opt == "--":
            break
        if opt == "--help":
            proc.out(
                "usage: taskset [-ap] [mask] [PID | cmd [args...]]\n\n"
                "Launch a new task which may only run on certain processors, or change\n"
                "the processor affinity of an existing PID.\n\n"
                "Mask is a hex string where each bit represents a processor the process\n"
                "is allowed to run on. PID without a mask displays existing affinity.\n\n"
                "-p\tSet/get the affinity of given PID instead of a new command\n"
                "-a\tSet/get the affinity of all threads of the PID\n"
            )
            return 0
        for ch in opt[1:]:
            if ch not in "pa":
                return _usage(proc, "taskset", f"Unknown option '{opt[opt.index(ch) :]}'")
            flags += ch
    if not args:
        return _usage(proc, "taskset", "Needs 1 argument")
    if "p" not in flags:
        if len(args) < 2:
            return _fail(proc, "taskset", "Needs 2 args")
        mask = _parse_mask(proc, args[0])
        if mask is None:
            return 1
        allowed = mask & proc.phone.all_cores
        if not allowed:
            return _fail(proc, "taskset", f"failed to set pid {proc.pid}'s affinity: Invalid argument")
        return _exec(proc, args[1:], frozenset(allowed), "taskset")
    target_arg = args[-1]
    if not target_arg.lstrip("-").isdigit():
        return _fail(proc, "taskset", f"Not int {target_arg}")
    target = proc if int(target_arg) in (0, proc.pid) else proc.phone.processes.get(int(target_arg))
    if target is None:
        return _fail(proc, "taskset", f"failed to get pid {target_arg}'s affinity: No such process")
    proc.out(f"pid {target.pid}'s current affinity mask: {_mask_text(target.affinity)}\n")
    if len(args) < 2:
        return 0
    mask = _parse_mask(proc, args[0])
    if mask is None:
        return 1
    allowed = mask & proc.phone.all_cores
    if not allowed:
        return _fail(proc, "taskset", f"failed to set pid {target.pid}'s affinity: Invalid argument")
    target.affinity = frozenset(allowed)
    proc.out(f"pid {target.pid}'s new affinity mask: {_mask_text(target.affinity)}\n")
    return 0


def _parse_mask(proc: Proc, text: str) -> frozenset[int] | None:
    cpus: set[int] = set()
    for position, digit in enumerate(reversed(text.lower())):
        if digit not in "0123456789abcdef":
            _fail(proc, "taskset", f"bad mask '{text}'")
            return None
        value = int(digit, 16)
        cpus.update(4 * position + bit for bit in range(4) if value >> bit & 1)
    return frozenset(cpus)


def _exec(proc: Proc, argv: list[str], affinity: frozenset[int], tool: str) -> int:
    # exec() keeps the pid: the same process goes on as the command, with the new affinity.
    proc.argv, proc.affinity = argv, affinity
    program = proc.phone.find_program(proc, exec_from=tool)
    if isinstance(program, int):
        return program
    return program(proc)


def nohup(proc: Proc) -> int:
    """``nohup COMMAND [ARG...]``: run the command immune to hangups."""
    if len(proc.argv) < 2:
        return _usage(proc, "nohup", "Needs 1 argument")
    return _exec(proc, proc.argv[1:], proc.affinity, "nohup")


def nproc(proc: Proc) -> int:
    """``nproc [--all]``: the cores this process may use (or all of them)."""
    cores = proc.phone.all_cores if "--all" in proc.argv else proc.affinity
    proc.out(f"{len(cores)}\n")
    return 0


# -- text filters --------------------------------------------------------------------------------


def _input(proc: Proc, paths: list[str], tool: str) -> tuple[list[bytes], int]:
    if not paths:
        return [proc.stdin], 0
    out, status = [], 0
    for path in paths:
        f = proc.phone.fs.get(proc.resolve(path))
        if f is None:
            status = _fail(proc, tool, f"{path}: {ENOENT}", 2 if tool == "grep" else 1)
        else:
            out.append(f.read())
    return out, status


def grep(proc: Proc) -> int:
    """``grep [-ivcqEFw] [-e PATTERN] PATTERN [FILE...]``."""
    args, flags, patterns = proc.argv[1:], "", []
    rest: list[str] = []
    while args:
        a = args.pop(0)
        if a == "-e" and args:
            patterns.append(args.pop(0))
        elif a.startswith("-") and len(a) > 1 and not rest:
            flags += a[1:]
        else:
            rest.append(a)
    if not patterns:
        if not rest:
            return _usage(proc, "grep", "Needs 1 argument")
        patterns.append(rest.pop(0))
    texts = [re.escape(p) if "F" in flags else p for p in patterns]
    if "w" in flags:
        texts = [rf"\b(?:{t})\b" for t in texts]
    try:
        regex = re.compile("|".join(f"(?:{t})" for t in texts), re.IGNORECASE if "i" in flags else 0)
    except re.error:
        return _fail(proc, "grep", f"bad regex '{patterns[0]}'", 2)
    blobs, status = _input(proc, rest, "grep")
    matched = 0
    for blob in blobs:
        for line in blob.decode(errors="replace").splitlines():
            if bool(regex.search(line)) != ("v" in flags):
                matched += 1
                if "q" not in flags and "c" not in flags:
                    proc.out(line + "\n")
    if "c" in flags:
        proc.out(f"{matched}\n")
    return status or (0 if matched else 1)


def _count_arg(args: list[str], default: int) -> tuple[int, list[str]]:
    count, rest = default, []
    it = iter(args)
    for a in it:
        if a == "-n":
            count = int(next(it, str(default)))
        elif re.fullmatch(r"-n?\d+", a):
            count = int(a.lstrip("-n"))
        else:
            rest.append(a)
    return count, rest


def _lines_tool(take: Callable[[list[str], int], list[str]], tool: str) -> Program:
    def run(proc: Proc) -> int:
        count, paths = _count_arg(proc.argv[1:], 10)
        blobs, status = _input(proc, paths, tool)
        for blob in blobs:
            lines = blob.decode(errors="replace").splitlines(keepends=True)
            proc.out("".join(take(lines, count)))
        return status

    return run


def wc(proc: Proc) -> int:
    """``wc [-lwc] [FILE...]``."""
    flags = "".join(a[1:] for a in proc.argv[1:] if a.startswith("-")) or "lwc"
    blobs, status = _input(proc, _paths(proc.argv[1:]), "wc")
    blob = b"".join(blobs)
    counts = {"l": blob.count(b"\n"), "w": len(blob.split()), "c": len(blob)}
    proc.out(" ".join(str(counts[k]) for k in "lwc" if k in flags) + "\n")
    return status


PROGRAMS: dict[str, Program] = {
    "cat": cat,
    "ls": ls,
    "echo": echo,
    "rm": rm,
    "cp": cp,
    "chmod": chmod,
    "sha256sum": sha256sum,
    "mkdir": mkdir,
    "getprop": getprop,
    "sleep": sleep,
    "pidof": pidof,
    "kill": kill,
    "taskset": taskset,
    "nproc": nproc,
    "nohup": nohup,
    "grep": grep,
    "head": _lines_tool(lambda lines, n: lines[:n], "head"),
    "tail": _lines_tool(lambda lines, n: lines[-n:] if n else [], "tail"),
    "wc": wc,
    "true": lambda proc: 0,
    "false": lambda proc: 1,
    "exit": lambda proc: int(proc.argv[1]) if len(proc.argv) > 1 else 0,
}

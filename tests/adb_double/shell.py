"""The double's ``/system/bin/sh``: tokenizing, ``;``/``&&``/``||``/``|``, redirections, processes.

A command line runs as a sequence of emulated processes (``Proc``) whose output is handed to the
caller chunk by chunk as it is printed, so a long command streams over adb like on a phone. A
``Session`` is one shell connection: cancelling it (the phone was unplugged, went offline or
unauthorized) kills the process that is running and stops the rest of the line. Messages and
exit codes are mksh's (Android's shell): ``inaccessible or not found`` (127), ``can't execute:
Permission denied`` (126), and a killed process's signal name on stderr with 128 + signal.
"""

from __future__ import annotations

import fnmatch
import itertools
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tests.adb_double.phones import Phone

Sink = Callable[[bytes], None]

SIGHUP, SIGABRT, SIGKILL, SIGSEGV, SIGTERM = 1, 6, 9, 11, 15
# What mksh prints (``j_print`` with JP_SHORT: the message, a space, a newline) when a foreground
# process dies of a signal; SIGINT and SIGPIPE are not reported.
SIGNAL_MESSAGES = {
    SIGHUP: "Hangup",
    SIGABRT: "Aborted",
    SIGKILL: "Killed",
    SIGSEGV: "Segmentation fault",
    SIGTERM: "Terminated",
}
SIGNAL_NUMBERS = {"HUP": SIGHUP, "ABRT": SIGABRT, "KILL": SIGKILL, "SEGV": SIGSEGV, "TERM": SIGTERM}

SH = "/system/bin/sh"
_pids = itertools.count(4242)
_pids_lock = threading.Lock()


class Killed(Exception):
    """The running process got a signal; raised out of ``Proc.sleep``/``Proc.check``."""

    def __init__(self, signal: int) -> None:
        super().__init__(signal)
        self.signal = signal


class Session:
    """One shell connection to a phone: its working directory and the processes it runs."""

    def __init__(self) -> None:
        self.cwd = "/"
        self.env: dict[str, str] = {}
        self.pid = _next_pid()
        self.last_background = 0  # $!
        self.cancelled = threading.Event()
        self.procs: set[Proc] = set()
        self._lock = threading.Lock()

    def cancel(self, signal: int = SIGHUP) -> None:
        """The connection is gone: kill what runs, run nothing more."""
        self.cancelled.set()
        with self._lock:
            procs = list(self.procs)
        for proc in procs:
            proc.kill(signal)


def _next_pid() -> int:
    with _pids_lock:
        return next(_pids)


@dataclass(eq=False)
class Proc:
    """One running emulated process: its argv, where its output goes, its CPU affinity."""

    phone: Phone
    argv: list[str]
    stdout: Sink
    stderr: Sink
    session: Session
    cwd: str = "/"
    env: dict[str, str] = field(default_factory=dict)
    affinity: frozenset[int] = frozenset()
    stdin: bytes = b""
    pid: int = field(default_factory=_next_pid)
    signal: int | None = None
    _signalled: threading.Event = field(default_factory=threading.Event)

    @property
    def name(self) -> str:
        """The process name, as ``pidof`` and ``ps`` show it (the executable's basename)."""
        return self.argv[0].rsplit("/", 1)[-1]

    def out(self, data: str | bytes) -> None:
        """Write to stdout (and flush, like ``std::endl``)."""
        self.check()
        self.stdout(data.encode() if isinstance(data, str) else data)

    def err(self, data: str | bytes) -> None:
        """Write to stderr."""
        self.check()
        self.stderr(data.encode() if isinstance(data, str) else data)

    def kill(self, signal: int) -> None:
        """Deliver a (fatal) signal: the process stops at its next ``sleep`` or ``check``."""
        if self.signal is None:
            self.signal = signal
        self._signalled.set()

    def check(self) -> None:
        """Raise ``Killed`` if a signal arrived."""
        if self.signal is not None:
            raise Killed(self.signal)

    def sleep(self, seconds: float) -> None:
        """Sleep, waking up early (with ``Killed``) when a signal arrives."""
        if seconds > 0:
            self._signalled.wait(seconds)
        self.check()

    def resolve(self, path: str) -> str:
        """An absolute, normalised path for ``path`` seen from the working directory."""
        return self.phone.fs.norm(path if path.startswith("/") else f"{self.cwd}/{path}")


Program = Callable[[Proc], int]


# -- tokenizing ----------------------------------------------------------------------------------

_OPERATORS = (";", "&&", "||", "|", "&", "\n")
_QUESTION, _DOLLAR, _BANG, _STAR, _QMARK = "\x00?", "\x00$", "\x00!", "\x00*", "\x00q"


@dataclass
class Redirect:
    """``[fd]>target``, ``[fd]>>target``, ``[fd]<target`` or ``[fd]>&fd2``."""

    fd: int
    op: str
    target: str = ""


@dataclass
class Simple:
    """One simple command: its words and redirections."""

    words: list[str] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)


class ShellSyntaxError(Exception):
    """A command line the shell cannot parse."""


def tokenize(line: str) -> list[str | Redirect]:
    """Split a command line into words, operators and redirections (quotes removed).

    Unquoted ``$?``, ``$$``, ``*`` and ``?`` are kept as markers for expansion at run time.
    """
    tokens: list[str | Redirect] = []
    word: list[str] = []
    in_word = False
    i, n = 0, len(line)

    def flush() -> None:
        nonlocal in_word
        if in_word:
            tokens.append("".join(word))
        word.clear()
        in_word = False

    while i < n:
        c = line[i]
        if c in " \t":
            flush()
            i += 1
        elif c == "'":
            end = line.find("'", i + 1)
            if end < 0:
                raise ShellSyntaxError("unterminated ' string")
            word.append(line[i + 1 : end])
            in_word = True
            i = end + 1
        elif c == '"':
            i += 1
            in_word = True
            while i < n and line[i] != '"':
                if line[i] == "\\" and i + 1 < n and line[i + 1] in '"\\$`':
                    word.append(line[i + 1])
                    i += 2
                elif line.startswith("$?", i):
                    word.append(_QUESTION)
                    i += 2
                elif line.startswith("$$", i):
                    word.append(_DOLLAR)
                    i += 2
                elif line.startswith("$!", i):
                    word.append(_BANG)
                    i += 2
                else:
                    word.append(line[i])
                    i += 1
            if i >= n:
                raise ShellSyntaxError('unterminated " string')
            i += 1
        elif c == "\\" and i + 1 < n:
            word.append(line[i + 1])
            in_word = True
            i += 2
        elif c == "#" and not in_word:
            break
        elif c in "<>":
            fd = -1
            if in_word and word and all(part.isdigit() for part in word) and "".join(word).isdigit():
                fd = int("".join(word))
                word.clear()
                in_word = False
            flush()
            op = c
            if line.startswith(">>", i):
                op, i = ">>", i + 2
            elif line.startswith(">&", i) or line.startswith("<&", i):
                op, i = c + "&", i + 2
            else:
                i += 1
            tokens.append(Redirect(fd if fd >= 0 else (0 if c == "<" else 1), op))
        elif any(line.startswith(op, i) for op in _OPERATORS):
            flush()
            op = next(op for op in ("&&", "||", ";", "|", "&", "\n") if line.startswith(op, i))
            tokens.append(op)
            i += len(op)
        else:
            if line.startswith("$?", i):
                word.append(_QUESTION)
                i += 2
            elif line.startswith("$$", i):
                word.append(_DOLLAR)
                i += 2
            elif line.startswith("$!", i):
                word.append(_BANG)
                i += 2
            elif c == "*":
                word.append(_STAR)
                i += 1
            elif c == "?":
                word.append(_QMARK)
                i += 1
            else:
                word.append(c)
                i += 1
            in_word = True
    flush()
    return tokens


def parse(line: str) -> list[tuple[list[Simple], str]]:
    """A command line as (pipeline, separator) pairs; a pipeline is a list of simple commands."""
    out: list[tuple[list[Simple], str]] = []
    pipeline: list[Simple] = [Simple()]
    pending: Redirect | None = None
    for tok in tokenize(line):
        if pending is not None:
            if not isinstance(tok, str) or tok in _OPERATORS:
                raise ShellSyntaxError("syntax error: redirection without a target")
            pending.target = tok
            pending = None
        elif isinstance(tok, Redirect):
            pipeline[-1].redirects.append(tok)
            pending = tok
        elif tok == "|":
            if not pipeline[-1].words:
                raise ShellSyntaxError("syntax error: '|' unexpected")
            pipeline.append(Simple())
        elif tok in (";", "&&", "||", "&", "\n"):
            if pipeline[-1].words or pipeline[-1].redirects or len(pipeline) > 1:
                out.append((pipeline, ";" if tok == "\n" else tok))
            elif tok in ("&&", "||", "&"):
                raise ShellSyntaxError(f"syntax error: '{tok}' unexpected")
            pipeline = [Simple()]
        else:
            pipeline[-1].words.append(tok)
    if pending is not None:
        raise ShellSyntaxError("syntax error: newline unexpected")
    if pipeline[-1].words or pipeline[-1].redirects:
        out.append((pipeline, ";"))
    return out


# -- running -------------------------------------------------------------------------------------


class _FileSink:
    """Output redirected to a file of the phone, appended chunk by chunk."""

    def __init__(self, phone: Phone, path: str, append: bool) -> None:
        self.phone, self.path = phone, path
        if not append or phone.fs.get(path) is None:
            phone.fs.write(path, b"")

    def __call__(self, data: bytes) -> None:
        self.phone.fs.append(self.path, data)


def _discard(data: bytes) -> None:
    pass


class Shell:
    """Runs command lines of one phone; the phone owns one ``Shell``."""

    def __init__(self, phone: Phone) -> None:
        self.phone = phone

    def run(self, line: str, stdout: Sink, stderr: Sink, session: Session | None = None) -> int:
        """Run a command line, streaming its output; return the exit status of the last command."""
        session = session or Session()
        try:
            commands = parse(line)
        except ShellSyntaxError as exc:
            stderr(f"{SH}: {exc}\n".encode())
            return 1
        status, skip = 0, False
        for pipeline, sep in commands:
            if session.cancelled.is_set():
                break
            if not skip and sep == "&":
                status = self._background(pipeline, stdout, stderr, session, status)
            elif not skip:
                status = self._pipeline(pipeline, stdout, stderr, session, status)
            skip = (sep == "&&" and status != 0) or (sep == "||" and status == 0)
        return status

    def _background(self, pipeline: list[Simple], stdout: Sink, stderr: Sink, session: Session, last: int) -> int:
        """``cmd &``: runs on in its own session, so losing the connection does not stop it (as a
        ``nohup``ed job on a phone survives the cable); output that finds its connection gone is lost."""
        job = Session()
        job.cwd, job.env = session.cwd, dict(session.env)
        pid = _next_pid()
        session.last_background = pid

        def guarded(sink: Sink) -> Sink:
            def write(data: bytes) -> None:
                try:
                    sink(data)
                except OSError:
                    pass

            return write

        threading.Thread(
            target=self._pipeline,
            args=(pipeline, guarded(stdout), guarded(stderr), job, last),
            kwargs={"pid": pid},
            daemon=True,
        ).start()
        return 0

    def _pipeline(
        self, pipeline: list[Simple], stdout: Sink, stderr: Sink, session: Session, last: int, pid: int | None = None
    ) -> int:
        # The stages run one after the other, each reading what the one before wrote: enough for
        # the filters a backend pipes into (grep, head, tail, wc); only the last stage streams.
        data = b""
        status = last
        for k, simple in enumerate(pipeline):
            chunks: list[bytes] = []
            sink = stdout if k == len(pipeline) - 1 else chunks.append
            final = k == len(pipeline) - 1
            status = self._simple(simple, sink, stderr, session, last, stdin=data, pid=pid if final else None)
            data = b"".join(chunks)
            if session.cancelled.is_set():
                break
        return status

    def _expand(self, word: str, last: int, session: Session, cwd: str) -> list[str]:
        word = word.replace(_QUESTION, str(last)).replace(_DOLLAR, str(session.pid))
        word = word.replace(_BANG, str(session.last_background or ""))
        if _STAR not in word and _QMARK not in word:
            return [word]
        pattern = word.replace(_STAR, "*").replace(_QMARK, "?")
        absolute = pattern.startswith("/")
        fs = self.phone.fs
        # Expand component by component, like sh: each wildcard part matches names in the
        # directories the parts before it reached (hidden names only when asked for).
        found = [""]
        for part in [p for p in pattern.split("/") if p]:
            nxt = []
            for prefix in found:
                if "*" not in part and "?" not in part:
                    nxt.append(f"{prefix}/{part}" if prefix or absolute else part)
                    continue
                directory = (prefix or "/") if absolute else (f"{cwd}/{prefix}" if prefix else cwd)
                for name in fs.listdir(directory):
                    if fnmatch.fnmatchcase(name, part) and (part.startswith(".") or not name.startswith(".")):
                        nxt.append(f"{prefix}/{name}" if prefix or absolute else name)
            found = nxt
        matches = [m for m in found if fs.get(self._abs(m, cwd)) is not None or fs.is_dir(self._abs(m, cwd))]
        return sorted(matches) if matches else [pattern]  # mksh leaves a pattern that matches nothing as it is

    def _abs(self, path: str, cwd: str) -> str:
        return self.phone.fs.norm(path if path.startswith("/") else f"{cwd}/{path}")

    def _simple(
        self, simple: Simple, stdout: Sink, stderr: Sink, session: Session, last: int, stdin: bytes, pid: int | None
    ) -> int:
        words: list[str] = []
        for w in simple.words:
            words.extend(self._expand(w, last, session, session.cwd))
        env: dict[str, str] = {}
        while words and "=" in words[0] and words[0].split("=", 1)[0].isidentifier():
            key, value = words.pop(0).split("=", 1)
            env[key] = value
        fds: dict[int, Sink] = {1: stdout, 2: stderr}
        fs = self.phone.fs
        for r in simple.redirects:
            target = self._expand(r.target, last, session, session.cwd)[0]
            if r.op in (">&", "<&"):
                if not target.isdigit() or int(target) not in fds:
                    stderr(f"{SH}: {target}: bad file descriptor\n".encode())
                    return 1
                fds[r.fd] = fds[int(target)]
                continue
            path = fs.norm(target if target.startswith("/") else f"{session.cwd}/{target}")
            if r.op == "<":
                f = fs.get(path)
                if f is None:
                    stderr(f"{SH}: can't open {target}: No such file or directory\n".encode())
                    return 1
                stdin = f.read()
            elif path == "/dev/null":
                fds[r.fd] = _discard
            elif fs.is_dir(path):
                stderr(f"{SH}: can't create {target}: Is a directory\n".encode())
                return 1
            else:
                fds[r.fd] = _FileSink(self.phone, path, append=r.op == ">>")
        if not words:
            return 0
        if words[0] == "cd":
            return self._cd(words, fds[2], session)
        proc = Proc(
            self.phone,
            words,
            fds[1],
            fds[2],
            session,
            cwd=session.cwd,
            env={**session.env, **env},
            affinity=self.phone.all_cores,
            stdin=stdin,
        )
        if pid is not None:
            proc.pid = pid
        return self.spawn(proc)

    def _cd(self, words: list[str], stderr: Sink, session: Session) -> int:
        target = words[1] if len(words) > 1 else "/"
        path = self.phone.fs.norm(target if target.startswith("/") else f"{session.cwd}/{target}")
        if not self.phone.fs.is_dir(path):
            stderr(f"{SH}: cd: {path}: No such file or directory\n".encode())
            return 2
        session.cwd = path
        return 0

    def spawn(self, proc: Proc) -> int:
        """Run a process to its end (the caller's thread is its thread); its exit status."""
        program = self.phone.find_program(proc)
        if isinstance(program, int):
            return program
        with session_registered(proc):
            try:
                if proc.session.cancelled.is_set():
                    raise Killed(SIGHUP)
                return program(proc)
            except Killed as killed:
                message = SIGNAL_MESSAGES.get(killed.signal, f"Signal {killed.signal}")
                if not proc.session.cancelled.is_set():
                    try:
                        proc.stderr(f"{message} \n".encode())
                    except OSError:
                        pass
                return 128 + killed.signal


class session_registered:
    """Context manager: the process is in its session's and its phone's process tables."""

    def __init__(self, proc: Proc) -> None:
        self.proc = proc

    def __enter__(self) -> Proc:
        proc = self.proc
        with proc.session._lock:
            proc.session.procs.add(proc)
        proc.phone.processes[proc.pid] = proc
        return proc

    def __exit__(self, *exc: object) -> None:
        proc = self.proc
        proc.phone.processes.pop(proc.pid, None)
        with proc.session._lock:
            proc.session.procs.discard(proc)

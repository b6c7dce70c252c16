"""Cold start as a distribution: a model loaded N times, each time in a fresh process, with its
first inference.

Table 5 of Ogden & Guo (``../shared/seeds/002_*``) sets a cold start beside a hot one: "we
reloaded the CNN model every time before executing the inference request and measured the cold
start inference time starting from loading the CNN model until the inference response is
generated", averaged over many requests, with its standard deviation. A cold start here is the
same: load + first run (``total_ms``), in a process that has never loaded the model, so that none
of what a process keeps (a driver's built programs, an allocator's pools, the runtime's own
caches) makes a later sample warmer than the first. The interpreter's start is not counted; the
import of the backend and its runtime is kept apart (``import_ms``).

The parent's side is here (``run_fresh``); the child is ``devicelab.measure.cold_process``, which
calls a backend's entry function named by a string, so this package never imports a backend.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import devicelab
from devicelab.measure.cold_process import MARKER, MODULE
from devicelab.measure.harness import Meter
from devicelab.measure.stats import summarize

IN_PROCESS = "in-process"  # the one cold start the harness measures inside the profiling process
FRESH_PROCESS = "fresh-process"  # each sample in a new interpreter (settings.cold_runs > 1)
FRESH_PROCESS_TIMEOUT_S = 900.0  # one cold start of the largest zoo model on a slow driver fits well within
STDERR_TAIL_CHARS = 2_000
STDERR_TAIL_LINES = 1  # a traceback's last line: the exception and its message


class ColdStartError(RuntimeError):
    """A fresh process could not measure its cold start; the message has its exit and its stderr's end."""


@dataclass(frozen=True)
class ColdSample:
    """One cold start (ms): loading the model, then its first inference."""

    load_ms: float
    first_run_ms: float
    import_ms: float | None = None  # importing the backend and its runtime (fresh processes only)

    @property
    def total_ms(self) -> float:
        """Load + first run: table 5's "cold start"."""
        return self.load_ms + self.first_run_ms

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "load_ms": self.load_ms,
            "first_run_ms": self.first_run_ms,
            "total_ms": self.total_ms,
            "import_ms": self.import_ms,
        }


def spread(samples_ms: Sequence[float]) -> dict[str, Any]:
    """``summarize``'s statistics of samples as plain data, with no std (and no cv) for a single
    sample: one sample has no spread, and a 0 would claim one."""
    d = summarize(samples_ms).as_dict()
    if len(samples_ms) < 2:
        d["std"] = None
        d["cv"] = None
        d["noisy"] = False
    return d


@dataclass(frozen=True)
class ColdStarts:
    """The cold starts of one profile, where they were measured (``IN_PROCESS`` or ``FRESH_PROCESS``)."""

    source: str
    samples: list[ColdSample] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.source not in (IN_PROCESS, FRESH_PROCESS):
            raise ValueError(f"cold starts come from {IN_PROCESS!r} or {FRESH_PROCESS!r}, not {self.source!r}")
        if not self.samples:
            raise ValueError("cold starts need at least one sample")

    @classmethod
    def in_process(cls, load_ms: float, first_run_ms: float) -> ColdStarts:
        """The single cold start a backend measured in its own process."""
        return cls(IN_PROCESS, [ColdSample(load_ms, first_run_ms)])

    def load_samples_ms(self) -> list[float]:
        """Each sample's load time (ms)."""
        return [s.load_ms for s in self.samples]

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON: the statistics of load, first run and their total, and the samples."""
        imports = [s.import_ms for s in self.samples if s.import_ms is not None]
        return {
            "source": self.source,
            "n": len(self.samples),
            "load_ms": spread(self.load_samples_ms()),
            "first_run_ms": spread([s.first_run_ms for s in self.samples]),
            "total_ms": spread([s.total_ms for s in self.samples]),
            "import_ms": spread(imports) if imports else None,
            "samples": [s.as_dict() for s in self.samples],
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ColdStarts:
        """The inverse of ``as_dict`` (the statistics are recomputed from the samples)."""
        return cls(
            str(d["source"]),
            [
                ColdSample(float(s["load_ms"]), float(s["first_run_ms"]), _optional_float(s.get("import_ms")))
                for s in d["samples"]
            ],
        )


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


def child_environment() -> dict[str, str]:
    """This process's environment, with the lab's code importable from the child wherever it runs."""
    env = dict(os.environ)
    root = str(Path(devicelab.__file__).resolve().parent.parent)
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join([root, *[p for p in paths if p != root]])
    return env


def parse_child_output(stdout: str) -> ColdSample:
    """The sample a child printed after ``MARKER`` (its last such line)."""
    lines = [line for line in stdout.splitlines() if line.startswith(MARKER)]
    if not lines:
        raise ColdStartError(f"the cold-start process printed no {MARKER.strip()} line")
    d = json.loads(lines[-1][len(MARKER) :])
    return ColdSample(float(d["load_ms"]), float(d["first_run_ms"]), _optional_float(d.get("import_ms")))


def run_fresh_once(
    entry: str, spec_path: Path, *, timeout_s: float = FRESH_PROCESS_TIMEOUT_S, python: str = sys.executable
) -> ColdSample:
    """One cold start in a new interpreter (the same Python as this one) running ``entry``."""
    try:
        done = subprocess.run(
            [python, "-m", MODULE, str(spec_path)],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env=child_environment(),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ColdStartError(f"a cold start of {entry} took more than {timeout_s:.0f} s and was killed") from None
    if done.returncode != 0:
        # the end of a traceback says what went wrong; its frames would bury it in a job's failure reason
        lines = done.stderr.strip().splitlines()[-STDERR_TAIL_LINES:]
        tail = "\n".join(lines)[-STDERR_TAIL_CHARS:] or "(no output on stderr)"
        raise ColdStartError(f"the cold-start process of {entry} exited with {done.returncode}: {tail}")
    return parse_child_output(done.stdout)


def run_fresh(
    entry: str,
    payload: Mapping[str, Any],
    count: int,
    meter: Meter | None = None,
    *,
    timeout_s: float = FRESH_PROCESS_TIMEOUT_S,
) -> ColdStarts:
    """``count`` cold starts, one after another, each in a fresh process that calls
    ``entry(payload)`` (``"module:function"``, returning ``load_ms`` and ``first_run_ms``); steps
    ``meter`` after each."""
    if count < 1:
        raise ValueError(f"count must be at least 1, got {count}")
    samples = []
    with tempfile.TemporaryDirectory(prefix="devicelab-cold-") as tmp:
        spec_path = Path(tmp) / "spec.json"
        spec_path.write_text(json.dumps({"entry": entry, "payload": dict(payload)}))
        for i in range(count):
            samples.append(run_fresh_once(entry, spec_path, timeout_s=timeout_s))
            if meter is not None:
                meter.step(f"cold start {i + 1}/{count} (fresh process)")
    return ColdStarts(FRESH_PROCESS, samples)


__all__ = [
    "FRESH_PROCESS",
    "IN_PROCESS",
    "ColdSample",
    "ColdStartError",
    "ColdStarts",
    "run_fresh",
    "run_fresh_once",
    "spread",
]

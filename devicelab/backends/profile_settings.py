"""How a profile is measured (``ProfileSettings``): the one declaration of every profiling setting.

Each field says its type, bounds, choices and help (``devicelab.spec``); the API's serializer,
the dashboard's submit form and ``latencylab profile``'s flags are derived from it, and
``__post_init__`` checks an instance against it. What a given device can honour (its precisions,
threads, cores) is its ``Capabilities``' check, at submission.

It imports no runtime and no numpy: the command line builds its parser from it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from devicelab import spec
from devicelab.spec import Items, setting

DEVICE_KINDS = ("cpu", "opencl", "android")
PRECISIONS = ("fp32", "fp16", "int8")
# Runtimes' delegates a job may ask for (``settings.delegate``); a device declares those it offers.
DELEGATES = ("cpu", "xnnpack", "gpu", "nnapi")
MAX_COOLDOWN_S = 3_600.0

# Bounds on every profiling setting, whatever the device: a job past them would hold its device
# for days or exhaust its memory. A backend may declare tighter ones in its ``Capabilities``.
MAX_RUNS = 10_000
MAX_WARMUP_RUNS = 1_000
MAX_THREADS = 1_024
NOISE_POLICIES = ("flag", "rerun", "fail")
MAX_NOISE_RERUNS = 5  # each a whole profile again
MAX_COLD_RUNS = 50  # each a fresh process that imports the runtime and loads the model: seconds apiece


@dataclass(frozen=True)
class ProfileSettings:
    """How to measure: backend, threads, runs, cold starts, noise policy, cores, precision, delegate."""

    # The order is the submit form's.
    backend: str = setting(
        "cpu",
        choices=DEVICE_KINDS,
        help="The device's backend; left out, the device's kind (another kind is refused).",
    )
    threads: int = setting(1, ge=1, le=MAX_THREADS, help="Intra-op threads (the device must offer that many).")
    runs: int = setting(30, ge=1, le=MAX_RUNS, help="Timed runs.")
    warmup_runs: int = setting(
        5, ge=0, le=MAX_WARMUP_RUNS, label="Warm-up runs", flag="--warmup", help="Untimed runs before the timed ones."
    )
    # 1 is the profile's own cold start, in its process; more are each made in a fresh process
    # (``devicelab.measure.cold_starts``)
    cold_runs: int = setting(
        1,
        ge=1,
        le=MAX_COLD_RUNS,
        label="Cold starts",
        help="Cold starts (load + first run) to measure: 1 is the profile's own, in its process; more are "
        "each measured in a fresh process (the device must offer them: capabilities.max_cold_runs).",
    )
    # a noisy result has its end-to-end CV above devicelab.measure.stats.HIGH_CV
    on_noise: str = setting(
        "flag",
        choices=NOISE_POLICIES,
        label="When noisy",
        choice_labels={"flag": "flag it", "rerun": "measure again, keep the steadiest", "fail": "fail the job"},
        help="What a noisy result (end-to-end CV above 5 %) does: flag (kept, marked noisy), rerun (profiled "
        "again up to noise_reruns times, the steadiest attempt kept) or fail (the job fails with the CV and the "
        "machine's load). Every result keeps the load read before its runs (environment.machine_load) and each "
        "attempt's CV (environment.noise).",
    )
    noise_reruns: int = setting(
        2, ge=0, le=MAX_NOISE_RERUNS, label="Reruns", help="With on_noise = rerun: at most this many more profiles."
    )
    # seconds of work per job: a NAS sweep of many small jobs, and the tests not about it, skip it
    breakdown: bool = setting(
        True,
        label="Time breakdown",
        help="After the profile, the time breakdown of one inference of an image model (photo decode, resize, "
        "normalize, load, inference, post-processing). Left out: the server's default (LATENCYLAB_TIME_BREAKDOWN, "
        "on unless the lab turned it off).",
    )
    cores: tuple[int, ...] = setting(
        (),
        items=Items(ge=0),
        max_items=MAX_THREADS,
        label="CPU cores",
        help="CPU core ids to pin the run to, or the name of one of the device's core clusters (a phone's big, "
        "mid, little); empty (the default): the OS decides.",
    )
    precision: str = setting("fp32", choices=PRECISIONS, help="Numeric precision; the device must offer it.")
    delegate: str = setting(
        "",
        choices=DELEGATES,
        blank=True,
        choice_labels={"": "device default"},
        help="The runtime delegate (phones: cpu, xnnpack, gpu, nnapi); empty (the default): the device's own "
        "default. The device must offer it.",
    )
    cooldown_c: float | None = setting(
        None,
        ge=1,
        le=119,
        unit="°C",
        label="Cool down below (°C)",
        help="Phones: before measuring, wait until every temperature is below this (°C); left out: the device's "
        "default.",
    )
    cooldown_max_s: float | None = setting(
        None,
        ge=0,
        le=MAX_COOLDOWN_S,
        unit="s",
        label="Cool-down limit (s)",
        help="Phones: the longest wait for cooldown_c (s); left out: the device's default.",
    )

    def __post_init__(self) -> None:
        spec.check(self)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return spec.as_dict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProfileSettings:
        """Settings from plain data, rejecting unknown keys."""
        return spec.from_dict(cls, d, "settings")

"""The conditions a result was measured in, as the job page shows them: what a phone's worker
records in ``JobResult.environment`` (delegate, temperatures before and after, the cool-down
wait, CPU governors and frequencies, screen and charging, memory, the tool) read into plain rows.

Every key is optional: a result from another runtime, or from an older worker, shows what it has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dashboard.formatting import core_ranges, ghz, ms
from devicelab.measure.environment import ProfileEnvironment, stored_environment

# Keys only a phone's worker records: a result holding none of them has no conditions card.
_PHONE_KEYS = (
    "delegate",
    "temperatures_before_c",
    "temperatures_after_c",
    "cooldown",
    "governors",
    "frequencies_khz_before",
    "screen_on",
    "charging",
    "memory_mb",
)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


@dataclass(frozen=True)
class ZoneTemperature:
    """One thermal zone before and after the job (°C; None where it was not read)."""

    zone: str
    before: float | None
    after: float | None

    @property
    def rise(self) -> float | None:
        """How much warmer it was after than before."""
        if self.before is None or self.after is None:
            return None
        return self.after - self.before


@dataclass(frozen=True)
class CoreClock:
    """One CPU core the job ran on: its governor and frequencies (kHz) before, after and at most."""

    core: str
    governor: str
    before_khz: float | None
    after_khz: float | None
    max_khz: float | None

    @property
    def before(self) -> str:
        """The frequency before, in GHz."""
        return ghz(self.before_khz)

    @property
    def after(self) -> str:
        """The frequency after, in GHz."""
        return ghz(self.after_khz)

    @property
    def max(self) -> str:
        """The core's maximum frequency, in GHz."""
        return ghz(self.max_khz)

    @property
    def below_max(self) -> bool:
        """Whether the core ran below its maximum at the end (throttled, or a power-saving governor)."""
        return self.after_khz is not None and self.max_khz is not None and self.after_khz < self.max_khz


@dataclass
class Conditions:
    """What the job page shows of a result's environment; ``facts`` as (label, value) rows."""

    facts: list[tuple[str, str]] = field(default_factory=list)
    temperatures: list[ZoneTemperature] = field(default_factory=list)
    clocks: list[CoreClock] = field(default_factory=list)
    cooldown: str = ""
    hottest_before: ZoneTemperature | None = None
    hottest_after: ZoneTemperature | None = None

    @property
    def shown(self) -> bool:
        """Whether there is anything to show."""
        return bool(self.facts or self.temperatures or self.clocks or self.cooldown)


def _temperatures(env: ProfileEnvironment) -> list[ZoneTemperature]:
    before = env.get("temperatures_before_c") or {}
    after = env.get("temperatures_after_c") or {}
    if not isinstance(before, dict) or not isinstance(after, dict):
        return []
    zones = [ZoneTemperature(str(z), _number(before.get(z)), _number(after.get(z))) for z in {*before, *after}]
    # The hottest zones first: they are the ones that throttle.
    zones.sort(key=lambda t: (-max(t.before or -1e9, t.after or -1e9), t.zone))
    return zones


def _core_sort_key(core: str) -> tuple[int, str]:
    return (int(core), "") if core.isdigit() else (1 << 30, core)


def _clocks(env: ProfileEnvironment) -> list[CoreClock]:
    tables = [
        env.get("governors"),
        env.get("frequencies_khz_before"),
        env.get("frequencies_khz_after"),
        env.get("max_frequencies_khz"),
    ]
    governors, before, after, maximum = (t if isinstance(t, dict) else {} for t in tables)
    cores = sorted({str(c) for t in (governors, before, after, maximum) for c in t}, key=_core_sort_key)
    return [
        CoreClock(
            core=c,
            governor=str(governors.get(c) or ""),
            before_khz=_number(before.get(c)),
            after_khz=_number(after.get(c)),
            max_khz=_number(maximum.get(c)),
        )
        for c in cores
    ]


def _cooldown(env: ProfileEnvironment) -> str:
    cooldown = env.get("cooldown")
    if not isinstance(cooldown, dict):
        return ""
    threshold = _number(cooldown.get("threshold_c"))
    waited, limit = _number(cooldown.get("waited_s")), _number(cooldown.get("max_s"))
    if threshold is None:
        return ""
    waited_text = f"{waited:.1f} s" if waited is not None else "an unknown time"
    limit_text = f" (limit {limit:g} s)" if limit is not None else ""
    if cooldown.get("reached") is False:
        return f"gave up after {waited_text}{limit_text}: still at or above {threshold:g} °C when measuring began"
    if not waited:
        return f"already below {threshold:g} °C: no wait"
    return f"waited {waited_text} to cool below {threshold:g} °C{limit_text}"


def _cores_text(env: ProfileEnvironment) -> str:
    cores = env.get("cores")
    text = core_ranges(cores) if isinstance(cores, list) and cores else ""
    cluster, mask = env.get("cluster"), env.get("taskset_mask")
    if cluster:
        text = f"{text} ({cluster} cluster)" if text else f"{cluster} cluster"
    if mask:
        text += f", taskset mask {mask}"
    return text


def _facts(env: ProfileEnvironment) -> list[tuple[str, str]]:
    facts: list[tuple[str, str]] = []

    def add(label: str, value: Any) -> None:
        if value not in (None, ""):
            facts.append((label, str(value)))

    add("Delegate", env.get("delegate"))
    runtime = " ".join(str(v) for v in (env.get("runtime"), env.get("tool_version")) if v)
    add("Runtime", runtime)
    tool_sha256 = env.get("tool_sha256")
    if tool_sha256:
        add("Tool SHA-256", str(tool_sha256)[:16] + "…")
    profile_modes = {"csv": "CSV file", "text": "text tables (an older tool)"}
    add("Operator profile", profile_modes.get(str(env.get("op_profile_mode") or ""), ""))
    add("Model format", env.get("model_format"))
    add("Threads", env.get("threads"))
    add("Cores", _cores_text(env))
    screen = env.get("screen_on")
    if "screen_on" in env:
        add("Screen", "on" if screen is True else "off" if screen is False else "unknown")
    charging = env.get("charging")
    if charging:
        add("Charging", "not charging" if charging == "none" else f"charging ({charging})")
    level = _number(env.get("battery_level"))
    if level is not None:
        add("Battery", f"{level:g}%")
    memory = env.get("memory_mb")
    if isinstance(memory, dict):
        figures = (("init", memory.get("init")), ("overall", memory.get("overall")), ("peak", memory.get("peak")))
        parts = [f"{k} {mb:.1f} MB" for k, value in figures if (mb := _number(value)) is not None]
        add("Memory", " · ".join(parts))
    timed = (
        ("init", env.get("init_ms")),
        ("first inference", env.get("first_inference_ms")),
        ("warm-up avg", env.get("warmup_avg_ms")),
    )
    phases = [f"{label} {ms(value)} ms" for label, value in ((lb, _number(v)) for lb, v in timed) if value is not None]
    add("Phases", " · ".join(phases))
    add("Serial", env.get("serial"))
    return facts


def conditions(environment: object) -> Conditions:
    """The conditions card of a result (empty, ``shown`` False, for a result no phone measured)."""
    env = stored_environment(environment)
    if not any(k in env for k in _PHONE_KEYS):
        return Conditions()
    temperatures = _temperatures(env)
    with_before = [t for t in temperatures if t.before is not None]
    with_after = [t for t in temperatures if t.after is not None]
    return Conditions(
        facts=_facts(env),
        temperatures=temperatures,
        clocks=_clocks(env),
        cooldown=_cooldown(env),
        hottest_before=max(with_before, key=lambda t: t.before or 0.0) if with_before else None,
        hottest_after=max(with_after, key=lambda t: t.after or 0.0) if with_after else None,
    )


__all__ = ["Conditions", "CoreClock", "ZoneTemperature", "conditions"]

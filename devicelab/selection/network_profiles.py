"""Network profiles: how long a transfer of n bytes takes under one network condition.

A profile is a line and a spread: one transfer takes ``latency_ms + nbytes * ms_per_byte`` on
average, times a random factor of mean 1. The factor is lognormal with coefficient of variation
``cv`` for presets and user-defined profiles; for a profile recorded from real transfers it is
drawn from the recorded transfers themselves (each one's time over the fitted line), so the
shape of the recorded spread, tails included, is what a simulation replays.

Presets are the paper's conditions (seed 002, figure 10 and section 5.2.1). The text gives means
and ratios, never a spread, and never how a round trip splits into fixed latency and bytes; what
is derived and what is assumed is said beside each number (and in ``docs/selection.md``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

KINDS = ("preset", "recorded", "user")

# The paper's request: "preprocessed images (average 330KB)" (section 5.2); its response is a few
# text labels (section 5: T_input >= T_output "given ... images are often larger than ... text
# labels"). 1 KB for the labels is our assumption.
PAPER_REQUEST_BYTES = 330_000
PAPER_RESPONSE_BYTES = 1_000


def _number(name: str, value: Any, *, minimum: float = 0.0) -> float:
    """A finite float >= minimum, or ValueError naming ``name``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(v) or v < minimum:
        raise ValueError(f"{name} must be finite and >= {minimum:g}, got {value!r}")
    return v


def _nbytes(value: Any, name: str = "nbytes") -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return int(value)


@dataclass(frozen=True)
class NetworkProfile:
    """One network condition: mean transfer time ``latency_ms + nbytes * ms_per_byte`` and its spread."""

    name: str
    latency_ms: float  # fixed cost of one transfer (connection, round trips), whatever its size
    ms_per_byte: float  # inverse throughput
    cv: float = 0.0  # coefficient of variation of one transfer's time (presets and user profiles)
    kind: str = "user"  # "preset", "recorded" or "user"
    source: str = ""  # where the numbers come from
    transfers: tuple[tuple[int, float], ...] = field(default=())  # recorded (bytes, seconds)

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ValueError(f"a network profile needs a non-empty name, got {self.name!r}")
        if self.kind not in KINDS:
            raise ValueError(f"kind of profile {self.name!r} must be one of {', '.join(KINDS)}, got {self.kind!r}")
        latency = _number(f"latency_ms of {self.name!r}", self.latency_ms)
        per_byte = _number(f"ms_per_byte of {self.name!r}", self.ms_per_byte)
        if latency == 0 and per_byte == 0:
            raise ValueError(f"profile {self.name!r} makes every transfer take 0 ms: give latency_ms or ms_per_byte")
        cv = _number(f"cv of {self.name!r}", self.cv)
        transfers = tuple(
            (_nbytes(b, f"bytes of a transfer of {self.name!r}"), _number(f"seconds of {self.name!r}", s))
            for b, s in self.transfers
        )
        if self.kind == "recorded" and len(transfers) < 2:
            raise ValueError(f"recorded profile {self.name!r} needs at least 2 transfers, got {len(transfers)}")
        if self.kind != "recorded" and transfers:
            raise ValueError(f"only a recorded profile carries transfers; {self.name!r} is {self.kind!r}")
        object.__setattr__(self, "latency_ms", latency)
        object.__setattr__(self, "ms_per_byte", per_byte)
        object.__setattr__(self, "cv", cv)
        object.__setattr__(self, "transfers", transfers)

    # --- construction ---

    @classmethod
    def preset(cls, name: str) -> NetworkProfile:
        """One of the paper's conditions (``PRESETS``)."""
        try:
            return PRESETS[name]
        except KeyError:
            raise ValueError(f"no network preset {name!r}; presets: {', '.join(PRESETS)}") from None

    @classmethod
    def user(
        cls,
        name: str,
        *,
        latency_ms: float,
        throughput_mbps: float | None = None,
        cv: float = 0.0,
        source: str = "user-defined",
    ) -> NetworkProfile:
        """A user-defined condition: fixed latency per transfer, throughput in Mbit/s (None: unlimited), spread."""
        if throughput_mbps is None:
            per_byte = 0.0
        else:
            mbps = _number(f"throughput_mbps of {name!r}", throughput_mbps)
            if mbps == 0:
                raise ValueError(f"throughput_mbps of {name!r} must be > 0 (None for unlimited)")
            per_byte = 8.0 / (mbps * 1e3)  # 1 Mbit/s = 1e3 bits per ms
        return cls(name, latency_ms, per_byte, cv, "user", source)

    @classmethod
    def from_round_trip(
        cls,
        name: str,
        round_trip_ms: float,
        *,
        cv: float,
        request_bytes: int = PAPER_REQUEST_BYTES,
        response_bytes: int = PAPER_RESPONSE_BYTES,
        latency_share: float = 1 / 3,
        kind: str = "user",
        source: str = "",
    ) -> NetworkProfile:
        """A condition known only by the mean network time of one request (upload plus download).

        ``latency_share`` of the round trip is each transfer's fixed latency (so the two transfers
        spend 2x that on latency) and the rest is spread over the bytes of both.
        """
        total = _number(f"round_trip_ms of {name!r}", round_trip_ms)
        share = _number(f"latency_share of {name!r}", latency_share)
        if not 0 <= share <= 0.5:
            raise ValueError(f"latency_share of {name!r} must be in [0, 0.5] (two transfers), got {latency_share!r}")
        nbytes = _nbytes(request_bytes, "request_bytes") + _nbytes(response_bytes, "response_bytes")
        if nbytes == 0 and share < 0.5:
            raise ValueError(f"profile {name!r}: with no bytes the whole round trip must be latency (share 0.5)")
        latency = share * total
        per_byte = (total - 2 * latency) / nbytes if nbytes else 0.0
        return cls(name, latency, per_byte, cv, kind, source)

    @classmethod
    def from_transfers(
        cls, name: str, transfers: Iterable[tuple[int, float]], *, source: str = "recorded transfers"
    ) -> NetworkProfile:
        """A condition recorded from real transfers, each ``(bytes, seconds)``.

        The line is the least-squares fit of time on size (through the origin when the fit's
        intercept is negative, flat when time does not grow with size); with a single size the
        time is taken as all throughput (latency 0). The spread is the transfers' own.
        """
        rows = tuple(transfers)
        if len(rows) < 2:
            raise ValueError(f"recorded profile {name!r} needs at least 2 transfers, got {len(rows)}")
        x = np.array([_nbytes(b, f"bytes of a transfer of {name!r}") for b, _ in rows], dtype=np.float64)
        y = np.array([_number(f"seconds of {name!r}", s) for _, s in rows]) * 1e3
        if np.all(y == 0):
            raise ValueError(f"recorded profile {name!r}: every transfer took 0 s")
        latency, per_byte = _fit_line(x, y)
        profile = cls(name, latency, per_byte, 0.0, "recorded", source, tuple((int(b), float(s)) for b, s in rows))
        ratios = profile._ratios()
        return cls(name, latency, per_byte, float(ratios.std() / ratios.mean()), "recorded", source, profile.transfers)

    # --- what a profile predicts ---

    @property
    def throughput_mbps(self) -> float | None:
        """Throughput in Mbit/s (None when size costs nothing)."""
        return None if self.ms_per_byte == 0 else 8.0 / (self.ms_per_byte * 1e3)

    def transfer_ms(self, nbytes: int) -> float:
        """Mean time of one transfer of ``nbytes``."""
        return self.latency_ms + _nbytes(nbytes) * self.ms_per_byte

    def _ratios(self) -> np.ndarray:
        """Each recorded transfer's time over the line, scaled to mean 1 (the empirical factor)."""
        x = np.array([b for b, _ in self.transfers], dtype=np.float64)
        y = np.array([s for _, s in self.transfers]) * 1e3
        line = self.latency_ms + x * self.ms_per_byte
        ratios = np.where(line > 0, y / np.where(line > 0, line, 1.0), 1.0)
        scaled: np.ndarray = ratios / ratios.mean()
        return scaled

    def sample_factor(self, size: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """``size`` draws of the random factor (mean 1) that scales a transfer's mean time."""
        gen = np.random.default_rng(rng)
        if self.kind == "recorded":
            return gen.choice(self._ratios(), size=size)
        if self.cv == 0:
            return np.ones(size)
        s2 = math.log1p(self.cv**2)  # lognormal with mean 1 and std cv
        return gen.lognormal(-s2 / 2, math.sqrt(s2), size=size)

    def sample_transfer_ms(self, nbytes: int, size: int, rng: np.random.Generator | int | None = None) -> np.ndarray:
        """``size`` seeded draws of one transfer's time (ms)."""
        return self.transfer_ms(nbytes) * self.sample_factor(size, rng)

    def sample_exchange_ms(
        self, request_bytes: int, response_bytes: int, size: int, rng: np.random.Generator | int | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """``size`` requests' (upload, download) times (ms). A request's two transfers share one factor:
        they cross the same network at the same moment."""
        factor = self.sample_factor(size, rng)
        return self.transfer_ms(request_bytes) * factor, self.transfer_ms(response_bytes) * factor

    # --- JSON ---

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "name": self.name,
            "kind": self.kind,
            "latency_ms": self.latency_ms,
            "ms_per_byte": self.ms_per_byte,
            "cv": self.cv,
            "source": self.source,
            "transfers": [[b, s] for b, s in self.transfers],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> NetworkProfile:
        """Inverse of ``as_dict``."""
        if not isinstance(data, Mapping):
            raise ValueError(f"a network profile must be a JSON object, got {type(data).__name__}")
        raw = data.get("transfers") or ()
        try:
            transfers = tuple((b, s) for b, s in raw)
        except (TypeError, ValueError):
            raise ValueError(f"a network profile's transfers must be [bytes, seconds] pairs, got {raw!r}") from None
        try:
            return cls(
                name=data["name"],
                latency_ms=data["latency_ms"],
                ms_per_byte=data["ms_per_byte"],
                cv=data.get("cv", 0.0),
                kind=data.get("kind", "user"),
                source=str(data.get("source", "")),
                transfers=transfers,
            )
        except KeyError as missing:
            raise ValueError(f"a network profile needs the key {missing}") from None

    def to_json(self) -> str:
        """The profile as a JSON string."""
        return json.dumps(self.as_dict())

    @classmethod
    def from_json(cls, text: str) -> NetworkProfile:
        """Inverse of ``to_json``."""
        try:
            data = json.loads(text)
        except json.JSONDecodeError as bad:
            raise ValueError(f"a network profile's JSON does not parse: {bad}") from None
        return cls.from_dict(data)


def _fit_line(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """(intercept, slope) of time on size, both kept >= 0."""
    if np.unique(x).size < 2:
        size = float(x[0])
        return (float(y.mean()), 0.0) if size == 0 else (0.0, float(y.mean()) / size)
    slope, intercept = np.polyfit(x, y, 1)
    if slope <= 0:  # time does not grow with size over these transfers: all of it is latency
        return float(y.mean()), 0.0
    if intercept < 0:  # a negative fixed cost is noise: refit through the origin
        return 0.0, float((x @ y) / (x @ x))
    return float(intercept), float(slope)


def _paper_preset(name: str, round_trip_ms: float, cv: float, source: str) -> NetworkProfile:
    return NetworkProfile.from_round_trip(name, round_trip_ms, cv=cv, kind="preset", source=source)


_SPLIT = (
    "; split: a third of the round trip is each transfer's fixed latency, the rest the bytes of a 330 KB "
    "request and a 1 KB response (our assumption: the paper gives only the total); spread cv {cv} is our "
    "assumption (the text gives none)"
)

# Figure 10's text: "The majority of the classification time is network transfer time with up to
# 66.7% in the cellular hotspot case. Overall, the edge-server based classification ranges from
# 375ms to 600ms"; caption: "when using cellular hotspot, the transfer time almost doubled when
# compared to university WiFi". Derived: the hotspot's network time is 66.7% of the top of the
# range, 0.667 x 600 = 400 ms; WiFi's is half of that, 200 ms (375 ms end to end leaves 175 ms of
# compute, close to the hotspot's 200). LTE is not quantified in the text: midway, 300 ms.
PRESETS: dict[str, NetworkProfile] = {
    p.name: p
    for p in (
        _paper_preset(
            "campus_wifi",
            200.0,
            0.2,
            "seed 002 figure 10 text: hotspot network time ~ half of WiFi's (400 ms / 2)" + _SPLIT.format(cv=0.2),
        ),
        _paper_preset(
            "lte",
            300.0,
            0.3,
            "seed 002 figure 10: LTE not quantified in the text; midway between WiFi (200 ms) and the "
            "hotspot (400 ms)" + _SPLIT.format(cv=0.3),
        ),
        _paper_preset(
            "cellular_hotspot",
            400.0,
            0.4,
            "seed 002 figure 10 text: network is 66.7% of the 600 ms end to end" + _SPLIT.format(cv=0.4),
        ),
        # Section 5.2.1 (figure 12): "connected to our campus WiFi which has an average network time
        # of 63ms over the course of the test", with 330 KB images: the network of the prototype run.
        _paper_preset(
            "prototype_wifi",
            63.0,
            0.2,
            "seed 002 section 5.2.1: campus WiFi, average network time 63 ms for 330 KB images" + _SPLIT.format(cv=0.2),
        ),
    )
}

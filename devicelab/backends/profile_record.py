"""A profile as it crosses from a lab machine to the server: ``ProfileRecord``, the JSON form of a
``ProfileResult`` holding exactly what the server stores of it.

The measuring side builds it with ``ProfileRecord.of(result)``; the server reads a posted one with
``ProfileRecord.from_dict`` (``devicelab.wire``: a missing, mistyped or unknown key is refused
naming its path) and stores it. The cold starts and the time breakdown travel as their stored
form (``ColdStarts.as_dict``, ``TimeBreakdown.as_dict``): the server keeps them as they are.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Annotated

from devicelab.backends.base import DeviceInfo, OpTiming, ProfileResult
from devicelab.backends.profile_settings import ProfileSettings
from devicelab.measure.environment import ProfileEnvironment
from devicelab.measure.stats import SampleStats
from devicelab.wire import JsonDict, JsonRecord, OwnJson, fields_json


@dataclass(frozen=True)
class ProfileRecord(JsonRecord):
    """Everything the server stores of one profiling run."""

    device: Annotated[DeviceInfo, OwnJson("a device")]
    settings: Annotated[ProfileSettings, OwnJson("profile settings")]
    e2e: SampleStats
    samples_ms: list[float]
    load_ms: float
    first_run_ms: float
    ops: list[OpTiming]  # read field by field (``OpTiming``'s declared types)
    environment: ProfileEnvironment
    peak_memory_mb: float | None = None
    flags: list[str] = field(default_factory=list)
    cold_starts: JsonDict = field(default_factory=dict)  # ``ColdStarts.as_dict()``
    time_breakdown: JsonDict = field(default_factory=dict)  # ``TimeBreakdown.as_dict()``; {}: not measured

    json_name = "profile"

    @classmethod
    def of(cls, result: ProfileResult) -> ProfileRecord:
        """The record of a backend's result."""
        return cls(
            device=result.device,
            settings=result.settings,
            e2e=result.e2e,
            samples_ms=[float(x) for x in result.samples_ms],
            load_ms=result.cold.load_ms,
            first_run_ms=result.cold.first_run_ms,
            ops=result.ops,
            environment=result.environment,
            peak_memory_mb=result.peak_memory_mb,
            flags=list(result.flags),
            cold_starts=result.cold_distribution().as_dict(),
            time_breakdown=result.breakdown.as_dict() if result.breakdown is not None else {},
        )

    def json_ready(self) -> JsonDict:
        """``as_dict()`` with the operators left as ``OpTiming`` for orjson, which writes a
        dataclass's fields natively (NaN as null, as ``Reported`` says): a 300-operator profile
        in 0.3 ms instead of 3.5 (``tests/devicelab/test_profile_record.py`` checks the two agree)."""
        data = {name: value for name, value in fields_json(replace(self, ops=[])).items() if name != "ops"}
        return {**data, "ops": self.ops}

    def timings(self) -> list[OpTiming]:
        """The operator timings it carries."""
        return self.ops


__all__ = ["ProfileRecord"]

"""What every device backend offers, and the plain data that crosses its boundary.

A backend (``cpu``, ``opencl``, ``android``) is a ``Backend``: it finds its devices
(``discover``), says what each can run (``capabilities``, declared when the device registers and
checked by the server when a job is submitted), and measures a graph on one (``profile``). The
worker only sees these shapes; the server turns them into rows.
"""

from __future__ import annotations

import hashlib
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

# The settings are declared in their own module, which the command line reads without numpy;
# their names are this module's too.
from devicelab.backends.profile_settings import (  # noqa: F401
    DELEGATES,
    DEVICE_KINDS,
    MAX_COLD_RUNS,
    MAX_COOLDOWN_S,
    MAX_NOISE_RERUNS,
    MAX_RUNS,
    MAX_THREADS,
    MAX_WARMUP_RUNS,
    NOISE_POLICIES,
    PRECISIONS,
    ProfileSettings,
)
from devicelab.graph.ir import Graph
from devicelab.graph.jsonio import graph_from_dict, graph_to_dict
from devicelab.graph.limits import NO_LIMITS
from devicelab.measure.breakdown import NotAnImageModel, TimeBreakdown, image_input
from devicelab.measure.cold_starts import FRESH_PROCESS, ColdStartError, ColdStarts, run_fresh
from devicelab.measure.environment import NoiseRecord, ProfileEnvironment
from devicelab.measure.harness import Meter, Progress
from devicelab.measure.stats import HIGH_CV, SampleStats, central

ProgressFn = Callable[[float, str], None]
"""Called with a fraction in [0, 1] and a short message as a run advances."""


class BackendError(RuntimeError):
    """A device runtime could not load or run a graph; the message names the backend and the reason.

    It is the *model's* failure (an operator the runtime refuses, a crash of the runtime on this
    model): the job fails at once with the message, and is not retried."""


class DeviceLost(RuntimeError):
    """The device or the way to it failed during a job (a phone unplugged mid-run, a transport
    error, a timeout): an *infrastructure* failure, so the job is retried on the same or an
    equivalent device, up to its attempt limit. The message says what was lost and when.
    ``gone``: the device itself is not there now (a phone absent, offline or unauthorized on its
    adb server), not just one failed exchange with it."""

    def __init__(self, message: str, gone: bool = False) -> None:
        super().__init__(message)
        self.gone = gone


class UnsupportedSetting(ValueError):
    """A profiling setting that a device cannot honour; ``setting`` names it, the message says
    what the device offers instead."""

    def __init__(self, setting: str, message: str) -> None:
        super().__init__(f"settings.{setting}: {message}")
        self.setting = setting
        self.reason = message


@dataclass(frozen=True)
class Capabilities:
    """What a device can run, declared by its backend when the device registers.

    The server checks a job's settings against it at submission (``check``), so a job the device
    cannot honour is refused with a reason instead of failing on the worker.
    """

    precisions: tuple[str, ...] = ("fp32",)
    max_threads: int = 1  # settings.threads may be 1 .. max_threads
    pins_cores: bool = False  # whether settings.cores is honoured (CPU affinity)
    cores: tuple[int, ...] = ()  # the core ids that exist, when pins_cores
    runtimes: tuple[str, ...] = ()  # the runtime and its delegates, e.g. "onnxruntime 1.20.1"
    formats: tuple[str, ...] = ()  # model formats the runtime executes: "onnx", "tflite", "ir"
    max_runs: int = MAX_RUNS
    max_warmup_runs: int = MAX_WARMUP_RUNS
    delegates: tuple[str, ...] = ()  # settings.delegate may name one of these ("" always allowed)
    # named groups of cores (a phone's "big", "mid", "little" clusters) that settings.cores may name
    core_clusters: dict[str, tuple[int, ...]] = field(default_factory=dict)
    cools_down: bool = False  # whether settings.cooldown_c / cooldown_max_s are honoured
    # settings.cold_runs may be 1 .. max_cold_runs: a backend that can load a model in a fresh
    # process declares more than the one cold start every profile measures
    max_cold_runs: int = 1
    # why the device takes no job at all as it is set up now (a phone whose ABI the lab's
    # benchmark_model binary is not built for); empty: it takes jobs
    refuses: str = ""

    def cluster_cores(self, name: str) -> tuple[int, ...]:
        """The core ids of a named cluster; ``UnsupportedSetting`` for a name the device lacks."""
        if name not in self.core_clusters:
            offered = ", ".join(sorted(self.core_clusters)) or "none"
            raise UnsupportedSetting("cores", f"no core cluster {name!r} on this device; its clusters: {offered}")
        return tuple(self.core_clusters[name])

    def cautions(self, settings: ProfileSettings) -> list[str]:
        """What a job with these settings measures other than its user may think, though the device
        runs it (said at submission; the result carries the matching flag)."""
        out = []
        if settings.cores and settings.threads > len(settings.cores):
            pinned = ", ".join(f"cpu{c}" for c in sorted(settings.cores))
            cluster = next((n for n, ids in self.core_clusters.items() if set(ids) == set(settings.cores)), None)
            where = f"{pinned}, the {cluster!r} cluster" if cluster else pinned
            n = len(settings.cores)
            out.append(
                f"settings.threads: {settings.threads} threads on {n} pinned core{'s' if n > 1 else ''} ({where}) "
                f"take turns, so the time is not that of {settings.threads} threads in parallel; the result "
                "will be flagged oversubscribed"
            )
        return out

    def check(self, settings: ProfileSettings) -> None:
        """Raise ``UnsupportedSetting`` for the first setting this device cannot honour."""
        if self.refuses:
            raise UnsupportedSetting("backend", f"this device takes no jobs: {self.refuses}")
        if settings.precision not in self.precisions:
            raise UnsupportedSetting(
                "precision", f"{settings.precision!r} is not offered; this device runs {', '.join(self.precisions)}"
            )
        if settings.threads > self.max_threads:
            raise UnsupportedSetting("threads", f"{settings.threads} is more than this device's {self.max_threads}")
        if settings.cores:
            if not self.pins_cores:
                raise UnsupportedSetting("cores", "this device cannot pin cores; leave cores empty")
            missing = sorted(set(settings.cores) - set(self.cores))
            if missing:
                raise UnsupportedSetting(
                    "cores", f"cores {missing} do not exist on this device; its cores are {list(self.cores)}"
                )
        if settings.delegate and settings.delegate not in self.delegates:
            offered = ", ".join(self.delegates) or "none (leave delegate empty)"
            raise UnsupportedSetting("delegate", f"{settings.delegate!r} is not offered; this device offers {offered}")
        if (settings.cooldown_c is not None or settings.cooldown_max_s is not None) and not self.cools_down:
            raise UnsupportedSetting(
                "cooldown_c", "this device has no thermal cool-down; leave cooldown_c and cooldown_max_s unset"
            )
        if settings.runs > self.max_runs:
            raise UnsupportedSetting("runs", f"{settings.runs} is more than the limit of {self.max_runs}")
        if settings.cold_runs > self.max_cold_runs:
            raise UnsupportedSetting(
                "cold_runs",
                f"{settings.cold_runs} is more than this device's {self.max_cold_runs}"
                + (": it measures the one cold start of its run" if self.max_cold_runs == 1 else ""),
            )
        if settings.warmup_runs > self.max_warmup_runs:
            raise UnsupportedSetting(
                "warmup_runs", f"{settings.warmup_runs} is more than the limit of {self.max_warmup_runs}"
            )

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        d = asdict(self)
        for key in ("precisions", "cores", "runtimes", "formats", "delegates"):
            d[key] = list(d[key])
        d["core_clusters"] = {name: list(cores) for name, cores in self.core_clusters.items()}
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Capabilities:
        """Capabilities from plain data; keys this version does not know are ignored (a newer
        worker may declare more)."""
        known = cls.__dataclass_fields__
        kwargs: dict[str, Any] = {}
        for key, value in d.items():
            if key not in known:
                continue
            if key == "core_clusters":
                kwargs[key] = {str(name): tuple(int(c) for c in cores) for name, cores in dict(value).items()}
                continue
            kwargs[key] = tuple(value) if isinstance(value, list | tuple) else value
        return cls(**kwargs)


@dataclass(frozen=True)
class DeviceInfo:
    """A device a worker found: a stable identity, its hardware description and what it can run."""

    kind: str
    identity: str  # stable across restarts: e.g. "cpu:<machine-id>", "opencl:<platform>/<device>"
    name: str
    hardware: dict[str, Any] = field(default_factory=dict)
    # What the device can run; None when its backend declared nothing (a device known only from
    # imported measurements, or rows of older workers), so that only the universal bounds apply.
    capabilities: Capabilities | None = None

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        d = asdict(self)
        d["capabilities"] = self.capabilities.as_dict() if self.capabilities is not None else None
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> DeviceInfo:
        """The inverse of ``as_dict``."""
        caps = d.get("capabilities")
        return cls(
            kind=d["kind"],
            identity=d["identity"],
            name=d["name"],
            hardware=dict(d.get("hardware") or {}),
            capabilities=Capabilities.from_dict(caps) if caps else None,
        )


@dataclass(frozen=True)
class OpTiming:
    """Timing of one graph operator, as the runtime really ran it.

    An operator the runtime fused into another's kernel (a ReLU folded into its Conv) has
    ``stats=None`` and ``fused_into`` naming the kernel node that covers it, so predictors can
    learn the runtime's fusion rules. A kernel the runtime inserted on its own (a layout reorder,
    a copy) has ``index=None`` and type ``runtime``: its time is real and is kept, but no graph
    operator owns it.
    """

    index: int | None  # position of the operator in the graph's operator list
    name: str
    type: str
    kernel: str  # what the runtime really ran, e.g. ONNX Runtime's "FusedConv" for Conv + Relu
    input_shapes: list[list[int]]
    output_shapes: list[list[int]]
    attrs: dict[str, Any]
    stats: SampleStats | None
    fused_into: str | None = None  # name of the kernel node that also covers this operator


@dataclass(frozen=True)
class ColdStart:
    """First-use costs, measured apart from warm runs (ms)."""

    load_ms: float  # model load / session or program build / buffer set-up
    first_run_ms: float


@dataclass(frozen=True)
class ProfileResult:
    """Everything one profiling run reports."""

    device: DeviceInfo
    settings: ProfileSettings
    e2e: SampleStats
    samples_ms: list[float]
    cold: ColdStart
    ops: list[OpTiming]
    # the runtime, the model, the machine and how it was measured (its keys: ``ProfileEnvironment``)
    environment: ProfileEnvironment = field(default_factory=lambda: ProfileEnvironment())
    peak_memory_mb: float | None = None  # the runtime's peak memory while it ran, where it reports one
    # why the measurement should not be trusted as is: "hot: ...", "throttled: ..." (like noisy)
    flags: list[str] = field(default_factory=list)
    # the cold starts as a distribution (settings.cold_runs > 1: each in a fresh process); None:
    # only ``cold``, measured in the profile's own process
    cold_starts: ColdStarts | None = None
    # where one inference's time goes (``Backend.profile_job``); None: not measured
    breakdown: TimeBreakdown | None = None

    def cold_distribution(self) -> ColdStarts:
        """The cold starts: the fresh processes' where there were some, else the one in process."""
        return self.cold_starts or ColdStarts.in_process(self.cold.load_ms, self.cold.first_run_ms)


@dataclass(frozen=True)
class ModelFile:
    """The file a user uploaded, for a runtime that runs it as uploaded (a phone runs a ``.tflite``
    with its own weights and quantization, not our export of its graph)."""

    format: str  # "tflite", "onnx", ...
    data: bytes
    name: str = ""

    @property
    def sha256(self) -> str:
        """The SHA-256 of the file's bytes (hex), as recorded with a result that ran it."""
        return hashlib.sha256(self.data).hexdigest()


def cold_start_payload(
    device: DeviceInfo, graph: Graph, settings: ProfileSettings, model_path: Path | None = None, model_format: str = ""
) -> dict[str, Any]:
    """What a fresh process needs to load ``graph`` on ``device`` as ``settings`` ask, as plain JSON;
    with ``model_path``, the uploaded file it loads too (by its path: a model's bytes do not belong
    in JSON)."""
    payload = {"device": device.as_dict(), "graph": graph_to_dict(graph), "settings": settings.as_dict()}
    if model_path is not None:
        payload["model_file"] = {"path": str(model_path), "format": model_format}
    return payload


def read_cold_start_model(payload: Mapping[str, Any]) -> ModelFile | None:
    """The uploaded file a fresh process loads (``cold_start_payload``'s ``model_path``), or None."""
    spec = payload.get("model_file")
    if not spec:
        return None
    path = Path(spec["path"])
    return ModelFile(str(spec["format"]), path.read_bytes(), path.name)


def read_cold_start_payload(payload: Mapping[str, Any]) -> tuple[DeviceInfo, Graph, ProfileSettings]:
    """The inverse of ``cold_start_payload``, in the fresh process."""
    # The graph was read under the server's import limits by the process that sent it; reading
    # its own JSON again allocates nothing per element.
    return (
        DeviceInfo.from_dict(payload["device"]),
        graph_from_dict(payload["graph"], NO_LIMITS),
        ProfileSettings.from_dict(dict(payload["settings"])),
    )


def fresh_cold_starts(
    entry: str,
    device: DeviceInfo,
    graph: Graph,
    settings: ProfileSettings,
    meter: Meter | None = None,
    model_file: ModelFile | None = None,
) -> ColdStarts | None:
    """``settings.cold_runs`` cold starts, each in a fresh process calling the backend's ``entry``
    (``"module:function"``, which reads ``cold_start_payload``); None when one is asked for (the
    profile's own, in its process, is that one). With ``model_file``, each process loads that file,
    written once to a temporary file whose path the payload carries."""
    if settings.cold_runs <= 1:
        return None
    try:
        with tempfile.TemporaryDirectory(prefix="devicelab-cold-") as tmp:
            path = None
            if model_file is not None:
                path = Path(tmp) / f"model.{model_file.format}"
                path.write_bytes(model_file.data)
            payload = cold_start_payload(device, graph, settings, path, model_file.format if model_file else "")
            return run_fresh(entry, payload, settings.cold_runs, meter)
    except ColdStartError as exc:
        raise BackendError(
            f"{device.kind} backend: cold starts of graph {graph.name!r} in fresh processes: {exc}"
        ) from None


# The share of a profile job's progress that the backend's profile takes; the time breakdown's
# client stages take the rest.
PROFILE_SHARE = 0.9
# A rerun of a noisy profile (settings.on_noise = "rerun") gets this fraction of what is left of
# the profile's share of the progress: 75 %, then 19 %, 5 %, ... of it.
RERUN_PROGRESS = 0.25


class Backend(ABC):
    """A device backend: one per device kind, in its own module (``devicelab.backends.<kind>``),
    which alone imports the kind's runtime (onnxruntime, pyopencl, adbutils)."""

    kind: str
    # The device is another machine (a phone, over adb): the load this machine reads before a
    # profile is not the device's (its backend reads the device's own), and a time breakdown's
    # client stages run here while the model runs there.
    remote_device: bool = False
    # ``settings.cores`` are this machine's cores (a CPU backend pins the run to them), so the
    # machine's load is read on those cores and the breakdown's client stages run on them.
    pins_host_cores: bool = False

    def absent(self, device: DeviceInfo) -> str | None:
        """Why ``device`` cannot be reached now (a phone unplugged, ``offline`` or ``unauthorized``
        on its adb server), or None when it is there. Asked before each attempt is claimed: an
        attempt on a device already gone would fail at once and count against the job."""
        return None

    @abstractmethod
    def discover(self) -> list[DeviceInfo]:
        """The devices of this kind on this machine, each with its capabilities; none (with a
        logged reason) when the runtime finds no device."""

    @abstractmethod
    def profile(
        self,
        device: DeviceInfo,
        graph: Graph,
        settings: ProfileSettings,
        progress: ProgressFn | None = None,
        model_file: ModelFile | None = None,
    ) -> ProfileResult:
        """Measure ``graph`` on ``device``: cold start, warm-up, timed runs and per-operator times.

        ``model_file``: the uploaded file the graph came from, for a backend that runs uploads as
        they are (the others run the graph)."""

    def _profile_under_noise_policy(
        self,
        device: DeviceInfo,
        graph: Graph,
        settings: ProfileSettings,
        report: Progress | None,
        share: float,
        model_file: ModelFile | None,
    ) -> ProfileResult:
        """``profile`` as ``settings.on_noise`` asks, the machine's load read before each attempt
        (``devicelab.measure.machine_load``; not for a phone, whose load is not this machine's).
        ``environment`` gets ``machine_load`` (the kept attempt's) and ``noise`` (the policy and
        every attempt's CV); ``BackendError`` when the policy is "fail" and the result is noisy."""
        from devicelab.measure.machine_load import MachineLoad, read_load  # psutil

        attempts = 1 + (settings.noise_reruns if settings.on_noise == "rerun" else 0)
        tried: list[tuple[ProfileResult, MachineLoad | None]] = []
        for i in range(attempts):
            lo = share * (1 - RERUN_PROGRESS**i)
            hi = share if i == attempts - 1 else share * (1 - RERUN_PROGRESS ** (i + 1))

            def scaled(fraction: float, message: str, lo: float = lo, hi: float = hi) -> None:
                assert report is not None
                report(lo + (hi - lo) * fraction, message if fraction < 1.0 or share == 1.0 else "model measured")

            load = None if self.remote_device else read_load(settings.cores if self.pins_host_cores else ())
            result = self.profile(device, graph, settings, scaled if report is not None else None, model_file)
            tried.append((result, load))
            if not result.e2e.noisy:
                break
            if i + 1 < attempts and report is not None:
                report(hi, f"noisy (CV {result.e2e.cv:.0%}): measuring again ({i + 2}/{attempts})")
        steady = [k for k, (r, _) in enumerate(tried) if not r.e2e.noisy]
        kept = steady[0] if steady else min(range(len(tried)), key=lambda k: tried[k][0].e2e.cv)
        result, load = tried[kept]
        noise: NoiseRecord = {
            "policy": settings.on_noise,
            "reruns_allowed": attempts - 1,
            "threshold_cv": HIGH_CV,
            "kept": kept,
            "attempts": [
                {
                    "cv": r.e2e.cv,
                    "noisy": r.e2e.noisy,
                    "central_ms": central(r.e2e),
                    "machine_load": None if lo_ is None else lo_.summary(),
                }
                for r, lo_ in tried
            ],
        }
        # a phone's backend reads the phone's own load; this machine's is not the device's
        own = result.environment.get("machine_load")
        environment: ProfileEnvironment = {
            **result.environment,
            "machine_load": own if load is None else load.as_dict(),
            "noise": noise,
        }
        if result.e2e.noisy and settings.on_noise == "fail":
            summary = load.summary() if load is not None else (own or {}).get("summary")
            machine = f"; the machine: {summary}" if summary else ""
            raise BackendError(
                f"noisy measurement: end-to-end CV {result.e2e.cv:.0%} is above {HIGH_CV:.0%} "
                f"(settings.on_noise = fail){machine}"
            )
        return replace(result, environment=environment)

    def profile_job(
        self,
        device: DeviceInfo,
        graph: Graph,
        settings: ProfileSettings,
        progress: ProgressFn | None = None,
        model_file: ModelFile | None = None,
    ) -> ProfileResult:
        """What a profiling job measures: ``profile``, then (``settings.breakdown``) the time breakdown
        of one inference (``devicelab.measure.image_pipeline``; not applicable, saying why, to a
        model that does not take an image)."""
        from devicelab.measure.image_pipeline import bounded_runs, measure_breakdown  # Pillow

        share = 1.0
        if settings.breakdown:
            try:
                image_input(graph)
                share = PROFILE_SHARE
            except NotAnImageModel:
                pass
        outer = Progress(progress)
        result = self._profile_under_noise_policy(
            device, graph, settings, outer if progress is not None else None, share, model_file
        )
        if not settings.breakdown:
            return result
        cold = result.cold_distribution()
        fresh = cold.source == FRESH_PROCESS
        runs, warmup = bounded_runs(settings.runs, settings.warmup_runs)
        meter = Meter(outer, share, 0.99, runs + warmup)
        breakdown = measure_breakdown(
            graph,
            load_samples_ms=cold.load_samples_ms(),
            load_source=f"the load of {len(cold.samples)} cold starts, each in a fresh process"
            if fresh
            else "the profile's cold start (its load, in the profiling process)",
            inference=result.e2e,
            inference_samples_ms=result.samples_ms,
            runs=settings.runs,
            warmup_runs=settings.warmup_runs,
            host_side=self.remote_device,
            cores=settings.cores if self.pins_host_cores else (),
            step=meter.step if progress is not None else None,
        )
        if share < 1.0:  # else the profile's own "done" was the last report
            outer(1.0, "done")
        return replace(result, breakdown=breakdown)

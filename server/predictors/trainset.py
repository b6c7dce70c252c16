"""Building a training set: N synthetic NAS samples plus zoo models, profiled through ordinary jobs.

Networks are uploaded as the team's own (``upload_model``) and profiled with
``submit_profiling_job``, exactly as a person would through the API; the predictor then trains
on the stored timings like on any others. On the host CPU the deducer's probe graphs are
profiled too (one run each): they show the runtime's fusions a NAS sample may lack, and teach
rules only. A network the team already measured on the device with the same settings (or is
measuring now) is not submitted again, so a re-run only fills the gaps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import ValidationError

from devicelab.graph import Graph, graph_to_json
from server.accounts.models import Team
from server.devices.models import Device, DeviceKind
from server.networks.services import upload_model
from server.profiling.models import JobState, ProfilingJob
from server.profiling.services import submit_profiling_job, validate_settings


@dataclass
class TrainingSet:
    """The jobs of a training set: the ones submitted now and the ones already there."""

    submitted: list[ProfilingJob] = field(default_factory=list)
    reused: list[ProfilingJob] = field(default_factory=list)

    @property
    def jobs(self) -> list[ProfilingJob]:
        """Every job of the set."""
        return [*self.reused, *self.submitted]


def training_graphs(synthetic: int, zoo_names: Sequence[str], seed: int = 0, first_sample: int = 0) -> list[Graph]:
    """The networks of a training set: NAS samples ``first_sample`` .. ``first_sample + synthetic - 1``
    drawn with ``seed``, then zoo models."""
    from devicelab.graph import zoo
    from devicelab.graph.nas import synthetic as space

    # Each sample has its own stream (``sample_spec``): a set split over ``first_sample`` is the
    # same networks as the set drawn at once.
    graphs = [space.build(space.sample_spec(seed, i)) for i in range(first_sample, first_sample + synthetic)]
    known = sorted(zoo.entries())
    for name in zoo_names:
        if name not in known:
            raise ValidationError({"zoo": f"unknown zoo model {name!r}; the zoo has {known}"})
        graphs.append(zoo.build(name))
    return graphs


def _existing_jobs(team: Team, model_id: int, device: Device, settings: dict[str, Any]) -> list[ProfilingJob]:
    """The team's jobs that measured (or are measuring) this network on the device with these settings."""
    return [
        job
        for job in ProfilingJob.objects.filter(
            team=team,
            model_id=model_id,
            device=device,
            state__in=[JobState.SUCCEEDED, JobState.QUEUED, JobState.RUNNING],
        ).order_by("pk")
        if job.settings == settings
    ]


def build_training_set(
    team: Team,
    device: Device,
    synthetic: int,
    zoo_names: Sequence[str] = (),
    threads: int = 1,
    runs: int = 10,
    warmup_runs: int = 2,
    seed: int = 0,
    probes: bool | None = None,
    user: Any = None,
    progress: Callable[[int, int], object] | None = None,
    rounds: int = 1,
    delegate: str = "",
    first_sample: int = 0,
) -> TrainingSet:
    """Upload the networks and queue ``rounds`` profiling jobs per network, less those it already
    has with these settings. Jobs go out round by round (every network once, then every network
    again), so the rounds of one network are measured minutes apart and training merges them
    (``records.merged_by_network``): a burst of interference rarely hits all of them. On a phone,
    ``delegate`` says which of its delegates measures the set (its predictor is for that delegate).
    The synthetic samples are those from index ``first_sample`` on (a set built over several calls)."""
    if device.kind not in (DeviceKind.CPU, DeviceKind.OPENCL, DeviceKind.ANDROID):
        raise ValidationError(
            {
                "device": f"device {device.name!r} is a {device.kind} device; a training set is profiled on cpu, "
                "opencl or android"
            }
        )
    if synthetic < 0:
        raise ValidationError({"synthetic": f"the number of synthetic samples must be >= 0, got {synthetic}"})
    if first_sample < 0:
        raise ValidationError({"first_sample": f"the first sample's index must be >= 0, got {first_sample}"})
    if rounds < 1:
        raise ValidationError({"rounds": f"rounds must be >= 1, got {rounds}"})
    if probes is None:
        probes = device.kind == DeviceKind.CPU
    chosen = {"delegate": delegate} if delegate else {}
    settings = validate_settings(device, {"threads": threads, "runs": runs, "warmup_runs": warmup_runs, **chosen})
    # One timed run is enough for a probe: it only shows which kernels ran.
    probe_settings = validate_settings(device, {"threads": threads, "runs": 1, "warmup_runs": 0, **chosen})
    graphs = training_graphs(synthetic, zoo_names, seed, first_sample)
    from devicelab.predict.cpu_probes import probe_graphs

    plan = [(g, settings, r) for r in range(rounds) for g in graphs]
    plan += [(g, probe_settings, 0) for g in probe_graphs()] if probes else []
    out = TrainingSet()
    models: dict[str, Any] = {}
    existing: dict[str, list[ProfilingJob]] = {}
    for n, (graph, job_settings, rnd) in enumerate(plan, start=1):
        key = f"{graph.name}|{job_settings['runs']}"
        if key not in models:
            models[key], _ = upload_model(
                team, user, graph_to_json(graph).encode(), f"{graph.name}.json", name=graph.name
            )
            existing[key] = _existing_jobs(team, models[key].pk, device, job_settings)
        if rnd < len(existing[key]):
            out.reused.append(existing[key][rnd])
        else:
            out.submitted.append(submit_profiling_job(team, models[key], device, job_settings, user=user))
        if progress is not None:
            progress(n, len(plan))
    return out


__all__ = ["TrainingSet", "build_training_set", "training_graphs"]

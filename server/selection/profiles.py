"""The candidates of a model selection as CNNSelect reads them: each model's accuracy and its
execution-time profile (mean, std and the raw samples) on the serving device.

A profile comes from the newest succeeded profiling job of the model on the device (its warm
end-to-end samples: ``JobResult.samples_ms``, mean and std), or, when the model was never
measured there, from the device's best ready predictor: its predicted end-to-end latency as the
mean, and that times the predictor's end-to-end MAPE as the std (the error it makes on networks
it did not train on; docs/selection.md). Accuracy is the model's own (``PATCH /api/models/{id}/``),
else the zoo's published top-1 for a model named like a zoo model (as ``latencylab demo`` uploads
them), else the model cannot be a candidate and the error says how to give it one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import ValidationError

from devicelab.graph import zoo
from devicelab.selection import ModelProfile
from server.accounts.models import Team
from server.devices.models import Device
from server.networks.models import NetworkModel
from server.profiling.models import JobKind, JobResult, JobState

MAX_CANDIDATES = 32


@dataclass(frozen=True)
class Candidate:
    """One candidate model with its profile and where each number came from."""

    model: NetworkModel
    profile: ModelProfile
    accuracy_source: str  # "model" or the zoo entry's citation
    latency_source: dict[str, Any]  # {"kind": "measured", "job": id} or {"kind": "predicted", "predictor": id}
    noisy: bool = False  # the profiling job flagged its samples noisy (cv above HIGH_CV)
    cold_start_ms: tuple[float, ...] = ()  # measured cold starts (load + first run), when measured

    def warning(self) -> str | None:
        """What a reader should know before trusting this candidate's latency profile, if anything."""
        if self.noisy:
            return (
                f"the latency profile of {self.model.name!r} (job #{self.latency_source.get('job')}) is flagged "
                f"noisy: its samples spread more than the lab trusts (std {self.profile.sigma_ms:.3g} ms on a mean "
                f"of {self.profile.mu_ms:.3g} ms); profile it again on a quiet device"
            )
        return None

    def as_dict(self) -> dict[str, Any]:
        """What the API says about the candidate (without its raw samples)."""
        p = self.profile
        return {
            "model": self.model.pk,
            "name": self.model.name,
            "accuracy": p.accuracy,
            "accuracy_source": self.accuracy_source,
            "mu_ms": p.mu_ms,
            "sigma_ms": p.sigma_ms,
            "samples": len(p.samples_ms),
            "latency_source": self.latency_source,
            "noisy": self.noisy,
        }


def model_accuracy(model: NetworkModel) -> tuple[float, str] | None:
    """(top-1 %, where it comes from) of a model, or None when nobody said."""
    if model.top1_accuracy is not None:
        return float(model.top1_accuracy), "model"
    entry = zoo.entries().get(model.name)
    top1 = getattr(entry, "top1", None) if entry is not None else None
    if entry is not None and top1 is not None:
        return float(top1), f"zoo {entry.name}: {entry.accuracy_source}"
    return None


@dataclass(frozen=True)
class _Measured:
    samples: list[float]
    job_id: int
    noisy: bool
    cold_start_ms: tuple[float, ...]


def _measured(model: NetworkModel, device: Device) -> _Measured | None:
    result = (
        JobResult.objects.filter(
            job__model=model, job__device=device, job__kind=JobKind.PROFILE, job__state=JobState.SUCCEEDED
        )
        .order_by("-job__finished_at", "-pk")
        .only("samples_ms", "job_id", "e2e_mean", "noisy", "cold_starts", "load_ms", "first_run_ms")
        .first()
    )
    if result is None:
        return None
    samples = [float(s) for s in (result.samples_ms or []) if isinstance(s, (int, float)) and s > 0]
    if not samples:  # a phone's aggregates only: the mean alone, as one sample
        samples = [float(result.e2e_mean)]
    cold = result.cold_start_distribution.get("samples") or []
    totals = tuple(float(c["total_ms"]) for c in cold if isinstance(c.get("total_ms"), (int, float)))
    return _Measured(samples, result.job_id, bool(result.noisy), tuple(t for t in totals if t > 0))


def _predicted(team: Team, model: NetworkModel, device: Device) -> tuple[float, float, int]:
    """(predicted mean, std, predictor id) from the device's best ready predictor."""
    from server.predictors.serving import PredictorUnavailable, loaded, predict_architectures, resolve

    try:
        row = resolve(team, device.pk)
    except PredictorUnavailable as e:
        raise ValidationError(
            {"models": f"model {model.name!r} (#{model.pk}) was never profiled on {device.name!r} and {e}"}
        ) from None
    entry = loaded(row)
    answer = predict_architectures(entry, [{"name": model.name, "graph": model.graph}])[0]
    mu = float(answer["latency_ms"])
    mape = float(row.e2e_mape) if row.e2e_mape is not None else 0.1
    return mu, mu * mape, row.pk


def candidate_profiles(
    team: Team, device: Device, model_ids: list[int], *, field: str = "models", measured_only: bool = False
) -> list[Candidate]:
    """Every named model of the team as a candidate on ``device``; ``ValidationError`` (under
    ``field``) naming the first model that cannot be one and why. ``measured_only`` refuses a
    model never profiled there instead of predicting it."""
    if not isinstance(model_ids, list) or not model_ids:
        raise ValidationError({field: "name at least one candidate model (a list of model ids)"})
    if not all(isinstance(i, int) and not isinstance(i, bool) for i in model_ids):
        raise ValidationError({field: f"models must be a list of model ids, got {model_ids!r}"})
    if len(set(model_ids)) != len(model_ids) or len(model_ids) > MAX_CANDIDATES:
        raise ValidationError({field: f"1 to {MAX_CANDIDATES} distinct model ids, got {model_ids!r}"})
    found = {m.pk: m for m in NetworkModel.objects.for_team(team).filter(pk__in=model_ids)}
    missing = [i for i in model_ids if i not in found]
    if missing:
        raise ValidationError({field: f"there is no model {missing} in team {team.name!r}"})
    names = [found[i].name for i in model_ids]
    if len(set(names)) != len(names):
        raise ValidationError({field: f"the candidates need distinct names, got {names}"})
    out = []
    for pk in model_ids:
        model = found[pk]
        if not model.is_ready:
            raise ValidationError({field: f"model {model.name!r} (#{pk}) is {model.state}, not ready"})
        accuracy = model_accuracy(model)
        if accuracy is None:
            raise ValidationError(
                {
                    "models": f"model {model.name!r} (#{pk}) has no accuracy: set it with "
                    f"PATCH /api/models/{pk}/ {{'top1_accuracy': ...}} or latencylab selection accuracy {pk} --top1 ..."
                }
            )
        if accuracy[0] <= 0:  # equation 4 weighs by accuracy: a model of 0 % could never be drawn
            raise ValidationError(
                {field: f"model {model.name!r} (#{pk}) has an accuracy of 0 %; CNNSelect needs more than 0"}
            )
        measured = _measured(model, device)
        if measured is None and measured_only:
            raise ValidationError(
                {field: f"model {model.name!r} (#{pk}) was never profiled on {device.name!r}: profile it there first"}
            )
        try:
            if measured is not None:
                profile = ModelProfile.from_samples(model.name, accuracy[0], measured.samples)
                source: dict[str, Any] = {"kind": "measured", "job": measured.job_id}
            else:
                mu, sigma, predictor_id = _predicted(team, model, device)
                profile = ModelProfile(model.name, accuracy[0], mu, sigma)
                source = {"kind": "predicted", "predictor": predictor_id}
        except ValueError as e:  # a profile CNNSelect cannot use (a prediction of 0 ms, say)
            raise ValidationError({field: f"model {model.name!r} (#{pk}): {e}"}) from None
        if measured is not None:
            out.append(Candidate(model, profile, accuracy[1], source, measured.noisy, measured.cold_start_ms))
        else:
            out.append(Candidate(model, profile, accuracy[1], source))
    return out


__all__ = ["MAX_CANDIDATES", "Candidate", "candidate_profiles", "model_accuracy"]

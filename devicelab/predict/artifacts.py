"""Predictor artifacts: a versioned JSON document that survives library upgrades.

An artifact holds only numbers and names: the scenario, the deducer's rules, per kernel type the
standardization and the model's parameters (Lasso weights, tree node arrays, MLP weights), the
overhead, and how it was made (seed, training-data SHA-256, library versions, search). No pickle
and no library object is stored; ``devicelab.predict`` evaluates the parameters itself, so a
predictor trained under one scikit-learn loads and predicts the same under another.

Loading checks everything before a prediction can be made: the format name, the schema
version, a SHA-256 of the content (a truncated or edited file is caught), the model arrays'
shapes. Whatever is wrong raises ``PredictorError`` saying what, never a wrong number later.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from devicelab.predict.deducers import deducer_from_dict
from devicelab.predict.errors import PredictorError
from devicelab.predict.features import FEATURES, feature_group
from devicelab.predict.models import METHODS, FittedModel
from devicelab.predict.predictor import Scenario, ScenarioPredictor
from devicelab.predict.ranges import FeatureRange

FORMAT = "latencylab.predictor"
# 2: ``kernel_power`` and ``per_kernel_ms`` (the calibrated overhead); 1 loads with 1 and 0.
# 3: ``min_e2e_ratio`` (the floor of a prediction); 1 and 2 load with 0 (no floor but 0 ms).
# 4: ``training_ranges`` (per model, each feature's training range); 1-3 load without (unknown).
# 5: ``per_element_ms`` (the overhead's activation-traffic term); 1-4 load with 0.
SCHEMA_VERSION = 5
READABLE_VERSIONS = (1, 2, 3, 4, 5)


def _canonical(body: dict[str, Any]) -> bytes:
    return json.dumps(body, sort_keys=True, separators=(",", ":"), allow_nan=False).encode()


def predictor_to_dict(p: ScenarioPredictor) -> dict[str, Any]:
    """The artifact as plain data (with its checksum)."""
    body = {
        "format": FORMAT,
        "schema_version": SCHEMA_VERSION,
        "scenario": p.scenario.to_dict(),
        "method": p.method,
        "deducer": p.deducer.to_dict(),
        "t_overhead_ms": p.t_overhead_ms,
        "kernel_scale": p.kernel_scale,
        "kernel_power": p.kernel_power,
        "per_kernel_ms": p.per_kernel_ms,
        "per_element_ms": p.per_element_ms,
        "min_e2e_ratio": p.min_e2e_ratio,
        "overhead_kinds": list(p.overhead_kinds),
        "features": {t: list(FEATURES[feature_group(t)]) for t in sorted(p.models)},
        "models": {t: m.to_dict() for t, m in sorted(p.models.items())},
        "meta": p.meta,
        "training_ranges": (
            None if p.training_ranges is None else {t: r.to_dict() for t, r in sorted(p.training_ranges.items())}
        ),
    }
    return {**body, "sha256": hashlib.sha256(_canonical(body)).hexdigest()}


def predictor_to_json(p: ScenarioPredictor) -> str:
    """The artifact as JSON text."""
    return json.dumps(predictor_to_dict(p), sort_keys=True, allow_nan=False)


def predictor_from_dict(d: Any) -> ScenarioPredictor:
    """A predictor from artifact data; ``PredictorError`` says why if it cannot be used."""
    if not isinstance(d, dict):
        raise PredictorError(f"a predictor artifact is a JSON object, not {type(d).__name__}")
    if d.get("format") != FORMAT:
        raise PredictorError(f"not a predictor artifact: format is {d.get('format')!r}, expected {FORMAT!r}")
    version = d.get("schema_version")
    if version not in READABLE_VERSIONS:
        raise PredictorError(
            f"predictor artifact schema version {version!r} is not supported; this LatencyLab reads versions "
            f"{list(READABLE_VERSIONS)} (retrain the predictor, or load it with the version that wrote it)"
        )
    body = {k: v for k, v in d.items() if k != "sha256"}
    try:
        digest = hashlib.sha256(_canonical(body)).hexdigest()
    except (TypeError, ValueError) as e:
        raise PredictorError(f"predictor artifact holds non-JSON values: {e}") from None
    if d.get("sha256") != digest:
        raise PredictorError("predictor artifact checksum mismatch: the file was truncated, edited or corrupted")
    try:
        method = str(d["method"])
        if method not in METHODS:
            raise PredictorError(f"predictor artifact names unknown method {method!r}")
        models: dict[str, FittedModel] = {}
        for ktype, md in d["models"].items():
            try:
                group = feature_group(ktype)
            except KeyError as e:
                raise PredictorError(f"predictor artifact: {e.args[0]}") from None
            if list(d["features"].get(ktype, [])) != list(FEATURES[group]):
                raise PredictorError(
                    f"predictor artifact: kernel type {ktype!r} was trained on features {d['features'].get(ktype)}, "
                    f"this LatencyLab computes {list(FEATURES[group])}"
                )
            try:
                m = FittedModel.from_dict(md)
            except PredictorError as e:
                raise PredictorError(f"predictor artifact: model for {ktype!r}: {e}") from None
            if len(m.mean) != len(FEATURES[group]):
                raise PredictorError(f"predictor artifact: model for {ktype!r} expects {len(m.mean)} features")
            models[ktype] = m
        ranges = _training_ranges(d.get("training_ranges"), models) if version >= 4 else None
        return ScenarioPredictor(
            scenario=Scenario.from_dict(d["scenario"]),
            method=method,
            deducer=deducer_from_dict(d["deducer"]),
            models=models,
            t_overhead_ms=float(d["t_overhead_ms"]),
            overhead_kinds=tuple(str(k) for k in d.get("overhead_kinds", ())),
            meta=dict(d.get("meta", {})),
            kernel_scale=float(d.get("kernel_scale", 1.0)),
            kernel_power=float(d["kernel_power"]) if version >= 2 else 1.0,
            per_kernel_ms=float(d["per_kernel_ms"]) if version >= 2 else 0.0,
            per_element_ms=float(d["per_element_ms"]) if version >= 5 else 0.0,
            min_e2e_ratio=float(d["min_e2e_ratio"]) if version >= 3 else 0.0,
            training_ranges=ranges,
        )
    except PredictorError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, AttributeError) as e:
        raise PredictorError(f"predictor artifact is incomplete or malformed: {type(e).__name__}: {e}") from None


def _training_ranges(data: Any, models: dict[str, FittedModel]) -> dict[str, FeatureRange] | None:
    """The artifact's training ranges: one per model, as many values as the model's features."""
    if data is None:
        return None
    if not isinstance(data, dict) or set(data) != set(models):
        got = sorted(data) if isinstance(data, dict) else type(data).__name__
        raise PredictorError(f"predictor artifact: training ranges for {got}, models for {sorted(models)}")
    return {
        t: FeatureRange.from_dict(data[t], len(FEATURES[feature_group(t)]), f"kernel type {t!r}") for t in sorted(data)
    }


def predictor_from_json(text: str | bytes) -> ScenarioPredictor:
    """A predictor from JSON text; ``PredictorError`` if it is not valid JSON or not an artifact."""
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise PredictorError(f"predictor artifact is not valid JSON: {e}") from None
    return predictor_from_dict(data)


def save_predictor(p: ScenarioPredictor, path: Path | str) -> Path:
    """Write the artifact to ``path`` (JSON); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(predictor_to_json(p))
    tmp.replace(path)  # a reader never sees half a file
    return path


def load_predictor(path: Path | str) -> ScenarioPredictor:
    """Read an artifact; ``PredictorError`` names the file and why it cannot be used."""
    path = Path(path)
    try:
        text = path.read_bytes()
    except OSError as e:
        raise PredictorError(f"cannot read predictor artifact {path}: {e.strerror}") from None
    try:
        return predictor_from_json(text)
    except PredictorError as e:
        raise PredictorError(f"{path}: {e}") from None


__all__ = [
    "FORMAT",
    "SCHEMA_VERSION",
    "load_predictor",
    "predictor_from_dict",
    "predictor_from_json",
    "predictor_to_dict",
    "predictor_to_json",
    "save_predictor",
]

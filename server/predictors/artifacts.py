"""A predictor row's artifact, checked and loaded: what serving and the lookup tables both start from.

Loading checks the artifact (format, schema, checksum, model shapes, through
``devicelab.predict.predictor_from_dict``) and the row's digest of it, recorded when it was
trained: a changed or broken artifact is refused with the reason, never used to predict.
"""

from __future__ import annotations

from devicelab.predict.artifacts import predictor_from_dict
from devicelab.predict.errors import PredictorError
from devicelab.predict.predictor import ScenarioPredictor
from server.predictors.models import Predictor


def load_row(row: Predictor) -> ScenarioPredictor:
    """The predictor of a row, checked; ``PredictorError`` says why it cannot be used."""
    what = f"predictor #{row.pk} ({row.method} v{row.version})"
    if row.artifact is None:
        raise PredictorError(f"{what} has no artifact (it is {row.state})")
    stored = row.artifact.get("sha256") if isinstance(row.artifact, dict) else None
    if stored != row.artifact_sha256:
        raise PredictorError(
            f"{what} cannot be loaded: its artifact's SHA-256 {stored!r} is not the one recorded when it was "
            f"trained ({row.artifact_sha256!r}); the stored artifact was changed. Train a new version"
        )
    try:
        return predictor_from_dict(row.artifact)
    except PredictorError as exc:
        raise PredictorError(f"{what} cannot be loaded: {exc}. Train a new version") from None


__all__ = ["load_row"]

"""The one error type of the predictors: a predictor that cannot be trained, loaded or used."""

from __future__ import annotations


class PredictorError(ValueError):
    """A predictor cannot be trained, loaded or applied; the message says which and why."""

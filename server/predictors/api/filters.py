"""Query filters of the predictor list."""

from __future__ import annotations

from server.api.filters import StrictFilterSet, choice_filter, id_filter
from server.predictors.models import Predictor, PredictorMethod, PredictorState


class PredictorFilterSet(StrictFilterSet):
    """``GET /api/predictors/?device=&method=&state=``."""

    device = id_filter("device", "only predictors of this device")
    method = choice_filter("method", PredictorMethod.choices, "only this method")
    state = choice_filter("state", PredictorState.choices, "only predictors in this state")

    class Meta:
        model = Predictor
        fields = ["device", "method", "state"]

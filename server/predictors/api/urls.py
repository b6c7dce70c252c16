"""Routes of the predictors' API: ``/api/predictors/`` and the predictions ``/api/predict/``."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from server.api.routers import AppRouter
from server.predictors.api.views import PredictorViewSet, PredictView, SideBySideView

router = AppRouter()
router.register("predictors", PredictorViewSet, basename="predictor")

urlpatterns: list[URLPattern | URLResolver] = [
    path("predict/", PredictView.as_view(), name="predict"),
    path("predict/side-by-side/", SideBySideView.as_view(), name="predict-side-by-side"),
    *router.urls,
]

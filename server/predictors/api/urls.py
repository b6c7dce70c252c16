"""Routes of the predictors' API: ``/api/predictors/``, the predictions ``/api/predict/``, training sets
``/api/trainsets/`` and the qed import ``/api/qed/import/``."""

from __future__ import annotations

from django.urls import URLPattern, URLResolver, path

from server.api.routers import AppRouter
from server.predictors.api.adapt_views import AdaptView
from server.predictors.api.views import (
    PredictorViewSet,
    PredictView,
    QedImportView,
    SideBySideView,
    TrainingSetView,
)

router = AppRouter()
router.register("predictors", PredictorViewSet, basename="predictor")

urlpatterns: list[URLPattern | URLResolver] = [
    # before the router's routes, whose predictors/<pk>/ would otherwise take "adapt"
    path("predictors/adapt/", AdaptView.as_view(), name="predictor-adapt"),
    path("predict/", PredictView.as_view(), name="predict"),
    path("predict/side-by-side/", SideBySideView.as_view(), name="predict-side-by-side"),
    path("trainsets/", TrainingSetView.as_view(), name="trainset-build"),
    path("qed/import/", QedImportView.as_view(), name="qed-import"),
    *router.urls,
]

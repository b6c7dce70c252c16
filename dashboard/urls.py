"""Routes of the dashboard, mounted at the site's root."""

from __future__ import annotations

from django.urls import path

from dashboard import predictor_views, views

app_name = "dashboard"

urlpatterns = [
    path("", views.overview, name="overview"),
    path("devices/<int:pk>/", views.device_detail, name="device"),
    path("models/", views.model_list, name="models"),
    path("models/<int:pk>/", views.model_detail, name="model"),
    path("jobs/", views.job_list, name="jobs"),
    path("jobs/new/", views.submit_jobs, name="submit"),
    path("jobs/progress/", views.job_progress, name="progress"),
    path("jobs/<int:pk>/", views.job_detail, name="job"),
    path("jobs/<int:pk>/result/", views.job_result, name="job_result"),
    path("jobs/<int:pk>/cancel/", views.job_cancel, name="job_cancel"),
    path("compare/", views.compare, name="compare"),
    path("predictors/", predictor_views.predictor_list, name="predictors"),
    path("predictors/<int:pk>/", predictor_views.predictor_detail, name="predictor"),
]

"""Routes of the dashboard, mounted at the site's root."""

from __future__ import annotations

from django.urls import path

from dashboard import (
    fusion_views,
    predictor_views,
    remote_pages,
    selection_forms,
    selection_pages,
    sharing_online,
    sharing_views,
    views,
)

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
    path("jobs/<int:pk>/rerun/", views.job_rerun, name="job_rerun"),
    path("jobs/<int:pk>/operators.csv", views.job_operators_csv, name="job_operators_csv"),
    path("jobs/<int:pk>/operators.json", views.job_operators_json, name="job_operators_json"),
    path("compare/", views.compare, name="compare"),
    path("predictors/", predictor_views.predictor_list, name="predictors"),
    path("predictors/<int:pk>/", predictor_views.predictor_detail, name="predictor"),
    path("predictors/adapt/", predictor_views.predictor_adapt, name="predictor_adapt"),
    path("fusion/", fusion_views.fusion_list, name="fusion"),
    path("fusion/sweeps/<int:pk>/", fusion_views.sweep_detail, name="fusion_sweep"),
    path("fusion/sweeps/<int:pk>/result/", fusion_views.sweep_result, name="fusion_sweep_result"),
    path("fusion/plans/<int:pk>/", fusion_views.plan_detail, name="fusion_plan"),
    path("fusion/plans/<int:pk>/result/", fusion_views.plan_result, name="fusion_plan_result"),
    path("sharing/", sharing_views.sharing_list, name="sharing"),
    path("sharing/sweeps/<int:pk>/", sharing_views.sweep_detail, name="sharing_sweep"),
    path("sharing/sweeps/<int:pk>/result/", sharing_views.sweep_result, name="sharing_sweep_result"),
    path("sharing/online/<int:pk>/", sharing_online.online_detail, name="sharing_online"),
    path("sharing/online/<int:pk>/result/", sharing_online.online_result, name="sharing_online_result"),
    path("remote/", remote_pages.run_list, name="remote"),
    path("remote/runs/<int:pk>/", remote_pages.run_detail, name="remote_run"),
    path("remote/runs/<int:pk>/result/", remote_pages.run_result, name="remote_run_result"),
    path("selection/", selection_pages.selection_list, name="selection"),
    path("selection/simulations/<int:pk>/", selection_pages.simulation_detail, name="selection_simulation"),
    path("selection/simulations/new/", selection_forms.new_simulation, name="selection_new"),
    path("selection/ask/", selection_forms.ask, name="selection_ask"),
]

"""Routes of the lab API (``/api/lab/...``): the lab protocol's calls, for lab tokens only."""

from __future__ import annotations

from django.urls import URLPattern, path

from server.labs.api import protocol as views

urlpatterns: list[URLPattern] = [
    path("lab/hello", views.HelloView.as_view(), name="lab-hello"),
    path("lab/devices", views.RegisterDevices.as_view(), name="lab-devices"),
    path("lab/devices/gone", views.DevicesGoneView.as_view(), name="lab-devices-gone"),
    path("lab/devices/<int:pk>/fail-running", views.FailRunningView.as_view(), name="lab-device-fail-running"),
    path("lab/heartbeat", views.HeartbeatView.as_view(), name="lab-heartbeat"),
    path("lab/jobs/<int:pk>/claim", views.ClaimView.as_view(), name="lab-job-claim"),
    path("lab/jobs/<int:pk>/progress", views.ProgressView.as_view(), name="lab-job-progress"),
    path("lab/jobs/<int:pk>/result", views.ResultView.as_view(), name="lab-job-result"),
    path("lab/results", views.ResultBatchView.as_view(), name="lab-results"),
    path("lab/jobs/<int:pk>/fail", views.FailView.as_view(), name="lab-job-fail"),
    path("lab/jobs/<int:pk>/retry", views.RetryView.as_view(), name="lab-job-retry"),
    path("lab/files/<str:sha256>", views.ModelFileView.as_view(), name="lab-file"),
]

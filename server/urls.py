"""Top-level routes: the admin, the REST API, log-in/out, the dashboard (and static files when no proxy serves them)."""

from __future__ import annotations

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.staticfiles.views import serve as serve_static
from django.urls import URLPattern, URLResolver, include, path, re_path

urlpatterns: list[URLPattern | URLResolver] = [
    path("admin/", admin.site.urls),
    path("api/", include("server.api.urls")),
    path("accounts/login/", auth_views.LoginView.as_view(redirect_authenticated_user=True), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", include("dashboard.urls")),
]

if settings.LATENCYLAB_SERVE_STATIC:
    # Served from the apps' static folders (no collectstatic needed); a proxy in front of a
    # busy server should serve STATIC_ROOT instead and set LATENCYLAB_SERVE_STATIC=false.
    urlpatterns.append(re_path(r"^static/(?P<path>.*)$", serve_static, {"insecure": True}))

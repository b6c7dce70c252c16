"""Fixtures of the lab-machine tests: lab machines added through the service, staff members,
and a stand-in for a lab API view (the lab-facing views authenticate with the same classes).

Devices come from the server tests' fixtures (registered through the real service), signed-in
browsers from the dashboard tests'.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest

from tests.dashboard import conftest as dashboard_fixtures
from tests.server import conftest as server_fixtures

make_device = server_fixtures.make_device
make_network = server_fixtures.make_network
make_job = server_fixtures.make_job
media_in_tmp = server_fixtures.media_in_tmp
web_client = dashboard_fixtures.web_client  # a browser signed in as a member

_serial = itertools.count(1)


@pytest.fixture
def add_lab(db: None) -> Callable[..., tuple[Any, str]]:
    """Factory: ``add_lab(name=None)`` -> (LabMachine, plain token), through ``add_lab_machine``."""
    from server.labs.services import add_lab_machine

    def make(name: str | None = None) -> tuple[Any, str]:
        return add_lab_machine(name or f"lab-host-{next(_serial)}")

    return make


@pytest.fixture
def staff(make_member: Callable[..., Any]) -> Any:
    """A member whose user is staff (not superuser)."""
    m = make_member()
    m.user.is_staff = True
    m.user.save(update_fields=["is_staff"])
    return m


@pytest.fixture
def lab_view() -> Callable[..., Any]:
    """Factory: ``lab_view(header, address="10.0.0.1")`` -> the answer of a view that takes lab
    tokens only (``LabTokenAuthentication`` and ``IsLabMachine``), echoing who called."""
    from rest_framework.request import Request
    from rest_framework.response import Response
    from rest_framework.test import APIRequestFactory
    from rest_framework.views import APIView

    from server.labs.authentication import IsLabMachine, LabTokenAuthentication

    class WhoAmI(APIView):
        authentication_classes = [LabTokenAuthentication]
        permission_classes = [IsLabMachine]

        def get(self, request: Request) -> Response:
            return Response({"user": request.user.username, "lab": request.auth.name})

    def call(header: str | None, address: str = "10.0.0.1") -> Any:
        extra = {"REMOTE_ADDR": address}
        if header is not None:
            extra["HTTP_AUTHORIZATION"] = header
        response = WhoAmI.as_view()(APIRequestFactory().get("/api/lab/whoami/", **extra))
        response.render()
        return response

    return call

"""DRF authentication of lab machines by ``Authorization: Lab <token>``, and their permission.

A lab token is for the lab API alone (``/api/lab/...``, whose views name ``LabTokenAuthentication``
and ``IsLabMachine`` explicitly): it is not among the API's default authentication classes, so
the user API never sees it, and a lab machine's principal is no Django user, belongs to no team
and is never staff. Bad lab tokens count towards the same per-address lockout as bad API tokens
(``server/accounts/authentication.py``).
"""

from __future__ import annotations

from typing import Any

from rest_framework import authentication, exceptions
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from server.accounts.authentication import client_address, header_key, refuse_bad_token
from server.labs.models import LabMachine
from server.labs.services import record_contact


class LabMachineUser:
    """The principal of a request made with a lab token: not a Django user, never staff.

    ``username`` (``lab:NAME``) names it in logs; ``lab`` is its ``LabMachine``.
    """

    is_authenticated = True
    is_anonymous = False
    is_active = True
    is_staff = False
    is_superuser = False
    pk = None
    id = None

    def __init__(self, lab: LabMachine) -> None:
        self.lab = lab
        self.username = f"lab:{lab.name}"

    def __str__(self) -> str:
        return self.username

    def get_username(self) -> str:
        """Its name in logs, as a Django user's."""
        return self.username

    def has_perm(self, perm: str, obj: Any = None) -> bool:
        """A lab machine holds no Django permission."""
        return False


class LabTokenAuthentication(authentication.BaseAuthentication):
    """Authenticate a lab machine by its lab token; notes its call (time and address)."""

    keyword = "Lab"

    def authenticate(self, request: Request) -> tuple[LabMachineUser, LabMachine] | None:
        """The (principal, machine) pair for a valid lab token; None when the header is not ``Lab``."""
        key = header_key(request, self.keyword)
        if key is None:
            return None
        lab = LabMachine.objects.holding_key(key)
        if lab is None:
            refuse_bad_token(request, "invalid lab token", "lab tokens")
        if lab.is_revoked:
            raise exceptions.AuthenticationFailed(lab.revocation_message())
        record_contact(lab, client_address(request))
        return LabMachineUser(lab), lab

    def authenticate_header(self, request: Request) -> str:
        """Tells a 401 answer which scheme to use."""
        return self.keyword


class IsLabMachine(BasePermission):
    """The request was made with an active lab token (``LabTokenAuthentication``)."""

    message = "This endpoint is for lab machines: send 'Authorization: Lab <token>' (latencylab lab add NAME)."

    def has_permission(self, request: Request, view: Any) -> bool:
        """Only a lab machine's principal with its unrevoked ``LabMachine`` passes."""
        lab = request.auth
        return isinstance(request.user, LabMachineUser) and isinstance(lab, LabMachine) and not lab.is_revoked

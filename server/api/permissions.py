"""Who may use the API: authenticated users who belong to a team."""

from __future__ import annotations

from typing import Any

from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from server.accounts.services import current_team


class IsTeamMember(BasePermission):
    """The user is signed in and belongs to a team; the view then sees that team as ``request.team``."""

    message = "Your user belongs to no team; ask an admin to add you (latencylab user add NAME --team TEAM)."

    def has_permission(self, request: Request, view: Any) -> bool:
        """Resolve the caller's team once per request."""
        if not (request.user and request.user.is_authenticated):
            return False
        team = current_team(request.user)
        request.team = team
        return team is not None

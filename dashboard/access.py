"""Who may see a page: a signed-in user acting for their team (``request.team``)."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from server.accounts.services import current_team

View = Callable[..., HttpResponse]


def team_page(view: View) -> View:
    """Require a log-in and a team; the view reads the team as ``request.team``.

    Users with no team get a 403 page telling them how to get one, the same rule as the API's.
    """

    @login_required
    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        team = current_team(request.user)
        if team is None:
            return render(request, "dashboard/no_team.html", status=403)
        request.team = team  # type: ignore[attr-defined]
        return view(request, *args, **kwargs)

    return wrapped

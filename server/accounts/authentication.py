"""DRF authentication by ``Authorization: Token <key>`` against hashed API tokens.

Guessing is bounded: an address that sent ``LATENCYLAB_TOKEN_FAILURE_LIMIT`` bad tokens within
``LATENCYLAB_TOKEN_LOCKOUT_SECONDS`` is answered 429 for the rest of that window, whatever it
sends. The count lives in Django's cache (``LATENCYLAB_CACHE_URL``: shared by every web process
when it is Redis). The address is DRF's client identity (``X-Forwarded-For`` behind
``NUM_PROXIES`` proxies, else the peer address). Lab tokens (``server/labs/authentication.py``)
are bounded by the same helpers and the same count, so switching the scheme does not buy an
address more guesses.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from server.accounts.models import ApiToken, hash_token_key

# Recording every use would turn each API read into a write; once a minute is enough to see
# which tokens are alive.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def client_address(request: Request) -> str:
    """The caller's address as DRF's throttles see it (``X-Forwarded-For`` behind ``NUM_PROXIES``)."""
    return str(BaseThrottle().get_ident(request))


def _failures_key(request: Request) -> str:
    return f"latencylab:token-failures:{client_address(request)}"


def refuse_locked_out_address(request: Request, what: str = "API tokens") -> None:
    """Raise 429 when the caller's address sent too many bad tokens (of any kind) in the window;
    ``what`` names the tokens in the message."""
    limit = settings.LATENCYLAB_TOKEN_FAILURE_LIMIT
    window = settings.LATENCYLAB_TOKEN_LOCKOUT_SECONDS
    if (cache.get(_failures_key(request)) or 0) >= limit:
        raise exceptions.Throttled(
            wait=window, detail=f"Too many bad {what} from this address ({limit}); try again later."
        )


def count_bad_token(request: Request) -> None:
    """Count one bad token from the caller's address; the window starts with its first failure."""
    key = _failures_key(request)
    window = settings.LATENCYLAB_TOKEN_LOCKOUT_SECONDS
    cache.add(key, 0, timeout=window)
    try:
        cache.incr(key)
    except ValueError:  # expired between the two calls
        cache.set(key, 1, timeout=window)


def header_key(request: Request, keyword: str) -> str | None:
    """The key of an ``Authorization: <keyword> <key>`` header; None when the header names
    another scheme (or is absent), so that the next authentication class may try it."""
    header = authentication.get_authorization_header(request).split()
    if not header or header[0].lower() != keyword.lower().encode():
        return None
    if len(header) != 2:
        raise exceptions.AuthenticationFailed(
            f"Invalid {keyword.lower()} header: expected 'Authorization: {keyword} <key>'."
        )
    try:
        return str(header[1].decode())
    except UnicodeError:
        raise exceptions.AuthenticationFailed(f"Invalid {keyword.lower()} header: the key is not text.") from None


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """Authenticate a request by its API token."""

    keyword = "Token"

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        """The (user, token) pair for a valid token header; None when there is no token header."""
        key = header_key(request, self.keyword)
        if key is None:
            return None
        refuse_locked_out_address(request, "API tokens")
        token = ApiToken.objects.active().select_related("user").filter(key_hash=hash_token_key(key)).first()
        if token is None:
            count_bad_token(request)
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        """Tells a 401 answer which scheme to use."""
        return self.keyword

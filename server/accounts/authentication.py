"""DRF authentication by ``Authorization: Token <key>`` against hashed API tokens.

Guessing is bounded: an address that sent ``LATENCYLAB_TOKEN_FAILURE_LIMIT`` bad tokens within
``LATENCYLAB_TOKEN_LOCKOUT_SECONDS`` is answered 429 for the rest of that window, whatever it
sends. The count lives in Django's cache (``LATENCYLAB_CACHE_URL``: shared by every web process
when it is Redis). The address is DRF's client identity (``X-Forwarded-For`` behind
``NUM_PROXIES`` proxies, else the peer address).
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


class ApiTokenAuthentication(authentication.BaseAuthentication):
    """Authenticate a request by its API token."""

    keyword = "Token"

    def authenticate(self, request: Request) -> tuple[Any, ApiToken] | None:
        """The (user, token) pair for a valid token header; None when there is no token header."""
        header = authentication.get_authorization_header(request).split()
        if not header or header[0].lower() != self.keyword.lower().encode():
            return None
        if len(header) != 2:
            raise exceptions.AuthenticationFailed("Invalid token header: expected 'Authorization: Token <key>'.")
        try:
            key = header[1].decode()
        except UnicodeError:
            raise exceptions.AuthenticationFailed("Invalid token header: the key is not text.") from None
        failures_key = f"latencylab:token-failures:{BaseThrottle().get_ident(request)}"
        limit = settings.LATENCYLAB_TOKEN_FAILURE_LIMIT
        window = settings.LATENCYLAB_TOKEN_LOCKOUT_SECONDS
        if (cache.get(failures_key) or 0) >= limit:
            raise exceptions.Throttled(
                wait=window, detail=f"Too many bad API tokens from this address ({limit}); try again later."
            )
        token = ApiToken.objects.active().select_related("user").filter(key_hash=hash_token_key(key)).first()
        if token is None:
            cache.add(failures_key, 0, timeout=window)  # the window starts with the first failure
            try:
                cache.incr(failures_key)
            except ValueError:  # expired between the two calls
                cache.set(failures_key, 1, timeout=window)
            raise exceptions.AuthenticationFailed("Invalid or revoked token.")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        """Tells a 401 answer which scheme to use."""
        return self.keyword

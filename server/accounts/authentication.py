"""DRF authentication by ``Authorization: Token <key>`` against hashed API tokens.

A valid token always authenticates. Bad tokens are counted per address (DRF's client identity:
``X-Forwarded-For`` behind ``NUM_PROXIES`` proxies, else the peer address): past
``LATENCYLAB_TOKEN_FAILURE_LIMIT`` of them within ``LATENCYLAB_TOKEN_LOCKOUT_SECONDS``, each
further bad token is answered 429 with the seconds left in that window instead of 401. The
lockout is checked only once a token failed to match, so people behind the same NAT or proxy as
a guesser keep working. A key holds 256 random bits: no number of attempts guesses one, so the
lockout does not make guessing hopeless, it slows a client that sends bad tokens and makes it
visible (one warning per lockout). The counts live in Django's cache: Redis when
``LATENCYLAB_CACHE_URL`` is set or the broker is Redis, so every web process adds to the same
count (``server/settings.py``). Lab tokens (``server/labs/authentication.py``) go through the same
``refuse_bad_token``, so switching the scheme does not buy an address more attempts.
"""

from __future__ import annotations

import logging
import math
import time
from datetime import timedelta
from typing import Any, NoReturn

from django.conf import settings
from django.core.cache import cache
from django.utils import timezone
from rest_framework import authentication, exceptions
from rest_framework.request import Request
from rest_framework.throttling import BaseThrottle

from server.accounts.models import ApiToken, hash_token_key

logger = logging.getLogger(__name__)

# Recording every use would turn each API read into a write; once a minute is enough to see
# which tokens are alive.
LAST_USED_RESOLUTION = timedelta(minutes=1)


def client_address(request: Request) -> str:
    """The caller's address as DRF's throttles see it (``X-Forwarded-For`` behind ``NUM_PROXIES``)."""
    return str(BaseThrottle().get_ident(request))


def count_bad_token(address: str) -> tuple[int, int]:
    """Count one bad token from ``address``: (bad tokens in the current window, its seconds left).

    The window starts with the address's first bad token and lasts
    ``LATENCYLAB_TOKEN_LOCKOUT_SECONDS``; the count is shared by every process using the cache."""
    key = f"latencylab:token-failures:{address}"
    window = settings.LATENCYLAB_TOKEN_LOCKOUT_SECONDS
    now = time.time()
    # The window's start is kept beside the count, to tell a refused client when to retry.
    cache.add(f"{key}:since", now, timeout=window)
    cache.add(key, 0, timeout=window)
    try:
        count = cache.incr(key)
    except ValueError:  # expired between the two calls
        cache.set(key, 1, timeout=window)
        count = 1
    since = cache.get(f"{key}:since")
    started = now if since is None else float(since)
    return count, max(1, math.ceil(started + window - now))


def refuse_bad_token(request: Request, reason: str, what: str = "API tokens") -> NoReturn:
    """Refuse a token that matched none: count it for the caller's address, then raise 401 with
    ``reason``, or 429 when the address is past ``LATENCYLAB_TOKEN_FAILURE_LIMIT`` bad tokens
    (of any kind) in the window; ``what`` names the tokens in the message."""
    address = client_address(request)
    count, seconds_left = count_bad_token(address)
    limit = settings.LATENCYLAB_TOKEN_FAILURE_LIMIT
    if count <= limit:
        raise exceptions.AuthenticationFailed(reason)
    if count == limit + 1:
        logger.warning(
            "%s bad tokens from %s within %s s: its further bad tokens are answered 429 for %s s",
            count,
            address,
            settings.LATENCYLAB_TOKEN_LOCKOUT_SECONDS,
            seconds_left,
        )
    raise exceptions.Throttled(
        wait=seconds_left,
        detail=f"Too many bad {what} from this address ({limit} within "
        f"{settings.LATENCYLAB_TOKEN_LOCKOUT_SECONDS} s): {reason}",
    )


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
        token = ApiToken.objects.active().select_related("user").filter(key_hash=hash_token_key(key)).first()
        if token is None:
            refuse_bad_token(request, "Invalid or revoked token.", "API tokens")
        now = timezone.now()
        if token.last_used_at is None or now - token.last_used_at > LAST_USED_RESOLUTION:
            ApiToken.objects.filter(pk=token.pk).update(last_used_at=now)
        return token.user, token

    def authenticate_header(self, request: Request) -> str:
        """Tells a 401 answer which scheme to use."""
        return self.keyword

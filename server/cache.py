"""The cache backend of rate limits and lockouts when they are kept in Redis (``settings.CACHES``)."""

from __future__ import annotations

from django.core.cache.backends.redis import RedisCache

# Keys deleted per DEL command when the cache is cleared.
CLEAR_BATCH = 500


class PrefixedRedisCache(RedisCache):
    """Django's Redis cache whose ``clear()`` deletes only the keys under its ``KEY_PREFIX``.

    Django's own clears with FLUSHDB, which would also drop the Celery broker's queues when the
    cache shares the broker's database (the default when the broker is Redis), and every test
    clears the cache as it starts.
    """

    def clear(self) -> None:
        """Delete every key of this cache (all versions), and no other."""
        client = self._cache.get_client(None, write=True)  # type: ignore[attr-defined]
        batch: list[bytes] = []
        for key in client.scan_iter(match=f"{self.key_prefix}:*", count=CLEAR_BATCH):
            batch.append(key)
            if len(batch) == CLEAR_BATCH:
                client.delete(*batch)
                batch = []
        if batch:
            client.delete(*batch)

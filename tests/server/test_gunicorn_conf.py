"""gunicorn's settings: a worker freezes what loading the application made out of the collector."""

from __future__ import annotations

import gc

from server import gunicorn_conf


def test_a_worker_freezes_the_objects_of_the_loaded_application() -> None:
    gc.unfreeze()
    try:
        gunicorn_conf.post_worker_init(object())
        assert gc.get_freeze_count() > 10_000
    finally:
        gc.unfreeze()

"""gunicorn's settings for the web server: ``gunicorn server.wsgi:application --config python:server.gunicorn_conf``
(``latencylab up``, the image's CMD and docker-compose's web service all start it so).

Threads (``gthread``), because one slow request must not starve the API: a sync worker is held
whole by a 100 MB upload arriving or a large predict batch, and with two of them two such
requests stalled every other client for 28 s (issue 18). A gthread worker serves ``threads``
requests at once, and its idle keep-alive connections wait in a poller, not in a thread.
Parsing a big upload is not a request's work at all: the trainer does it
(``server.networks.services.receive_model``).

``timeout`` is, for gthread, the silence of a worker's main loop (a wedged process), not the
length of a request: a request may take as long as its client waits. Any of these can be
changed on the command line or in ``GUNICORN_CMD_ARGS`` (e.g. ``--workers 4 --threads 8``).
"""

from __future__ import annotations

worker_class = "gthread"
workers = 2
threads = 4
timeout = 60
graceful_timeout = 30
# gunicorn 27 opens a control socket at one path per user (~/.gunicorn/gunicorn.ctl): two servers
# on one machine (two installations, a benchmark, the tests) would take it from each other, and
# nothing here uses it. Older gunicorns ignore the name.
control_socket_disable = True


def post_worker_init(worker: object) -> None:
    """Once a worker has loaded the application, what the first prediction would wait for is
    started (``server.predictors.serving.warm_up``: the batch's worker processes, the recent
    predictors loaded in the background), and the objects it made (Django, the models, the
    libraries: about 185,000) are moved out of the garbage collector's sight: they live as long
    as the process, and every full collection scanned them all, 150 ms stolen from whichever
    request was running (17 ms once frozen; measured in-process over 120 lab calls posting
    300-operator results)."""
    import gc

    from server.predictors.serving import warm_up

    warm_up()
    gc.freeze()

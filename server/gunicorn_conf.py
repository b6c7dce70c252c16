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
# A connection is closed after its answer. Kept open, a connection stays with the worker that
# accepted it: 20 clients that keep theirs (requests' sessions) were spread over the 2 workers by
# chance, in one run of four all 20 on one worker, the other idle, and that worker's process is
# one core (the interpreter lock): 112 requests/s instead of 209. Closed, each request is
# accepted again, by the worker that is free first: 162-190 requests/s every time, p99 240-270 ms
# (api_under_load's load, benchmarks/results/HISTORY-api.md). Behind a proxy, whose upstream
# connections are per request unless set otherwise, this is what happens anyway.
keepalive = 0
timeout = 60
graceful_timeout = 30
# gunicorn 27 opens a control socket at one path per user (~/.gunicorn/gunicorn.ctl): two servers
# on one machine (two installations, a benchmark, the tests) would take it from each other, and
# nothing here uses it. Older gunicorns ignore the name.
control_socket_disable = True


def post_worker_init(worker: object) -> None:
    """Once a worker has loaded the application, what the first requests would wait for is done
    now, and the objects it made are moved out of the garbage collector's sight.

    * ``server.predictors.serving.warm_up``: the batch's worker processes started, the recent
      predictors loaded in the background;
    * the URL configuration loaded: Django imports it at the first request, and with it the
      dashboard, plotly, the ONNX importer, the zoo, ... (about 500 modules);
    * ``gc.freeze()``: the objects made so far (Django, the models, the libraries: about 160,000)
      live as long as the process, and every full collection would scan them all, the whole
      process (every thread's request) stopped meanwhile. Frozen before the URL configuration
      was loaded, 100,000 objects were left to scan and full collections stopped a worker for
      200-500 ms under 20 clients on a loaded 2-core machine; frozen after it, 30,000 and
      110-210 ms, the API's p99 0.4-0.48 s instead of 0.6-0.7 s (``api_under_load.py``, load 7).
    """
    import gc

    from django.urls import get_resolver

    from server.predictors.serving import warm_up

    warm_up()
    get_resolver().url_patterns  # noqa: B018 - imports the URL configuration and every view module
    gc.collect()
    gc.freeze()

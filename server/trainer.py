"""``latencylab trainer`` / ``python -m server.trainer``: the server's Celery process for slow work.

It trains predictors, parses big uploads and runs model-selection simulations: the tasks of
``server.celery_app``. It needs the database, so it runs with the server, not on a lab machine
(a lab worker holds a token, not database credentials). It consumes the trainer queue
(``server.taskqueue.trainer_queue``) and the queue of model parses
(``server.taskqueue.models_queue``), one task at a time, in a prefork pool of one process (time
limits need a pool process that can be killed), and lowers its own CPU priority (``--nice``,
default 10) so that on a machine that also drives devices (``latencylab up``) a training takes
what the device processes leave rather than disturbing their measurements.
Several trainers may consume the queues; the conditional claim on the predictor row keeps each
predictor trained once, and the conditional claim of a parse keeps each upload parsed once.

The database is the truth of what is pending: when it starts, the trainer sends again the parse
of every model still ``parsing`` that no trainer holds (a message lost with a broker restart), and
while it runs, whenever it has been idle (no task in hand) it sends again the parse of every model
and the training of every predictor pending for longer than ``LATENCYLAB_RESEND_AFTER_SECONDS``:
an idle trainer would have taken their messages, so they were lost.

It also sweeps every ``LATENCYLAB_HEARTBEAT_SECONDS``, whatever it is doing: the lab
(``sweep_lab``: devices whose lab machine stopped heart-beating go offline and their jobs move or
wait, even when no machine is left to heart-beat; each lab heartbeat sweeps too) and the trainings,
simulations and parses whose lease ran out (``sweep_lost_work``: a trainer killed mid-work leaves
its row with a lease nobody renews; it is queued again, or failed after its attempts). The sweeps'
writes are conditional, so two sweeps at once do the work once.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import socket
import sys
import threading
import uuid
from collections.abc import Sequence
from datetime import timedelta

log = logging.getLogger("latencylab.trainer")

DEFAULT_NICE = 10


def celery_argv(queue: str, node_name: str, loglevel: str) -> list[str]:
    """The ``celery worker`` arguments of the trainer (``queue``: comma-separated queue names)."""
    return [
        "worker",
        "--queues",
        queue,
        "--pool",
        "prefork",
        "--concurrency",
        "1",
        "--prefetch-multiplier",
        "1",
        # A fresh pool process now and then: scikit-learn and numpy keep memory they grew into.
        "--max-tasks-per-child",
        "20",
        "--hostname",
        node_name,
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "--loglevel",
        loglevel,
    ]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The trainer's options (shared with ``latencylab trainer``)."""
    parser.add_argument("--name", help="Celery node name (default: trainer.<random>@<host>)")
    parser.add_argument(
        "--nice", type=int, default=DEFAULT_NICE, help="CPU priority increment, 0-19 (default: %(default)s)"
    )
    parser.add_argument("--loglevel", default="INFO", help="Celery log level (default: %(default)s)")


def run_trainer(name: str | None = None, nice: int = DEFAULT_NICE, loglevel: str = "INFO") -> int:
    """Consume the trainer queue until SIGTERM/SIGINT (Celery's warm shutdown)."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "server.settings")
    import django

    django.setup()
    if nice:
        os.nice(max(0, min(19, nice)))
    from server.celery_app import app
    from server.networks.services import resend_parsing_models
    from server.taskqueue import models_queue, trainer_queue

    node = name or f"trainer.{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
    node = re.sub(r"[^A-Za-z0-9_.@-]", "-", node)
    sweep_lost_work()
    resend_parsing_models()
    stop = threading.Event()
    threading.Thread(target=_reconcile_while_idle, args=(stop,), name="reconciler", daemon=True).start()
    threading.Thread(target=_sweep_forever, args=(stop,), name="sweeper", daemon=True).start()
    try:
        app.worker_main(celery_argv(f"{trainer_queue()},{models_queue()}", node, loglevel))
    finally:
        stop.set()
    return 0


def sweep_lost_work() -> list[int]:
    """Queue again (or fail past their attempts) the trainings, simulations and parses whose
    trainer was lost: their lease ran out. Returns the ids of their rows."""
    from server.networks.services import sweep_lost_parses
    from server.predictors.services import sweep_lost_trainings
    from server.selection.simulations import sweep_lost_simulations

    return [*sweep_lost_trainings(), *sweep_lost_simulations(), *sweep_lost_parses()]


def _sweep_forever(stop: threading.Event) -> None:
    """Sweep the lab and the lost work every heartbeat interval, whatever the lab machines
    and this trainer's task do."""
    from django.conf import settings
    from django.db import close_old_connections

    from server.profiling.services import sweep_lab

    while not stop.wait(float(settings.LATENCYLAB_HEARTBEAT_SECONDS)):
        try:
            for device in sweep_lab():
                log.warning(
                    "device #%s %s of worker %r went offline (no heartbeat)", device.pk, device.name, device.worker
                )
            sweep_lost_work()
        except Exception:  # a database hiccup must not end the sweeps: the next one retries
            log.exception("sweeping the lab failed")
        finally:
            close_old_connections()


def _reconcile_while_idle(stop: threading.Event) -> None:
    """Every ``LATENCYLAB_RESEND_AFTER_SECONDS``, if this trainer holds no task, send again what is
    pending for longer than that (the trainer's half of "the database is the truth")."""
    from celery.worker import state
    from django.conf import settings
    from django.db import close_old_connections
    from django.utils import timezone

    from server.networks.services import resend_parsing_models
    from server.predictors.services import resend_queued_predictors
    from server.selection.simulations import resend_queued_simulations

    interval = float(settings.LATENCYLAB_RESEND_AFTER_SECONDS)
    while not stop.wait(interval):
        if state.active_requests or state.reserved_requests:
            continue  # busy: what waits behind this task is not lost
        try:
            cutoff = timezone.now() - timedelta(seconds=interval)
            resend_parsing_models(uploaded_before=cutoff)
            resend_queued_predictors(requested_before=cutoff)
            resend_queued_simulations(requested_before=cutoff)
        except Exception:  # a database or broker hiccup must not end the loop: the next round retries
            log.exception("the trainer's reconciliation failed")
        finally:
            close_old_connections()


def run_from_args(args: argparse.Namespace) -> int:
    """Run the trainer with parsed arguments."""
    return run_trainer(name=args.name, nice=args.nice, loglevel=args.loglevel)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m server.trainer``."""
    parser = argparse.ArgumentParser(prog="python -m server.trainer", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

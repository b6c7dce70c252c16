"""``latencylab trainer`` / ``python -m workers.trainer``: the Celery process that trains predictors
and parses big uploads.

It consumes the trainer queue (``server.taskqueue.trainer_queue``) and the queue of model parses
(``server.taskqueue.models_queue``), one task at a time, in a prefork pool of one process (time
limits need a pool process that can be killed), and lowers its own CPU priority (``--nice``, default 10) so that a training running on a lab
machine takes what the device processes leave rather than disturbing their measurements.
Several trainers may consume the queues; the conditional claim on the predictor row keeps each
predictor trained once, and the conditional finish of a parse keeps each upload parsed once.

The database is the truth of what is pending: when it starts, the trainer sends again the parse
of every model still ``parsing`` (a message lost with a broker restart or a killed trainer).
"""

from __future__ import annotations

import argparse
import os
import re
import socket
import sys
import uuid
from collections.abc import Sequence

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
    from server.networks.services import resend_parsing_models
    from server.taskqueue import models_queue, trainer_queue
    from workers.celery_app import app

    node = name or f"trainer.{uuid.uuid4().hex[:8]}@{socket.gethostname()}"
    node = re.sub(r"[^A-Za-z0-9_.@-]", "-", node)
    resend_parsing_models()
    app.worker_main(celery_argv(f"{trainer_queue()},{models_queue()}", node, loglevel))
    return 0


def run_from_args(args: argparse.Namespace) -> int:
    """Run the trainer with parsed arguments."""
    return run_trainer(name=args.name, nice=args.nice, loglevel=args.loglevel)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``python -m workers.trainer``."""
    parser = argparse.ArgumentParser(prog="python -m workers.trainer", description=__doc__.splitlines()[0])
    add_arguments(parser)
    return run_from_args(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())

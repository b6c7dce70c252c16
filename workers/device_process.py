"""One device's Celery worker process, started and supervised by ``workers.run``.

It consumes exactly one queue (its device's) with one pool process and a prefetch of one, so
the device runs one job at a time. It dies with its agent: a worker killed with SIGKILL leaves
no process behind that could go on measuring (or claiming) under a token nobody heart-beats.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence

# The pool of a device process (``workers.device_pool``), named here: Celery reads the name from the
# environment when it is imported, so it must be set before anything imports Celery.
DEVICE_POOL = "workers.device_pool:DevicePool"


def celery_argv(queue: str, node_name: str, loglevel: str) -> list[str]:
    """The ``celery worker`` arguments for one device's queue."""
    return [
        "worker",
        "--queues",
        queue,
        # prefork with a child per job, not solo: time limits need a pool process that can be
        # killed, and a runtime that crashes on a model takes down that child, not the consumer.
        # Celery's prefork pool with a warm spare process (workers.device_pool, selected through
        # CELERY_CUSTOM_WORKER_POOL): one job at a time, its process forked before it arrived.
        "--pool",
        "custom",
        "--concurrency",
        "1",
        "--prefetch-multiplier",
        "1",
        # A fresh pool process per job: runtimes that size their thread pool once per process
        # (PoCL's POCL_MAX_PTHREAD_COUNT) honour each job's thread count, and nothing one job
        # leaves behind (a leak, a wedged driver context) can skew the next job's timings.
        "--max-tasks-per-child",
        "1",
        "--hostname",
        node_name,
        # No cluster chatter: each process serves one private queue and needs no peers.
        "--without-gossip",
        "--without-mingle",
        "--without-heartbeat",
        "--loglevel",
        loglevel,
    ]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the Celery worker of one device (arguments as ``workers.run`` passes them)."""
    parser = argparse.ArgumentParser(prog="python -m workers.device_process", description=__doc__)
    parser.add_argument("--queue", required=True)
    parser.add_argument("--node-name", required=True)
    parser.add_argument("--agent-pid", type=int, required=True)
    parser.add_argument("--loglevel", default="INFO")
    args = parser.parse_args(argv)

    from billiard.util import set_pdeathsig

    set_pdeathsig(signal.SIGKILL)
    if os.getppid() != args.agent_pid:  # the agent died before the line above took effect
        return 1

    # Read by Celery when it is first imported, below.
    os.environ["CELERY_CUSTOM_WORKER_POOL"] = DEVICE_POOL
    from workers.context import WorkerContext

    WorkerContext.from_env()  # fail now, not at the first job, if the agent passed no context
    from workers.celery_app import app

    app.worker_main(celery_argv(args.queue, args.node_name, args.loglevel))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A remote scenario: serve the job's model here and measure it from a client under network profiles."""

from __future__ import annotations

from typing import Any

from devicelab.backends.base import DeviceInfo
from devicelab.graph import graph_from_dict
from workers.jobs.progress import ProgressReporter


def run_remote_job(job: Any, info: DeviceInfo, progress: ProgressReporter) -> bool:
    """Serve the job's model on this machine and measure it from a client under the job's network
    profiles; whether the run was stored for this run."""
    from devicelab.remote.on_device import remote_on_device
    from server.networks.services import import_limits
    from server.remote.services import ingest_remote

    graph = graph_from_dict(job.model.graph, import_limits())
    result = remote_on_device(info, graph, job.settings, progress)
    return ingest_remote(job.pk, progress.token, result) is not None

"""What a job's runner has in hand on the lab machine: the claimed job, the device, the server,
the model cache and the progress callback."""

from __future__ import annotations

from dataclasses import dataclass

from devicelab.backends.base import DeviceInfo
from devicelab.graph import Graph, graph_from_dict
from devicelab.graph.limits import ImportLimits
from devicelab.lab_protocol import ClaimedJob
from workers.jobs.progress import ProgressReporter
from workers.model_cache import ModelCache
from workers.server_api import LabServer


@dataclass(frozen=True)
class JobRun:
    """One claimed job being run on its device."""

    job: ClaimedJob
    info: DeviceInfo
    server: LabServer
    files: ModelCache
    progress: ProgressReporter


def import_limits(job: ClaimedJob) -> ImportLimits:
    """The server's bounds on model imports, as the claim carried them (the defaults if it did not)."""
    return ImportLimits(**job.import_limits) if job.import_limits else ImportLimits()


def job_graph(job: ClaimedJob) -> Graph:
    """The job's model as a graph, read within the server's import limits: a model stored before
    they existed cannot make the device allocate what its shapes declare."""
    if job.graph is None:
        raise ValueError(f"job #{job.id} ({job.kind}) carries no model graph")
    return graph_from_dict(job.graph, import_limits(job))

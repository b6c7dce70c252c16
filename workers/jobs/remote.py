"""A remote scenario: serve the job's model here and measure it from a client under network profiles."""

from __future__ import annotations

from devicelab.remote.results import RemoteRunRecord
from workers.jobs.run import JobRun, job_graph


def run_remote_job(run: JobRun) -> RemoteRunRecord:
    """Serve the job's model on this machine and measure it from a client under the job's
    network profiles."""
    from devicelab.remote.on_device import remote_on_device

    return remote_on_device(run.info, job_graph(run.job), run.job.settings, run.progress)

"""A sharing job: R tenants on one device under each strategy, within the job's time budget."""

from __future__ import annotations

from typing import Any

from devicelab.backends.base import DeviceInfo
from workers.jobs.progress import ProgressReporter


def run_sharing_job(job: Any, info: DeviceInfo, progress: ProgressReporter) -> bool:
    """Run a sharing sweep within the job's time budget; whether its rows were stored for this run."""
    from devicelab.tenancy.on_device import sharing_on_device
    from server.tenancy.services import ingest_sharing

    s = job.settings
    result = sharing_on_device(info, s["spec"], progress, time_budget_s=s.get("time_budget_s"))
    return ingest_sharing(job.pk, progress.token, result) is not None

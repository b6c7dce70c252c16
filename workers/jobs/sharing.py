"""A sharing job: R tenants on one device under each strategy, within the job's time budget."""

from __future__ import annotations

from devicelab.tenancy.results import SharingSweepRecord
from workers.jobs.run import JobRun


def run_sharing_job(run: JobRun) -> SharingSweepRecord:
    """Run a sharing sweep within the job's time budget."""
    from devicelab.tenancy.on_device import sharing_on_device

    s = run.job.settings
    return sharing_on_device(run.info, s["spec"], run.progress, time_budget_s=s.get("time_budget_s"))

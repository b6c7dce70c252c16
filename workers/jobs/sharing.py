"""Sharing jobs: R tenants on one device under each strategy (a sweep, within the job's time budget),
or one arrival trace replayed under each online scheduling policy."""

from __future__ import annotations

from devicelab.tenancy.online_on_device import OnlineRunRecord
from devicelab.tenancy.results import SharingSweepRecord
from workers.jobs.run import JobRun


def run_sharing_job(run: JobRun) -> SharingSweepRecord:
    """Run a sharing sweep within the job's time budget."""
    from devicelab.tenancy.on_device import sharing_on_device

    s = run.job.settings
    return sharing_on_device(run.info, s["spec"], run.progress, time_budget_s=s.get("time_budget_s"))


def run_online_job(run: JobRun) -> OnlineRunRecord:
    """Replay an online-scheduling trace under every policy (``devicelab.tenancy.online_on_device``)."""
    from devicelab.tenancy.online_on_device import online_on_device

    return online_on_device(run.info, run.job.settings["spec"], run.progress)

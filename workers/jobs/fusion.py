"""Fusion jobs: a sweep of fused against unfused kernels, and a plan for networks run together."""

from __future__ import annotations

from typing import Any

from devicelab.backends.base import DeviceInfo
from workers.jobs.progress import ProgressReporter


def run_fusion_sweep_job(job: Any, info: DeviceInfo, progress: ProgressReporter) -> bool:
    """Run a fusion sweep over the job's networks; whether its rows were stored for this run."""
    from devicelab.fusion.on_device import sweep_on_device
    from server.fusion.services import graphs_for_job, ingest_sweep

    s = job.settings
    result = sweep_on_device(info, graphs_for_job(job), s["spec"], s.get("precision", "fp32"), progress)
    return ingest_sweep(job.pk, progress.token, result) is not None


def run_fusion_plan_job(job: Any, info: DeviceInfo, progress: ProgressReporter) -> bool:
    """Plan and run fusion for the job's networks together; whether the comparison was stored."""
    from devicelab.fusion.on_device import plan_on_device
    from server.fusion.services import graphs_for_job, ingest_plan, sweep_rows_for_plan

    s = job.settings
    comparison = plan_on_device(
        info, graphs_for_job(job), s.get("options", {}), sweep_rows_for_plan(job), s.get("precision", "fp32"), progress
    )
    return ingest_plan(job.pk, progress.token, comparison) is not None

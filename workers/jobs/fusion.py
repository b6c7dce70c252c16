"""Fusion jobs: a sweep of fused against unfused kernels, and a plan for networks run together."""

from __future__ import annotations

from devicelab.fusion.results import FusionPlanRecord, FusionSweepRecord
from devicelab.graph import Graph, graph_from_dict
from workers.jobs.run import JobRun, import_limits


def job_graphs(run: JobRun) -> list[Graph]:
    """The job's networks, read within the server's import limits."""
    return [graph_from_dict(g, import_limits(run.job)) for g in run.job.graphs]


def run_fusion_sweep_job(run: JobRun) -> FusionSweepRecord:
    """Run a fusion sweep over the job's networks."""
    from devicelab.fusion.on_device import sweep_on_device

    s = run.job.settings
    return sweep_on_device(run.info, job_graphs(run), s["spec"], s.get("precision", "fp32"), run.progress)


def run_fusion_plan_job(run: JobRun) -> FusionPlanRecord:
    """Plan and run fusion for the job's networks together."""
    from devicelab.fusion.on_device import plan_on_device

    s = run.job.settings
    return plan_on_device(
        run.info, job_graphs(run), s.get("options", {}), run.job.plan_rows, s.get("precision", "fp32"), run.progress
    )

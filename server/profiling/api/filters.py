"""Query filters of the job list."""

from __future__ import annotations

from server.api.filters import StrictFilterSet, choice_filter, id_filter
from server.profiling.models import JobKind, JobState, ProfilingJob


class JobFilterSet(StrictFilterSet):
    """``GET /api/jobs/?state=&device=&model=&kind=``."""

    state = choice_filter("state", JobState.choices, "only jobs in this state")
    device = id_filter("device", "only jobs on this device")
    model = id_filter("model", "only jobs of this model")
    kind = choice_filter("kind", JobKind.choices, "only jobs of this kind (profiles, fusion sweeps, ...)")

    class Meta:
        model = ProfilingJob
        fields = ["state", "device", "model", "kind"]

"""A job queued with settings that measure something else than one may think (more threads than
pinned cores) says so on its page, as its submission did."""

from __future__ import annotations

from collections.abc import Callable

import pytest

pytestmark = pytest.mark.django_db


def test_the_submission_warning_is_on_the_job_page(
    make_member: Callable, web_client: Callable, finished_job: Callable
) -> None:
    me = make_member()
    job = finished_job(me.team)
    html = web_client(me).get(f"/jobs/{job.pk}/").content.decode()
    assert "job-warning" not in html
    job.warnings = ["settings.threads: 2 threads on 1 pinned core (cpu7) take turns"]
    job.save(update_fields=["warnings"])
    html = web_client(me).get(f"/jobs/{job.pk}/").content.decode()
    assert (
        '<div class="message warning job-warning"><b>Warning:</b> settings.threads: 2 threads on 1 pinned core' in html
    )

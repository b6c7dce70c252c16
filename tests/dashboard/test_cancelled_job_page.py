"""A cancelled job's page says who cancelled it, when, and at what point (queued, or running at
what progress), and offers to run it again; before, it showed only its header."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest

from server.profiling.services import cancel_job, claim_job, report_progress

pytestmark = pytest.mark.django_db


def _note(html: str) -> str:
    m = re.search(r'<div class="message warning" id="cancelled">(.*?)</div>', html, re.S)
    assert m, "no cancellation note on the page"
    return re.sub(r"<[^>]+>", "", m.group(1))


def test_cancelling_from_the_page_records_and_shows_who_and_when(
    make_member: Callable[..., Any], web_client: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    me = make_member(username="carol")
    job = make_job(me.team)
    assert claim_job(job.pk, "run-1") is not None and report_progress(job.pk, "run-1", 0.4, "timed runs 12/30")
    client = web_client(me)
    resp = client.post(f"/jobs/{job.pk}/cancel/", follow=True)
    job.refresh_from_db()
    assert job.cancelled_by_id == me.user.pk and job.finished_at is not None
    note = " ".join(_note(resp.content.decode()).split())
    assert "Cancelled by carol" in note
    assert job.finished_at.strftime("%Y-%m-%d %H:%M:%S UTC") in note
    assert "while it was running" in note and "at 40%" in note and "timed runs 12/30" in note
    assert 'id="rerun-form"' in resp.content.decode() and 'id="cancel-form"' not in resp.content.decode()


def test_a_job_cancelled_while_queued_by_a_script_says_who_is_unknown(
    make_member: Callable[..., Any], web_client: Callable[..., Any], make_job: Callable[..., Any]
) -> None:
    me = make_member()
    job = make_job(me.team)
    assert cancel_job(job)  # no user: a script, a management command
    note = " ".join(_note(web_client(me).get(f"/jobs/{job.pk}/").content.decode()).split())
    assert "someone not recorded" in note and "before it started" in note


def test_the_job_page_of_a_cancelled_job_takes_no_extra_query_for_who(
    make_member: Callable[..., Any],
    web_client: Callable[..., Any],
    make_job: Callable[..., Any],
    django_assert_max_num_queries: Any,
) -> None:
    me = make_member()
    job = make_job(me.team)
    assert cancel_job(job, user=me.user)
    client = web_client(me)
    client.get(f"/jobs/{job.pk}/")  # warm the session
    # session, user, team, the job with its model, device, result and who cancelled it
    with django_assert_max_num_queries(4):
        html = client.get(f"/jobs/{job.pk}/").content.decode()
    assert f"Cancelled by {me.user.username}" in " ".join(_note(html).split())

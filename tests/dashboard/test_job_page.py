"""A job's page: live progress while active; statistics, charts and operators once done."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import pytest

from server.profiling.models import ProfilingJob
from server.profiling.services import claim_job, report_progress
from tests.dashboard.factories import graph_with_ops


def _figure(html: str, element_id: str) -> dict[str, Any]:
    m = re.search(rf'id="{element_id}" data-figure><script type="application/json">(.*?)</script>', html, re.S)
    assert m, f"no figure {element_id}"
    return json.loads(m.group(1))


@pytest.mark.django_db
def test_an_active_job_shows_a_live_progress_bar(
    make_member: Callable, web_client: Callable, make_job: Callable
) -> None:
    me = make_member()
    job = make_job(me.team)
    assert claim_job(job.pk, "run-1") and report_progress(job.pk, "run-1", 0.4, "timed runs 12/30")
    html = web_client(me).get(f"/jobs/{job.pk}/").content.decode()
    bar = re.search(r'<div class="progress" id="job-progress"[^>]*>', html, re.S)
    assert bar, "no progress bar"
    assert 'aria-valuenow="40"' in bar.group(0) and 'data-active="1"' in bar.group(0)
    assert f'data-result-url="/jobs/{job.pk}/result/"' in bar.group(0)
    assert "timed runs 12/30" in html and 'id="cancel-form"' in html


@pytest.mark.django_db
def test_a_finished_job_shows_statistics_histogram_cold_start_and_operators(
    make_member: Callable, web_client: Callable, make_network: Callable, finished_job: Callable
) -> None:
    me = make_member()
    graph = graph_with_ops(24, name="net24")
    job = finished_job(me.team, model=make_network(me.team, graph))
    result = job.result
    resp = web_client(me).get(f"/jobs/{job.pk}/")
    assert resp.status_code == 200
    html = resp.content.decode()
    assert 'id="job-progress"' not in html

    hist = _figure(html, "chart-samples")
    assert hist["data"][0]["x"] == pytest.approx(result.samples_ms)
    assert hist["layout"]["xaxis"]["title"]["text"] == "end-to-end latency (ms)"
    cold = _figure(html, "chart-cold-warm")["data"][0]
    assert cold["x"] == pytest.approx([result.load_ms, result.first_run_ms, result.e2e_median])

    ops = resp.context["ops"]
    timed = [r for r in ops.rows if r.timed]
    per_op = _figure(html, "chart-per-operator")
    assert sum(len(t["y"]) for t in per_op["data"]) == len(timed)
    assert {t["name"] for t in per_op["data"]} == {r.op_type for r in timed}
    by_type = _figure(html, "chart-op-types")["data"][0]
    assert sum(by_type["x"]) == pytest.approx(ops.total_ms)
    top = _figure(html, "chart-top-ops")["data"][0]
    assert len(top["x"]) == 10 and top["x"] == sorted(top["x"], reverse=True)

    # The table: every graph operator plus the runtime's own kernel; fused ones say into what.
    assert html.count('<tr data-op-type="') == len(graph.operators) + 1
    assert ops.fused > 0 and "fused into <span" in html
    conv = next(r for r in ops.rows if r.op_type == "conv2d")
    assert conv.macs == next(c.macs for o, c in graph.costs() if o.name == conv.name)
    assert conv.median is not None and conv.ms == conv.median  # ranked and summed at the median
    assert conv.gmacs_per_s == pytest.approx(conv.macs / (conv.median * 1e-3) / 1e9)
    top_ms = [r.ms for r in ops.top]
    assert top_ms == sorted(top_ms, reverse=True) and top["x"] == pytest.approx(top_ms)
    assert ops.total_ms == pytest.approx(sum(r.median or 0 for r in timed))
    head = html[html.index('<table class="table sortable dense fit" id="job-ops">') :]
    assert head.index("Median ms") < head.index("Mean ms") < head.index("p90 ms")


@pytest.mark.django_db
def test_the_result_fragment_is_what_the_page_swaps_in(
    make_member: Callable, web_client: Callable, finished_job: Callable
) -> None:
    me = make_member()
    job = finished_job(me.team)
    resp = web_client(me).get(f"/jobs/{job.pk}/result/")
    html = resp.content.decode()
    assert resp.status_code == 200 and "<html" not in html
    assert 'id="chart-per-operator"' in html and 'id="job-ops"' in html


@pytest.mark.django_db
def test_progress_json_reports_only_the_teams_jobs(
    make_member: Callable, web_client: Callable, make_job: Callable, finished_job: Callable
) -> None:
    me, other = make_member(), make_member()
    running = make_job(me.team)
    claim_job(running.pk, "run-1")
    report_progress(running.pk, "run-1", 0.25, "warm-up")
    done = finished_job(me.team)
    theirs = make_job(other.team)
    body = web_client(me).get(f"/jobs/progress/?ids={running.pk},{done.pk},{theirs.pk},x").json()
    by_id = {j["id"]: j for j in body["jobs"]}
    assert set(by_id) == {running.pk, done.pk}
    assert by_id[running.pk] == {
        "id": running.pk,
        "state": "running",
        "progress": 0.25,
        "message": "warm-up",
        "finished": False,
        "median_ms": None,
    }
    assert by_id[done.pk]["finished"] and by_id[done.pk]["median_ms"] == pytest.approx(done.result.e2e_median)


@pytest.mark.django_db
def test_cancel_stops_a_queued_job(make_member: Callable, web_client: Callable, make_job: Callable) -> None:
    me = make_member()
    job = make_job(me.team)
    client = web_client(me)
    assert client.get(f"/jobs/{job.pk}/cancel/").status_code == 405
    resp = client.post(f"/jobs/{job.pk}/cancel/", follow=True)
    assert ProfilingJob.objects.get(pk=job.pk).state == "cancelled"
    assert f"Job #{job.pk} cancelled." in resp.content.decode()
    again = client.post(f"/jobs/{job.pk}/cancel/", follow=True)
    assert "already cancelled" in again.content.decode()


@pytest.mark.django_db
def test_another_teams_job_is_404_everywhere(
    make_member: Callable, web_client: Callable, make_job: Callable, finished_job: Callable
) -> None:
    me, other = make_member(), make_member()
    done, queued = finished_job(other.team), make_job(other.team)
    client = web_client(me)
    for path in (f"/jobs/{done.pk}/", f"/jobs/{done.pk}/result/", "/jobs/987654/"):
        assert client.get(path).status_code == 404, path
    assert client.post(f"/jobs/{queued.pk}/cancel/").status_code == 404
    assert ProfilingJob.objects.get(pk=queued.pk).state == "queued"
    assert web_client(other).get(f"/jobs/{done.pk}/").status_code == 200


@pytest.mark.django_db
def test_job_page_of_500_operators_takes_a_fixed_number_of_queries(
    make_member: Callable,
    web_client: Callable,
    make_network: Callable,
    finished_job: Callable,
    django_assert_max_num_queries: Any,
) -> None:
    me = make_member()
    job = finished_job(me.team, model=make_network(me.team, graph_with_ops(500)))
    for _ in range(3):
        finished_job(me.team)  # jobs to compare with
    client = web_client(me)
    with django_assert_max_num_queries(6):
        resp = client.get(f"/jobs/{job.pk}/")
    assert len(resp.context["ops"].rows) == 501 and len(resp.context["compare_with"]) == 3

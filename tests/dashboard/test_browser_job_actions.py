"""A job's page in a real browser (Debian's chromium against a live server): the operator table
fits its card with ONNX-length names and kernels (its GMAC/s column is seen, not scrolled to),
the table downloads are linked, "Run again" queues the same job anew, and cancelling that one
leaves a page that says who cancelled it, when, and offers to run it again."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from devicelab.graph import Graph, GraphBuilder
from server.profiling.models import ProfilingJob
from server.profiling.services import claim_job, ingest_result
from tests.dashboard.factories import measured_result
from tests.dashboard.test_browser import browser_page, log_in, screenshots

__all__ = ["browser_page", "screenshots"]  # the browser fixtures, shared with the main browser test

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def onnx_like_graph() -> Graph:
    """A small network whose operators are named the way exported ONNX files name them
    (``/backbone/stage3/block2/expand/Conv``): long paths without a space to break at."""
    b = GraphBuilder("onnx-like-names", (1, 3, 56, 56))
    x = b.input
    with b.scope("/model/backbone"):
        for stage in range(3):
            with b.scope(f"stage{stage}/block{stage}/inverted_residual"):
                y = b.relu6(b.bn(b.conv(x, 32, 1)))
                x = b.add(x, b.conv(y, 3, 1)) if stage else b.conv(y, 3, 1)
    return b.build(b.fc(b.flatten(b.global_avg_pool(x)), 10))


def _box(page: Any, selector: str) -> dict[str, float]:
    return dict(page.eval_on_selector(selector, "el => el.getBoundingClientRect().toJSON()"))


def test_operator_table_fits_and_a_job_runs_again_and_is_cancelled(
    live_server: Any,
    make_member: Callable[..., Any],
    make_device: Callable[..., Any],
    make_network: Callable[..., Any],
    make_job: Callable[..., Any],
    browser_page: tuple[Any, list[str]],
    screenshots: Callable[[Any, str], None],
) -> None:
    page, console_errors = browser_page
    member = make_member()
    graph = onnx_like_graph()
    job = make_job(member.team, model=make_network(member.team, graph), device=make_device(name="browser-cpu"))
    result = measured_result(graph, samples=30)
    # The runtime's kernel names, as onnxruntime reports them: the node's path and a suffix.
    result = dataclasses.replace(
        result,
        ops=[
            dataclasses.replace(op, kernel=f"{op.name}_kernel_time_onnxruntime::MlasConvPointwise" if op.kernel else "")
            for op in result.ops
        ],
    )
    assert claim_job(job.pk, "run-1") is not None and ingest_result(job.pk, "run-1", result) is not None
    base = live_server.url

    # The operator table fits its card: the GMAC/s header lies inside the card and inside the
    # table's scroll box, which has nothing to scroll sideways.
    log_in(page, base, member, f"/jobs/{job.pk}/")
    page.wait_for_selector("#job-ops tbody tr")
    screenshots(page, "job-actions-01-table")
    card = _box(page, "section.card:has(#job-ops)")
    scroller = _box(page, "section.card:has(#job-ops) .table-scroll")
    gmacs = _box(page, "#job-ops th:last-child")
    assert page.inner_text("#job-ops th:last-child").strip() == "GMAC/s"
    assert card["left"] <= gmacs["left"] and gmacs["right"] <= scroller["right"] <= card["right"], (card, gmacs)
    assert gmacs["right"] <= page.viewport_size["width"]
    sideways = page.eval_on_selector(
        "section.card:has(#job-ops) .table-scroll", "el => el.scrollWidth - el.clientWidth"
    )
    assert sideways <= 0, f"the operator table scrolls {sideways} px sideways"
    assert page.get_attribute("#download-csv", "href") == f"/jobs/{job.pk}/operators.csv"
    assert page.get_attribute("#download-json", "href") == f"/jobs/{job.pk}/operators.json"

    # Run again: a new queued job of the same model, device and settings, with its own page.
    page.click("#rerun-form button")
    page.wait_for_selector("#cancel-form")
    again = ProfilingJob.objects.exclude(pk=job.pk).get(team=member.team)
    assert page.url == f"{base}/jobs/{again.pk}/"
    assert f"Queued job #{again.pk}" in page.inner_text(".messages")
    assert (again.model_id, again.device_id, again.settings) == (job.model_id, job.device_id, job.settings)
    assert again.created_by_id == member.user.pk

    # Cancel it: the page says who cancelled it and when, and offers to run it again.
    page.click("#cancel-form button")
    page.wait_for_selector("#cancelled")
    note = page.inner_text("#cancelled")
    assert f"by {member.user.username}" in note and "before it started" in note, note
    again.refresh_from_db()
    assert again.state == "cancelled" and again.cancelled_by_id == member.user.pk
    assert again.finished_at is not None and again.finished_at.strftime("%Y-%m-%d %H:%M:%S") in note
    assert page.is_visible("#rerun-form button") and page.is_visible("#rerun-edit")
    screenshots(page, "job-actions-02-cancelled")
    assert console_errors == []

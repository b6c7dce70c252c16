"""A job's operator table as CSV and JSON downloads: the stored timing rows, unrounded, under
column names with units, in execution order; another team's job and a job without a result are 404."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable
from typing import Any

import pytest

from dashboard.operator_export import COLUMNS
from server.profiling.models import OperatorTiming
from tests.dashboard.factories import graph_with_ops

pytestmark = pytest.mark.django_db


def _stored(job: Any) -> list[OperatorTiming]:
    """The job's timing rows in execution order: graph operators by index, runtime kernels after."""
    rows = list(OperatorTiming.objects.filter(result__job=job))
    return sorted(rows, key=lambda r: (r.index is None, r.index if r.index is not None else 0, r.pk))


def _float_or_none(text: str) -> float | None:
    return float(text) if text != "" else None


def test_the_csv_holds_every_stored_row_with_units_in_its_header(
    make_member: Callable[..., Any], web_client: Callable[..., Any], finished_job: Callable[..., Any]
) -> None:
    me = make_member()
    job = finished_job(me.team, graph=graph_with_ops(24, name="csv-net"))
    resp = web_client(me).get(f"/jobs/{job.pk}/operators.csv")
    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("text/csv")
    assert resp["Content-Disposition"] == f'attachment; filename="job-{job.pk}-operators.csv"'
    lines = list(csv.reader(io.StringIO(resp.content.decode())))
    header, body = lines[0], lines[1:]
    assert header == list(COLUMNS)
    assert {"median_ms", "mean_ms", "p90_ms", "std_ms", "share_percent", "gmac_per_s"} <= set(header)
    assert header.index("median_ms") < header.index("mean_ms")  # the median first, as on the page
    stored = _stored(job)
    assert len(body) == len(stored) == 25  # 24 operators and one kernel the runtime inserted
    col = {name: i for i, name in enumerate(header)}
    central = [r.median if r.median is not None else r.mean for r in stored if r.mean is not None]
    for line, row in zip(body, stored, strict=True):
        assert line[col["name"]] == row.name and line[col["type"]] == row.op_type
        assert line[col["index"]] == ("" if row.index is None else str(row.index))
        assert line[col["kernel"]] == row.kernel and line[col["fused_into"]] == row.fused_into
        assert _float_or_none(line[col["mean_ms"]]) == row.mean  # every digit, as stored
        assert _float_or_none(line[col["median_ms"]]) == row.median
        assert _float_or_none(line[col["p90_ms"]]) == row.p90
        assert _float_or_none(line[col["std_ms"]]) == row.std
        assert line[col["runs"]] == ("" if row.n is None else str(row.n))
        if row.mean is None:
            assert line[col["share_percent"]] == "" and row.fused_into
        else:
            ms = row.median if row.median is not None else row.mean
            assert float(line[col["share_percent"]]) == pytest.approx(100 * ms / sum(central))
        if row.index is not None:
            shapes = ", ".join("x".join(str(d) for d in s) for s in row.input_shapes)
            assert line[col["input_shapes"]] == shapes
    conv = next(line for line in body if line[col["type"]] == "conv2d")
    macs, median = float(conv[col["macs"]]), float(conv[col["median_ms"]])
    assert macs > 0 and float(conv[col["gmac_per_s"]]) == pytest.approx(macs / (median * 1e-3) / 1e9)


def test_the_json_names_the_job_its_columns_and_holds_the_same_rows(
    make_member: Callable[..., Any], web_client: Callable[..., Any], finished_job: Callable[..., Any]
) -> None:
    me = make_member()
    job = finished_job(me.team)
    resp = web_client(me).get(f"/jobs/{job.pk}/operators.json")
    assert resp.status_code == 200 and resp["Content-Type"] == "application/json"
    assert resp["Content-Disposition"] == f'attachment; filename="job-{job.pk}-operators.json"'
    doc = json.loads(resp.content)
    assert doc["job"] == job.pk
    assert doc["model"] == {"id": job.model_id, "name": job.model.name}
    assert doc["device"]["id"] == job.device_id and doc["settings"] == job.settings
    assert list(doc["columns"]) == list(COLUMNS) and "milliseconds" in doc["columns"]["mean_ms"]
    stored = _stored(job)
    assert [(o["index"], o["name"], o["type"]) for o in doc["operators"]] == [
        (r.index, r.name, r.op_type) for r in stored
    ]
    assert [(o["mean_ms"], o["median_ms"], o["std_ms"], o["runs"]) for o in doc["operators"]] == [
        (r.mean, r.median, r.std, r.n) for r in stored
    ]
    assert [o["input_shapes"] for o in doc["operators"]] == [r.input_shapes for r in stored]
    shares = [o["share_percent"] for o in doc["operators"] if o["share_percent"] is not None]
    assert sum(shares) == pytest.approx(100.0)


def test_downloads_of_another_teams_job_or_a_job_without_result_are_404(
    make_member: Callable[..., Any],
    web_client: Callable[..., Any],
    finished_job: Callable[..., Any],
    make_job: Callable[..., Any],
) -> None:
    me, other = make_member(), make_member()
    theirs = finished_job(other.team)
    queued = make_job(me.team)
    client = web_client(me)
    for suffix in ("csv", "json"):
        assert client.get(f"/jobs/{theirs.pk}/operators.{suffix}").status_code == 404
        assert client.get(f"/jobs/{queued.pk}/operators.{suffix}").status_code == 404
    page = client.get(f"/jobs/{queued.pk}/").content.decode()
    assert "download-csv" not in page  # no table, no download links


def test_the_job_page_links_both_downloads(
    make_member: Callable[..., Any], web_client: Callable[..., Any], finished_job: Callable[..., Any]
) -> None:
    me = make_member()
    job = finished_job(me.team)
    page = web_client(me).get(f"/jobs/{job.pk}/").content.decode()
    assert f'href="/jobs/{job.pk}/operators.csv" id="download-csv"' in page
    assert f'href="/jobs/{job.pk}/operators.json" id="download-json"' in page

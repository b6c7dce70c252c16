"""The API answers as ``/api/schema/`` says: schemathesis runs every check against a live server.

Every operation, GETs and POSTs alike, gets a bounded number of generated requests (valid ones,
and ones the schema refuses), generated deterministically so that every CI run sends the same.
The rows that id 1 names (a team's model, job and predictor, a device) exist, and an OpenCL device
2, a fusion sweep 8 with rows, a fusion plan 9, a sharing sweep 10 with rows and a remote run 11,
so that requests reach the code behind the lookups and the schema's examples succeed; the test
also asserts that every operation answered 2xx at least once, so a run of refusals only cannot
pass. The one exception to that assertion is the operations no member's token can succeed on (the
lab machines' protocol and the staff API, by their tags: see ``ANSWERED_ELSEWHERE``); schemathesis
still runs every check on their answers. The only exceptions to "all checks, everywhere" are in
``schemathesis.toml`` next to this file, each with its reason.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from server.fusion.services import submit_fusion_plan, submit_fusion_sweep
from server.remote.services import submit_remote_run
from server.tenancy.services import submit_sharing_sweep
from tests.e2e.live_clients import wait_for_request_threads
from tests.server.fusion_api_factories import finish_plan, finish_sweep
from tests.server.predictor_data import ready_predictor, store_profiles
from tests.server.remote_factories import finish_remote
from tests.server.sharing_api_factories import finish_sharing

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True, reset_sequences=True)]

CONFIG = Path(__file__).with_name("schemathesis.toml")
# Per operation, in each of the fuzzing and stateful phases; the coverage phase adds the boundary
# values of every parameter (most of the run). About 4,000 requests, 50 s in all on a quiet
# 2-core machine (the live server answers without Nagle's delay: tests/conftest.py).
MAX_EXAMPLES = 10
TIMEOUT_SECONDS = 240  # a hung run fails rather than holding CI, before pytest's own timeout
# Operations whose success this run cannot reach, by their schema tag: the lab machines' protocol
# (/api/lab/..., server/labs/api/protocol.py) takes only a lab token ("Authorization: Lab <token>")
# and answers this member's API token 401; the staff API (/api/labs/, server/labs/api/staff.py)
# answers a member who is not staff 403. Their successes are tested in tests/labs/
# (test_protocol_*.py, test_staff_api.py); here they are left out of "answered 2xx at least once"
# only.
ANSWERED_ELSEWHERE = frozenset({"lab machines", "labs"})


@pytest.fixture
def queue_prefix(settings: Any) -> Iterator[str]:
    """Messages of jobs and predictors queued here go to queues of their own, removed at the end."""
    from server.taskqueue import purge_queues

    prefix = f"conformance-{uuid.uuid4().hex[:12]}."
    settings.LATENCYLAB_QUEUE_PREFIX = prefix
    yield prefix
    purge_queues(prefix)


def test_the_api_answers_as_its_schema_says(
    live_server: Any, settings: Any, queue_prefix: str, make_member: Any, make_device: Any, tmp_path: Path
) -> None:
    # schemathesis probes each operation with a bad token once (ignored_auth); past the lockout's
    # count every answer would be a 429, which the schema documents, and the run would test nothing.
    settings.LATENCYLAB_TOKEN_FAILURE_LIMIT = 10**6
    settings.LATENCYLAB_PREDICT_NB201_TABLE = False  # no trainer here: predict through the graphs
    settings.LATENCYLAB_OFFLINE_AFTER_SECONDS = 3600  # no worker heart-beats device 1: it stays online
    member = make_member("conformance", "conformance")
    device = make_device()
    # Models and succeeded jobs 1..7 (enough networks to train a predictor on device 1), and a
    # ready predictor 1: the ids of the schema's examples, and the first ones generated.
    jobs = store_profiles(member.team, device)
    predictor = ready_predictor(device, member.team)
    # Models 1..3 have an accuracy: the candidates of POST /api/select/'s example.
    for job, top1 in zip(jobs[:3], (60.0, 70.0, 75.0), strict=True):
        job.model.top1_accuracy = top1
        job.model.save(update_fields=["top1_accuracy"])
    assert device.pk == jobs[0].pk == jobs[0].model_id == predictor.pk == 1
    # An online OpenCL device 2, the fusion examples' device (a sweep or plan runs on OpenCL only),
    # a succeeded sweep 8 with rows, a succeeded plan 9 and a succeeded sharing sweep 10 with rows:
    # schemathesis.toml names them.
    gpu = make_device("opencl")
    sweep = submit_fusion_sweep(member.team, gpu, {"zoo": ["mobilenet_v2_0.5"], "spec": {"sizes": [2]}})
    finish_sweep(sweep)
    plan = submit_fusion_plan(member.team, gpu, {"sweep": sweep.pk})
    finish_plan(plan)
    sharing = submit_sharing_sweep(member.team, gpu, {"spec": {"shapes": [[64, 8, 64]], "tenants": [1, 2]}})
    finish_sharing(sharing)
    # A succeeded remote run 11 of model 1 served by device 1 (the POST example's model and device).
    remote = submit_remote_run(member.team, jobs[0].model, device, {"profiles": ["unshaped", "lte"], "requests": 5})
    finish_remote(remote)
    # A succeeded online-scheduling run 12 on device 2.
    from server.tenancy.services import ingest_online, submit_online_run
    from tests.server.fusion_factories import claim
    from tests.server.sharing_factories import ONLINE_SPEC, online_record

    online = submit_online_run(member.team, gpu, {"spec": ONLINE_SPEC.as_dict()})
    assert ingest_online(online.pk, claim(online), online_record()) is not None
    assert (gpu.pk, sweep.pk, plan.pk, sharing.pk, remote.pk, online.pk) == (2, 8, 9, 10, 11, 12)

    command = [
        str(Path(sys.executable).with_name("st")),
        "--config-file",
        str(CONFIG),
        "run",
        f"{live_server.url}/api/schema/",
        "--header",
        f"Authorization: Token {member.key}",
        "--checks",
        "all",
        "--max-examples",
        str(MAX_EXAMPLES),
        "--generation-deterministic",  # the same requests every run (schemathesis then needs no seed)
        "--workers",
        "1",
        "--request-timeout",
        "30",
        "--no-color",
        "--report",
        "har",
        "--report-har-path",
        str(tmp_path / "run.har"),
    ]
    try:
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT_SECONDS)
    finally:
        wait_for_request_threads()
    report = done.stdout + done.stderr
    print(report[-3000:])  # schemathesis' summary: cases and time per phase
    assert done.returncode == 0, report
    # Not a run of refusals only: every operation of the schema answered with success at least once.
    answered = _statuses_by_operation(json.loads((tmp_path / "run.har").read_text()), live_server.url)
    tagged = [
        ((m.upper(), p), set(op.get("tags", ())))
        for p, ops in _schema(live_server.url)["paths"].items()
        for m, op in ops.items()
    ]
    # A renamed tag must not quietly stop leaving its operations out (nor leave none out).
    assert ANSWERED_ELSEWHERE <= set().union(*(tags for _, tags in tagged))
    operations = {op for op, tags in tagged if not tags & ANSWERED_ELSEWHERE}
    unanswered = sorted(op for op in operations if not any(200 <= code < 300 for code in answered.get(op, ())))
    assert not unanswered, f"never answered 2xx: {unanswered}\n{report}"


def _schema(base: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{base}/api/schema/?format=json", timeout=30) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def _statuses_by_operation(har: dict[str, Any], base: str) -> dict[tuple[str, str], set[int]]:
    """The statuses each (method, schema path) was answered with, from schemathesis' HAR report."""
    templates = [(re.compile("^" + re.sub(r"\{[^/]+\}", "[^/]+", p) + "$"), p) for p in _schema(base)["paths"]]
    seen: dict[tuple[str, str], set[int]] = {}
    for entry in har["log"]["entries"]:
        path = urllib.parse.urlsplit(entry["request"]["url"]).path
        for pattern, template in templates:
            if pattern.match(path):
                seen.setdefault((entry["request"]["method"], template), set()).add(entry["response"]["status"])
    return seen

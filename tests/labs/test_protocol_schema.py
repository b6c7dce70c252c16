"""``/api/schema/`` documents every lab call under the tag "lab machines", its request and answer
as the records of ``devicelab.lab_protocol`` declare them: the schema is compared field by field
(nested records too) with the dataclasses, so that the two cannot drift apart."""

from __future__ import annotations

import dataclasses
import types
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import pytest
from rest_framework.test import APIClient

from devicelab import lab_protocol as wire

pytestmark = pytest.mark.django_db

# Each lab call: (method, path in the schema) -> (request record, answer record, success code).
CALLS: dict[tuple[str, str], tuple[type | None, type | None, str]] = {
    ("get", "/api/lab/hello"): (None, wire.Hello, "200"),
    ("post", "/api/lab/devices"): (wire.Registration, wire.Registered, "200"),
    ("post", "/api/lab/heartbeat"): (wire.Heartbeat, wire.HeartbeatAnswer, "200"),
    ("post", "/api/lab/devices/gone"): (wire.DevicesGone, wire.Outcome, "200"),
    ("post", "/api/lab/devices/{id}/fail-running"): (wire.Ending, wire.Outcome, "200"),
    ("post", "/api/lab/jobs/{id}/claim"): (wire.Claim, wire.ClaimAnswer, "200"),
    ("post", "/api/lab/jobs/{id}/progress"): (wire.Progress, wire.ProgressAnswer, "200"),
    ("post", "/api/lab/jobs/{id}/result"): (wire.ResultPost, wire.ResultAnswer, "201"),
    ("post", "/api/lab/results"): (wire.ResultBatch, wire.ResultBatchAnswer, "200"),
    ("post", "/api/lab/jobs/{id}/fail"): (wire.Ending, wire.Outcome, "200"),
    ("post", "/api/lab/jobs/{id}/retry"): (wire.Ending, wire.Outcome, "200"),
    ("get", "/api/lab/files/{sha256}"): (None, None, "200"),
}


@pytest.fixture(scope="module")
def schema(django_db_blocker: Any) -> dict[str, Any]:
    with django_db_blocker.unblock():
        answer = APIClient().get("/api/schema/?format=json")
    assert answer.status_code == 200
    return answer.json()  # type: ignore[no-any-return]


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _dataclass_in(hint: Any) -> type | None:
    """The record a field's type holds: itself, an optional one, or the items of a list of them."""
    if dataclasses.is_dataclass(hint):
        return hint  # type: ignore[return-value]
    if get_origin(hint) in (Union, types.UnionType, list):
        inner = [a for a in get_args(hint) if a is not type(None)]
        return _dataclass_in(inner[0]) if len(inner) == 1 else None
    return None


def _check_record(schema: dict[str, Any], node: dict[str, Any], record: type, where: str) -> None:
    """``node`` (an object schema) has exactly the record's fields, required when they have no default."""
    node = _resolve(schema, node)
    fields = dataclasses.fields(record)  # type: ignore[arg-type]
    assert set(node["properties"]) == {f.name for f in fields}, where
    required = {f.name for f in fields if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    assert set(node.get("required", [])) == required, where
    assert node.get("additionalProperties") is False, where
    hints = get_type_hints(record, include_extras=True)
    for f in fields:
        hint = hints[f.name]
        prop = _resolve(schema, node["properties"][f.name])
        base = get_args(hint)[0] if hasattr(hint, "__metadata__") else hint
        if get_origin(base) is Literal:
            assert prop["enum"] == list(get_args(base)), f"{where}.{f.name}"
        inner = _dataclass_in(base)
        if inner is not None and not hasattr(hint, "__metadata__"):
            items = prop["items"] if prop.get("type") == "array" else prop
            _check_record(schema, items, inner, f"{where}.{f.name}")


def test_every_lab_path_is_documented_under_the_lab_tag(schema: dict[str, Any]) -> None:
    from server.labs.api import protocol_urls

    documented = {(m, p) for p, ops in schema["paths"].items() if p.startswith("/api/lab/") for m in ops}
    assert documented == set(CALLS)
    assert len(protocol_urls.urlpatterns) == len(CALLS)  # every route of the lab API is one of them
    for method, path in CALLS:
        operation = schema["paths"][path][method]
        assert operation["tags"] == ["lab machines"], path
        assert {"401", "403"} <= set(operation["responses"]), path
    tagged = {p for p, ops in schema["paths"].items() for o in ops.values() if "lab machines" in o.get("tags", [])}
    assert tagged == {p for _, p in CALLS}  # and nothing else is


@pytest.mark.parametrize(("method", "path"), list(CALLS))
def test_each_calls_bodies_are_its_records(schema: dict[str, Any], method: str, path: str) -> None:
    request, answer, code = CALLS[(method, path)]
    operation = schema["paths"][path][method]
    if request is None:
        assert "requestBody" not in operation, path
    else:
        body = operation["requestBody"]
        assert body["required"] is True, path
        assert set(body["content"]) == {"application/json"}, path
        _check_record(schema, body["content"]["application/json"]["schema"], request, f"{path} request")
    if answer is not None:
        _check_record(schema, operation["responses"][code]["content"]["application/json"]["schema"], answer, path)


def test_the_claim_answer_names_its_seven_outcomes_and_the_claimed_job(schema: dict[str, Any]) -> None:
    responses = schema["paths"]["/api/lab/jobs/{id}/claim"]["post"]["responses"]
    answer = _resolve(schema, responses["200"]["content"]["application/json"]["schema"])
    outcome = answer["properties"]["outcome"]
    assert outcome["enum"] == list(get_args(wire.ClaimOutcome))
    assert set(outcome["enum"]) == {"claimed", "claimable", "missing", "elsewhere", "not-queued", "lost", "offline"}
    job = _resolve(schema, answer["properties"]["job"])
    assert job["nullable"] is True
    assert set(job["properties"]) == {f.name for f in dataclasses.fields(wire.ClaimedJob)}
    assert set(_resolve(schema, job["properties"]["model"])["properties"]) == {
        f.name for f in dataclasses.fields(wire.ModelRef)
    }

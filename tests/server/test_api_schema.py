"""The OpenAPI schema generates cleanly and the docs page works offline (assets served locally)."""

from __future__ import annotations

import io
from typing import Any

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from rest_framework.test import APIClient

from devicelab.backends.base import ProfileSettings
from devicelab.fusion.spec import PlanOptions, SweepSpec
from devicelab.predict.batch import NB201_SETTINGS
from devicelab.remote.spec import MAX_PROFILES, MAX_REQUESTS, PAYLOADS, RemoteSettings
from devicelab.tenancy.spec import MAX_TENANTS, STRATEGIES, SharingSpec

pytestmark = pytest.mark.django_db


def test_schema_generates_without_warnings() -> None:
    out = io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", "--format", "openapi-json", stdout=out)
    assert '"/api/jobs/{id}/cancel/"' in out.getvalue()
    assert '"tokenAuth"' in out.getvalue()


def test_schema_endpoint_is_public() -> None:
    response = APIClient().get("/api/schema/?format=json")
    assert response.status_code == 200
    schema: dict[str, Any] = response.json()
    assert {"/api/models/", "/api/jobs/", "/api/devices/", "/api/models/{id}/"} <= set(schema["paths"])
    upload = schema["paths"]["/api/models/"]["post"]["requestBody"]["content"]
    assert {"multipart/form-data", "application/json"} <= set(upload)


def test_docs_page_loads_its_assets_from_our_own_static_files() -> None:
    page = APIClient().get("/api/docs/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn." not in html and "unpkg" not in html and "jsdelivr" not in html
    assert finders.find("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
    asset = APIClient().get("/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")
    assert asset.status_code == 200
    assert APIClient().get("/api/redoc/").status_code == 200


def _schema() -> dict[str, Any]:
    response = APIClient().get("/api/schema/?format=json")
    assert response.status_code == 200
    return response.json()  # type: ignore[no-any-return]


def test_list_filters_are_documented_with_their_choices() -> None:
    from server.devices.models import DeviceKind, DeviceStatus
    from server.predictors.models import PredictorMethod, PredictorState
    from server.profiling.models import JobKind, JobState

    paths = _schema()["paths"]
    expected: dict[str, dict[str, Any]] = {
        "/api/devices/": {"kind": DeviceKind.values, "status": DeviceStatus.values},
        "/api/jobs/": {"state": JobState.values, "device": None, "model": None, "kind": JobKind.values},
        "/api/predictors/": {"device": None, "method": PredictorMethod.values, "state": PredictorState.values},
        "/api/fusion/sweeps/": {"state": JobState.values, "device": None},
        "/api/fusion/plans/": {"state": JobState.values, "device": None},
        "/api/fusion/sweeps/{id}/rows/": {
            "experiment": ["combination", "identical"],
            "size": None,
            "variant": ["rounded", "unrounded", "paper rounded", "paper unrounded"],
            "kinds": "pattern",
            "contains": "pattern",
            "errors": "boolean",
            "detail": "boolean",
        },
        "/api/sharing/sweeps/": {"state": JobState.values, "device": None},
        "/api/remote/runs/": {"state": JobState.values, "device": None, "model": None},
        "/api/sharing/sweeps/{id}/rows/": {
            "workload": "pattern",
            "strategy": list(STRATEGIES),
            "tenants": None,
            "status": ["ok", "memory_bound", "unsupported", "error"],
            "detail": "boolean",
        },
    }
    for path, filters in expected.items():
        params = {p["name"]: p for p in paths[path]["get"]["parameters"] if p["in"] == "query"}
        assert set(filters) | {"page", "page_size"} == set(params), path
        for name, choices in filters.items():
            schema = params[name]["schema"]
            if choices is None:
                assert schema["type"] == "integer", (path, name)
            elif choices == "pattern":
                assert schema["type"] == "string" and schema["pattern"].startswith("^"), (path, name)
            elif choices == "boolean":
                assert schema["type"] == "boolean", (path, name)
            else:
                assert sorted(schema["enum"]) == sorted(choices), (path, name)
    assert (
        "idle or running a job"
        in {p["name"]: p for p in paths["/api/devices/"]["get"]["parameters"]}["status"]["description"]
    )


def test_request_bodies_are_documented_by_their_serializers() -> None:
    schema = _schema()
    components = schema["components"]["schemas"]

    def body(path: str, content: str = "application/json") -> dict[str, Any]:
        ref = schema["paths"][path]["post"]["requestBody"]["content"][content]["schema"]["$ref"]
        return components[ref.rsplit("/", 1)[1]]  # type: ignore[no-any-return]

    predict = body("/api/predict/")
    assert set(predict["properties"]) == {"device", "predictor", "method", "architectures", "breakdown"}
    item = components[predict["properties"]["architectures"]["items"]["$ref"].rsplit("/", 1)[1]]
    # an nb201 item may add the space's other settings (devicelab.predict.batch.NB201_SETTINGS)
    assert set(item["properties"]) == {"name", "graph", "nb201", "onnx_base64", *NB201_SETTINGS}
    jobs = body("/api/jobs/")
    settings = components[jobs["properties"]["settings"]["allOf"][0]["$ref"].rsplit("/", 1)[1]]
    assert set(settings["properties"]) == {
        "backend",
        "threads",
        "cores",
        "precision",
        "warmup_runs",
        "runs",
        "cold_runs",
        "delegate",
        "cooldown_c",
        "cooldown_max_s",
        "on_noise",
        "noise_reruns",
        "breakdown",
    }
    assert set(settings["properties"]) == set(ProfileSettings.__dataclass_fields__)  # every key the worker reads
    assert settings["properties"]["threads"]["minimum"] == 1
    graph = body("/api/models/")
    assert {"schema_version", "inputs", "operators"} <= set(graph["required"])
    assert set(body("/api/predictors/")["properties"]) >= {"device", "method", "threads"}
    sweep = body("/api/fusion/sweeps/")
    assert set(sweep["properties"]) == {"device", "zoo", "models", "precision", "spec"}
    assert sweep["required"] == ["device"]
    spec = components[sweep["properties"]["spec"]["allOf"][0]["$ref"].rsplit("/", 1)[1]]
    assert set(spec["properties"]) == set(SweepSpec.__dataclass_fields__)  # every key the sweep reads
    assert spec["properties"]["rounding"]["uniqueItems"] is True and spec["properties"]["runs"]["minimum"] == 1
    plan = body("/api/fusion/plans/")
    assert set(plan["properties"]) == {"device", "zoo", "models", "precision", "options", "sweep"}
    options = components[plan["properties"]["options"]["allOf"][0]["$ref"].rsplit("/", 1)[1]]
    assert set(options["properties"]) == set(PlanOptions.__dataclass_fields__)
    sharing = body("/api/sharing/sweeps/")
    assert set(sharing["properties"]) == {"device", "spec", "time_budget_s"} and sharing["required"] == ["device"]
    sharing_spec = components[sharing["properties"]["spec"]["allOf"][0]["$ref"].rsplit("/", 1)[1]]
    assert set(sharing_spec["properties"]) == set(SharingSpec.__dataclass_fields__)  # every key the sweep reads
    tenants = sharing_spec["properties"]["tenants"]
    assert tenants["uniqueItems"] is True and tenants["items"]["maximum"] == MAX_TENANTS
    assert sharing_spec["properties"]["shapes"]["items"]["minItems"] == 3
    remote = body("/api/remote/runs/")
    assert set(remote["properties"]) == {"model", "device"} | set(
        RemoteSettings.__dataclass_fields__
    )  # every key the service reads
    assert sorted(remote["required"]) == ["device", "model", "profiles"]
    profiles = remote["properties"]["profiles"]
    assert profiles["uniqueItems"] is True and (profiles["minItems"], profiles["maxItems"]) == (1, MAX_PROFILES)
    assert remote["properties"]["requests"]["maximum"] == MAX_REQUESTS
    payload = components[remote["properties"]["payload"]["allOf"][0]["$ref"].rsplit("/", 1)[1]]
    assert set(payload["enum"]) == set(PAYLOADS)
    answers = schema["paths"]["/api/remote/runs/"]["post"]["responses"]
    assert set(answers) >= {"202", "400"}

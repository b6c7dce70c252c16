"""GET/POST /api/network-profiles/: the paper's presets and a team's recorded or custom profiles,
which selection then names like a preset; bad profiles are refused naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from devicelab.selection import PRESETS
from server.selection.models import StoredNetworkProfile

pytestmark = pytest.mark.django_db


def test_presets_are_listed_first_with_their_mean_transfer(api: Any) -> None:
    listed = api.get("/api/network-profiles/").json()["results"]
    assert [p["name"] for p in listed] == list(PRESETS)
    lte = next(p for p in listed if p["name"] == "lte")
    assert lte["stored_kind"] == "preset" and lte["transfer_330kb_ms"] == pytest.approx(
        PRESETS["lte"].transfer_ms(330_000)
    )


def test_a_recorded_profile_is_fitted_from_its_transfers_and_usable_by_name(api: Any, member: Any) -> None:
    # 20 ms of latency and 10 Mbit/s (0.0008 ms per byte), with some spread
    transfers = [
        [n, (20 + n * 0.0008) * f / 1e3] for n, f in ((10_000, 1.1), (100_000, 0.9), (500_000, 1.05), (1_000_000, 0.95))
    ]
    created = api.post("/api/network-profiles/", {"name": "office", "transfers": transfers}, format="json")
    assert created.status_code == 201, created.json()
    body = created.json()
    assert body["kind"] == "recorded" and body["ms_per_byte"] == pytest.approx(0.0008, rel=0.15) and body["cv"] > 0
    names = [p["name"] for p in api.get("/api/network-profiles/").json()["results"]]
    assert names[-1] == "office"
    custom = api.post(
        "/api/network-profiles/",
        {"name": "slow link", "latency_ms": 80, "throughput_mbps": 2, "cv": 0.3},
        format="json",
    )
    assert custom.status_code == 201 and custom.json()["stored_kind"] == "custom"
    assert StoredNetworkProfile.objects.filter(team=member.team).count() == 2


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "lte", "latency_ms": 5}, "name"),
        ({"name": "", "latency_ms": 5}, "name"),
        ({"name": "x", "latency_ms": -5}, "latency_ms"),
        ({"name": "x", "transfers": [[1000, 0.1]]}, "transfers"),
        ({"name": "x", "transfers": [[1000]]}, "transfers"),
        ({"name": "x", "transfers": "fast"}, "transfers"),
        ({"name": "x", "latency_ms": 5, "colour": 1}, "detail"),
    ],
)
def test_bad_profiles_are_refused(api: Any, body: dict[str, Any], field: str) -> None:
    response = api.post("/api/network-profiles/", body, format="json")
    assert response.status_code == 400 and field in response.json(), response.json()
    assert not StoredNetworkProfile.objects.exists()


def test_names_are_unique_per_team_and_private(api: Any, make_member: Any, client_for: Any) -> None:
    assert api.post("/api/network-profiles/", {"name": "home", "latency_ms": 9}, format="json").status_code == 201
    again = api.post("/api/network-profiles/", {"name": "home", "latency_ms": 9}, format="json")
    assert again.status_code == 400 and "already" in str(again.json()["name"])
    other = client_for(make_member())
    assert [p["name"] for p in other.get("/api/network-profiles/").json()["results"]] == list(PRESETS)
    assert other.post("/api/network-profiles/", {"name": "home", "latency_ms": 9}, format="json").status_code == 201

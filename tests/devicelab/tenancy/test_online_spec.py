"""The online-scheduling run's spec: declared once, its policies those of the online scheduler, a
workload that is a shape or a network, a network-only policy refused for a shape; its record
crosses to the server and back exactly."""

from __future__ import annotations

import json

import pytest

from devicelab.spec import SpecError
from devicelab.tenancy.online_policies import NETWORK_ONLY_POLICIES, POLICIES
from devicelab.tenancy.online_spec import NETWORK_ONLY, ONLINE_POLICIES, OnlineSpec


def test_the_spec_names_the_schedulers_policies_and_round_trips() -> None:
    assert ONLINE_POLICIES == tuple(POLICIES) and NETWORK_ONLY == tuple(NETWORK_ONLY_POLICIES)
    spec = OnlineSpec(workload="512x1x512", tenants=8, load=1.5, policies=("time_only", "space_time"))
    assert spec.is_sgemm and OnlineSpec.from_dict(json.loads(json.dumps(spec.as_dict()))) == spec
    assert not OnlineSpec(workload="mobilenet_v2", policies=("space_time_native",)).is_sgemm


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"tenants": 0}, "tenants must be between 1 and 4096"),
        ({"load": 0}, "load must be between"),
        ({"policies": ("fastest",)}, "policies"),
        ({"workload": "64x0x8"}, "neither|SGEMM shape MxNxK"),
        ({"workload": "64x32x128", "policies": ("space_time_native",)}, "network workloads only"),
    ],
)
def test_the_spec_refuses_nonsense(fields: dict, error: str) -> None:
    with pytest.raises((SpecError, ValueError), match=error):
        OnlineSpec(**fields)

"""A remote run as a job states it (``RemoteSpec``), the payloads a phone would send, and the run's
progress: reported after every request, in order, to 1.0; a report that raises stops the run and
its serving process."""

from __future__ import annotations

import psutil
import pytest

from devicelab.backends.base import DeviceInfo
from devicelab.graph.ir import Graph
from devicelab.remote.client import run_remote_scenario
from devicelab.remote.on_device import make_payload, payload_bytes, remote_on_device
from devicelab.remote.shaping import LinkShape
from devicelab.remote.spec import RemoteSpec
from devicelab.selection.network_profiles import PRESETS, NetworkProfile
from tests.devicelab.remote.tiny import INPUT_SIZE


def _spec(**fields: object) -> RemoteSpec:
    base: dict[str, object] = {
        "profiles": ("unshaped", "lte"),
        "network_profiles": {"unshaped": None, "lte": PRESETS["lte"]},
    }
    return RemoteSpec(**{**base, **fields})  # type: ignore[arg-type]


def test_a_spec_goes_through_json_whole_and_refuses_what_a_run_cannot_do() -> None:
    user = NetworkProfile.user("slow", latency_ms=20, throughput_mbps=8)
    spec = _spec(profiles=("slow", "unshaped"), network_profiles={"slow": user, "unshaped": None}, seed=5, cores=(0,))
    assert RemoteSpec.from_dict(spec.as_dict()) == spec
    assert spec.as_dict()["network_profiles"] == {"slow": user.as_dict(), "unshaped": None}
    refusals = [
        ({"profiles": (), "network_profiles": {}}, "profiles must have at least 1 item(s), got 0"),
        ({"profiles": ("lte", "lte")}, "profiles lists 'lte' twice"),
        ({"network_profiles": {"unshaped": None}}, "must hold exactly the profiles"),
        ({"network_profiles": {"unshaped": None, "lte": None}}, "only 'unshaped' goes without a network profile"),
        ({"requests": 0}, "requests must be between 1 and 500, got 0"),
        ({"warmup": -1}, "warmup must be between 0 and 100"),
        ({"payload": "gif"}, "payload 'gif' is not one of jpeg, png, tensor"),
        ({"threads": 0}, "threads must be between 1 and"),
        ({"cores": (-1,)}, "cores\\[0\\] must be between 0 and"),
    ]
    for fields, says in refusals:
        with pytest.raises(ValueError, match=says.replace("(", r"\(").replace(")", r"\)")):
            _spec(**fields)
    with pytest.raises(ValueError, match=r"unknown remote run key\(s\) \['speed'\]"):
        RemoteSpec.from_dict({**spec.as_dict(), "speed": 1})


def test_payloads_are_the_photo_or_its_preprocessed_tensor(graph: Graph) -> None:
    jpeg, png, tensor = (make_payload(kind, graph) for kind in ("jpeg", "png", "tensor"))
    assert (jpeg.content_type, png.content_type, tensor.content_type) == (
        "image/jpeg",
        "image/png",
        "application/octet-stream",
    )
    assert jpeg.body[:2] == b"\xff\xd8" and png.body[:4] == b"\x89PNG" and len(png.body) > len(jpeg.body)
    assert tensor.headers == {"X-Tensor-Shape": f"1,3,{INPUT_SIZE},{INPUT_SIZE}"}
    for p in (jpeg, png, tensor):
        assert payload_bytes(p.kind, graph) == len(p.body)


def test_progress_is_reported_after_every_request_and_a_raise_stops_the_run(graph: Graph) -> None:
    seen: list[tuple[float, str]] = []
    links = {"a": None, "b": LinkShape(50e6, 50e6, 1.0)}
    run_remote_scenario(graph, links, requests=3, warmup=1, progress=lambda f, m: seen.append((f, m)))
    assert seen[0] == (0.0, "model loaded") and len(seen) == 1 + 2 * (1 + 3)
    assert [f for f, _ in seen] == sorted(f for f, _ in seen) and seen[-1] == (1.0, "round 3/3")
    assert [m for _, m in seen[1:3]] == ["warm-up a 1/1", "warm-up b 1/1"]

    class Stop(Exception):
        pass

    def stop_at_round_two(fraction: float, message: str) -> None:
        if message == "round 2/3":
            raise Stop(message)

    before = {p.pid for p in psutil.Process().children(recursive=True)}
    with pytest.raises(Stop):
        run_remote_scenario(graph, links, requests=3, warmup=0, progress=stop_at_round_two)
    assert {p.pid for p in psutil.Process().children(recursive=True)} <= before  # the server was stopped


def test_a_run_on_device_reports_done_and_summarizes_every_profile(graph: Graph) -> None:
    seen: list[float] = []
    spec = _spec(requests=2, warmup=0, network_profiles={"unshaped": None, "lte": PRESETS["lte"]})
    info = DeviceInfo("cpu", "cpu:test", "Test CPU")
    out = remote_on_device(info, graph, spec.as_dict(), lambda f, m: seen.append(f))
    assert seen[-1] == 1.0 and out.spec == spec and out.payload == "jpeg"
    assert [s.profile for s in out.summaries] == ["unshaped", "lte"]
    lte = out.summaries[1]
    assert lte.requests == 2 and lte.upload.median > 50.0  # LTE's 50 ms latency, then the photo
    assert 0.5 < lte.network_share <= 1.0

"""``latencylab network record|list`` against a live server: real uploads and downloads over the
loopback network to the server's probe are timed, stored as the team's recorded profile, and that
profile then serves a selection; the probe refuses what it cannot send or take; the recording
plan is checked before any transfer."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import requests

from devicelab.remote.shaping import LinkShape
from devicelab.selection.network_profiles import NetworkProfile
from latencylab import network_recording as rec
from latencylab.cli import main
from server.selection.api.network_probe_views import MAX_PROBE_BYTES
from tests.cli.live_lab import run_cli as _run
from tests.cli.shaped_link import shaped_link
from tests.e2e.live_clients import wait_for_request_threads

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def lab(live_server: Any, make_member: Callable[..., Any]) -> Iterator[dict[str, Any]]:
    member = make_member()
    yield {"member": member, "url": live_server.url, "server": ["--url", live_server.url, "--token", member.key]}
    wait_for_request_threads()


def test_record_times_real_transfers_and_stores_a_profile_a_selection_can_use(
    lab: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    # through a relay shaped like a link of 1 MB/s up, 2 MB/s down and 15 ms each way
    host, port = lab["url"].removeprefix("http://").split(":")
    link = LinkShape(1e6, 2e6, 15.0)
    with shaped_link((host, int(port)), link) as url:
        server = ["--url", url, "--token", lab["member"].key]
        argv = ["network", "record", "slow-link", "--sizes", "16K,1M", "--rounds", "2", *server]
        rc, out, err = _run(argv, capsys)
    assert rc == 0, err
    assert "stored 'slow-link'" in out and "transfers" in err
    table = [line.split() for line in out.splitlines()[2:6]]
    assert [(r[0], r[1], r[2]) for r in table] == [
        ("download", "16384", "2"),
        ("download", "1048576", "2"),
        ("upload", "16384", "2"),
        ("upload", "1048576", "2"),
    ]
    up, down = (float(re.search(rf"{d} ([\d.]+) Mbit/s", out).group(1)) for d in ("upload", "download"))  # type: ignore[union-attr]
    assert 8 * 0.7 < up < 8 * 1.35 and 16 * 0.7 < down < 16 * 1.35  # each direction's own rate, recovered
    rc, out, _ = _run(["network", "list", "--json", *lab["server"]], capsys)
    stored = {p["name"]: p for p in json.loads(out)}["slow-link"]
    assert stored["stored_kind"] == "recorded" and stored["kind"] == "recorded"
    assert len(stored["transfers"]) == 8 and sorted({b for b, _ in stored["transfers"]}) == [16384, 1048576]
    assert "4 uploads and 4 downloads of 16 KiB, 1 MiB" in stored["source"] and url in stored["source"]
    # the line over both directions: a request's fixed cost is at least the two one-way delays, and
    # its rate lies between the two links'
    assert stored["latency_ms"] >= 25 and 8 * 0.7 < stored["throughput_mbps"] < 16 * 1.35
    profile = NetworkProfile.from_dict(stored)
    assert profile.transfer_ms(2 * 1024 * 1024) > 3 * profile.transfer_ms(16 * 1024)
    rc, out, _ = _run(["network", "list", *lab["server"]], capsys)
    assert rc == 0 and any(line.split()[:2] == ["slow-link", "recorded"] for line in out.splitlines())
    # a second recording under the same name is refused, not merged
    rc, _, err = _run(["network", "record", "slow-link", "--sizes", "1K,8K", "--rounds", "1", *lab["server"]], capsys)
    assert (
        rc == 2 and err == "latencylab: error: network profile 'slow-link' is your team's already; pick another name\n"
    )


def test_a_dry_run_stores_nothing_and_a_bad_plan_sends_nothing(
    lab: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from server.selection.models import StoredNetworkProfile

    rc, out, err = _run(
        ["network", "record", "trial", "--sizes", "1K,8K", "--rounds", "1", "--dry-run", "--json", *lab["server"]],
        capsys,
    )
    body = json.loads(out)
    assert rc == 0 and body["profile"] is None and len(body["transfers"]) == 4
    assert {t["direction"] for t in body["transfers"]} == {"upload", "download"}
    assert not StoredNetworkProfile.objects.exists()
    rc, _, err = _run(["network", "record", "one", "--sizes", "64K", *lab["server"]], capsys)
    assert rc == 2 and "at least two different sizes" in err
    with pytest.raises(SystemExit) as too_big:
        main(["network", "record", "big", "--sizes", "1K,9M", *lab["server"]])
    assert too_big.value.code == 2
    assert "'9M' is 9437184 bytes; a probe transfer is 1 to 8388608 bytes" in capsys.readouterr().err
    rc, _, err = _run(["network", "record", "lte", "--sizes", "1K,8K", "--rounds", "1", *lab["server"]], capsys)
    assert rc == 2 and err == "latencylab: error: network profile 'lte' is a built-in preset; pick another name\n"
    assert not StoredNetworkProfile.objects.exists()


def test_the_probe_sends_and_takes_exact_sizes_and_refuses_the_rest(lab: dict[str, Any]) -> None:
    url = f"{lab['url']}/api/network-probe/"
    auth = {"Authorization": f"Token {lab['member'].key}"}
    got = requests.get(url, params={"bytes": 100_000}, headers=auth, timeout=30)
    assert got.status_code == 200 and len(got.content) == 100_000
    assert got.headers["Cache-Control"] == "no-store" and got.headers.get("Content-Encoding") == "identity"
    sent = requests.post(url, data=b"x" * 70_000, headers=auth, timeout=30)
    assert sent.status_code == 200 and sent.json() == {"bytes": 70_000}
    for bad, why in (({}, "give the size"), ({"bytes": "0"}, "between 1 and"), ({"bytes": "ten"}, "whole number")):
        r = requests.get(url, params=bad, headers=auth, timeout=30)
        assert r.status_code == 400 and why in str(r.json()["bytes"])
    r = requests.post(url, data=b"x" * (MAX_PROBE_BYTES + 1), headers=auth, timeout=60)
    assert r.status_code == 400 and "at most" in str(r.json()["bytes"])
    assert requests.get(url, params={"bytes": 10}, timeout=30).status_code in (401, 403)


def test_rounds_shuffle_sizes_and_drop_the_first_transfer() -> None:
    calls: list[tuple[str, int]] = []

    def transfer(direction: str, n: int) -> float:
        calls.append((direction, n))
        return 0.001 + n / 1e6

    done: list[tuple[int, int]] = []
    out = rec.record(transfer, (1000, 2000, 3000), 4, seed=7, progress=lambda d, t: done.append((d, t)))
    assert calls[0] == ("upload", rec.WARMUP_BYTES) and len(calls) == 1 + 24 and len(out) == 24
    rounds = [[(t.direction, t.nbytes) for t in out[i : i + 6]] for i in range(0, 24, 6)]
    assert all(sorted(r) == sorted(rounds[0]) for r in rounds) and len({tuple(r) for r in rounds}) > 1
    assert done[-1] == (24, 24)
    assert rec.throughput_mbps(out, rec.UPLOAD) == pytest.approx(8.0)
    assert rec.parse_size("1.5M") == 1572864 and rec.parse_size("512kib") == 524288
    with pytest.raises(ValueError, match="at least two different sizes"):
        rec.record(transfer, (1000, 1000))
    with pytest.raises(ValueError, match="rounds must be between 1 and 50"):
        rec.record(transfer, (1000, 2000), 0)

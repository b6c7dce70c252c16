"""Network profiles: the paper's presets, profiles recorded from real transfers (here: loopback TCP),
user-defined ones; per-request transfer times, seeded sampling and the JSON round trip."""

from __future__ import annotations

import socket
import threading
import time

import numpy as np
import pytest

from devicelab.selection import PRESETS, NetworkProfile
from devicelab.selection.network_profiles import PAPER_REQUEST_BYTES, PAPER_RESPONSE_BYTES


def _round_trip(p: NetworkProfile) -> float:
    return p.transfer_ms(PAPER_REQUEST_BYTES) + p.transfer_ms(PAPER_RESPONSE_BYTES)


def test_presets_are_the_papers_conditions():
    assert set(PRESETS) == {"campus_wifi", "lte", "cellular_hotspot", "prototype_wifi"}
    # Section 5.2.1: 63 ms for the prototype's 330 KB requests; figure 10: hotspot ~ 2x WiFi, 400 ms.
    assert _round_trip(PRESETS["prototype_wifi"]) == pytest.approx(63.0)
    assert _round_trip(PRESETS["cellular_hotspot"]) == pytest.approx(400.0)
    assert _round_trip(PRESETS["cellular_hotspot"]) / _round_trip(PRESETS["campus_wifi"]) == pytest.approx(2.0)
    assert _round_trip(PRESETS["campus_wifi"]) < _round_trip(PRESETS["lte"]) < _round_trip(PRESETS["cellular_hotspot"])
    for p in PRESETS.values():
        assert p.kind == "preset" and "seed 002" in p.source and "assumption" in p.source
        # The request's upload dominates: T_input >= T_output, as section 5 expects.
        assert p.transfer_ms(PAPER_REQUEST_BYTES) > p.transfer_ms(PAPER_RESPONSE_BYTES)
    assert NetworkProfile.preset("lte") is PRESETS["lte"]


def test_transfer_time_is_the_line_and_grows_with_size():
    p = NetworkProfile.user("office", latency_ms=5.0, throughput_mbps=8.0)  # 8 Mbit/s = 1000 bytes/ms
    assert p.ms_per_byte == pytest.approx(0.001) and p.throughput_mbps == pytest.approx(8.0)
    assert p.transfer_ms(0) == 5.0 and p.transfer_ms(100_000) == pytest.approx(105.0)
    unlimited = NetworkProfile.user("lan", latency_ms=2.0)
    assert unlimited.throughput_mbps is None and unlimited.transfer_ms(10**9) == 2.0


def test_sampling_is_seeded_and_centred_on_the_mean():
    p = PRESETS["lte"]
    a = p.sample_transfer_ms(PAPER_REQUEST_BYTES, 50_000, rng=11)
    assert np.array_equal(a, p.sample_transfer_ms(PAPER_REQUEST_BYTES, 50_000, rng=11))
    assert not np.array_equal(a, p.sample_transfer_ms(PAPER_REQUEST_BYTES, 50_000, rng=12))
    assert a.mean() == pytest.approx(p.transfer_ms(PAPER_REQUEST_BYTES), rel=0.01)
    assert a.std() / a.mean() == pytest.approx(p.cv, rel=0.05)
    assert np.all(a > 0)


def test_a_requests_two_transfers_share_the_network_moment():
    up, down = PRESETS["campus_wifi"].sample_exchange_ms(PAPER_REQUEST_BYTES, PAPER_RESPONSE_BYTES, 1000, rng=3)
    ratio = up / down
    assert np.allclose(ratio, ratio[0]) and ratio[0] > 1
    constant = NetworkProfile.user("steady", latency_ms=10.0, throughput_mbps=80.0, cv=0.0)
    assert np.all(constant.sample_transfer_ms(1000, 10, rng=0) == constant.transfer_ms(1000))


def _record_loopback(sizes: list[int], repeats: int) -> list[tuple[int, float]]:
    """Real transfers over loopback TCP: send n bytes, wait for the 1-byte acknowledgement."""
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            while True:
                header = conn.recv(8, socket.MSG_WAITALL)
                if len(header) < 8:
                    return
                remaining = int.from_bytes(header, "big")
                while remaining:
                    remaining -= len(conn.recv(min(remaining, 1 << 20)))
                conn.sendall(b"k")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    out = []
    with socket.create_connection(("127.0.0.1", port)) as client:
        client.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(repeats):
            for n in sizes:
                payload = b"x" * n
                t0 = time.perf_counter()
                client.sendall(n.to_bytes(8, "big") + payload)
                assert client.recv(1) == b"k"
                out.append((n, time.perf_counter() - t0))
    thread.join(timeout=5)
    server.close()
    return out


def test_profile_recorded_from_real_loopback_transfers():
    transfers = _record_loopback([1_000, 200_000, 2_000_000], repeats=8)
    p = NetworkProfile.from_transfers("loopback", transfers)
    assert p.kind == "recorded" and len(p.transfers) == 24
    assert p.latency_ms >= 0 and p.ms_per_byte >= 0
    # The line passes through the recorded means of the sizes within their spread.
    big = [s * 1e3 for n, s in transfers if n == 2_000_000]
    assert min(big) * 0.5 <= p.transfer_ms(2_000_000) <= max(big) * 2
    # Sampling replays the recorded factors: every draw is the line times one recorded ratio.
    draws = p.sample_factor(500, rng=0)
    assert draws.mean() == pytest.approx(1.0, abs=0.5) and np.all(draws > 0)
    assert set(np.round(draws, 12)) <= set(np.round(p._ratios(), 12))
    assert NetworkProfile.from_json(p.to_json()) == p


def test_fit_recovers_a_known_line_and_its_spread():
    rng = np.random.default_rng(4)
    sizes = np.repeat([10_000, 100_000, 400_000, 1_000_000], 50)
    factor = rng.lognormal(-0.02, 0.2, size=sizes.size)
    seconds = (20.0 + sizes * 0.0005) * factor / 1e3  # 20 ms + 16 Mbit/s
    p = NetworkProfile.from_transfers("synthetic", list(zip(sizes.tolist(), seconds.tolist(), strict=True)))
    assert p.latency_ms == pytest.approx(20.0 * factor.mean(), rel=0.25)
    assert p.ms_per_byte == pytest.approx(0.0005 * factor.mean(), rel=0.1)
    assert p.cv == pytest.approx(0.2, abs=0.05)


def test_fit_edge_cases():
    one_size = NetworkProfile.from_transfers("one", [(1000, 0.010), (1000, 0.012)])
    assert one_size.latency_ms == 0 and one_size.transfer_ms(1000) == pytest.approx(11.0)
    pings = NetworkProfile.from_transfers("ping", [(0, 0.002), (0, 0.004)])
    assert pings.ms_per_byte == 0 and pings.latency_ms == pytest.approx(3.0)
    flat = NetworkProfile.from_transfers("flat", [(1000, 0.010), (100_000, 0.009), (50_000, 0.011)])
    assert flat.ms_per_byte == 0 and flat.latency_ms == pytest.approx(10.0)
    # A fit with a negative intercept is refit through the origin.
    steep = NetworkProfile.from_transfers("steep", [(1000, 0.0001), (100_000, 0.100), (200_000, 0.200)])
    assert steep.latency_ms == 0 and steep.ms_per_byte > 0


@pytest.mark.parametrize("name", ["campus_wifi", "prototype_wifi"])
def test_json_round_trip_of_presets_and_user_profiles(name):
    assert NetworkProfile.from_json(PRESETS[name].to_json()) == PRESETS[name]
    user = NetworkProfile.user("mine", latency_ms=12.5, throughput_mbps=40, cv=0.15)
    assert NetworkProfile.from_dict(user.as_dict()) == user


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: NetworkProfile.preset("5g"), "no network preset '5g'"),
        (lambda: NetworkProfile("x", -1.0, 0.001), "latency_ms of 'x'"),
        (lambda: NetworkProfile("x", 0.0, 0.0), "0 ms"),
        (lambda: NetworkProfile("x", 1.0, 0.0, cv=-0.1), "cv of 'x'"),
        (lambda: NetworkProfile("x", 1.0, 0.0, kind="guess"), "kind of profile 'x'"),
        (lambda: NetworkProfile("", 1.0, 0.0), "non-empty name"),
        (lambda: NetworkProfile.user("x", latency_ms=1.0, throughput_mbps=0), "throughput_mbps of 'x'"),
        (lambda: NetworkProfile.from_transfers("x", [(100, 0.1)]), "at least 2 transfers"),
        (lambda: NetworkProfile.from_transfers("x", [(-5, 0.1), (10, 0.1)]), "bytes of a transfer of 'x'"),
        (lambda: NetworkProfile.from_transfers("x", [(5, float("nan")), (10, 0.1)]), "seconds of 'x'"),
        (lambda: NetworkProfile("x", 1.0, 0.0, transfers=((1, 0.1),)), "only a recorded profile"),
        (lambda: NetworkProfile.from_json("{"), "does not parse"),
        (lambda: NetworkProfile.from_dict({"name": "x", "latency_ms": 1}), "ms_per_byte"),
        (lambda: NetworkProfile.from_dict({"name": "x", "latency_ms": 1, "ms_per_byte": 0, "transfers": [1]}), "pairs"),
        (lambda: PRESETS["lte"].transfer_ms(-1), "nbytes"),
    ],
)
def test_bad_inputs_raise_naming_what_is_wrong(build, message):
    with pytest.raises(ValueError, match=message):
        build()

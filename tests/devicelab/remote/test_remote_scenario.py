"""A remote scenario end to end: a served model measured over a fast and a slow link, its time
split into upload, server and download, the slow link's upload as long as the link says."""

from __future__ import annotations

import json

import numpy as np
import pytest

from devicelab.graph.ir import Graph
from devicelab.remote.client import RemoteError, RemoteScenario, measure_remote, run_remote_scenario, upload_photo
from devicelab.remote.endpoint import InferenceEndpoint
from devicelab.remote.shaping import LinkShape

REQUESTS = 5
FAST = LinkShape(100e6, 100e6, 1.0)
SLOW = LinkShape(2e6, 1e6, 25.0)  # a 163 kB photo up: 25 + 82 ms; a 0.6 kB answer down: 25.6 ms


@pytest.fixture(scope="module")
def scenario(graph: Graph) -> RemoteScenario:
    """The tiny classifier served and measured over both links, the lab's photo as the payload."""
    return run_remote_scenario(graph, {"fast": FAST, "slow": SLOW}, requests=REQUESTS, warmup=1)


def test_every_link_is_measured_as_often_and_split_whole(scenario: RemoteScenario) -> None:
    assert list(scenario.results) == ["fast", "slow"]
    assert 100_000 < scenario.payload_bytes < 1_000_000  # the paper's uploads are 110 to 330 kB
    assert scenario.load_ms > 0
    for name, link in (("fast", FAST), ("slow", SLOW)):
        m = scenario.results[name]
        assert m.upload.n == m.server.n == m.download.n == m.remainder.n == m.e2e.n == REQUESTS
        for r in m.requests:
            assert r.shape == link
            assert r.upload_bytes > scenario.payload_bytes  # the request's head rides along
            assert r.e2e_ms == pytest.approx(r.upload_ms + r.server_ms + r.download_ms + r.remainder_ms)
            # each part is timed on its own: the download holds the link's delay, the remainder
            # only what no clock attributes (the server's reading and hand-off, a few ms at most)
            assert r.download_ms >= link.one_way_delay_ms
            assert abs(r.remainder_ms) < 15.0
            assert r.server_ms >= r.decode_ms + r.resize_crop_ms + r.normalize_ms + r.compute_ms
        assert m.e2e.median >= m.upload.median


def test_the_slow_upload_takes_bytes_over_rate_plus_delay(scenario: RemoteScenario) -> None:
    fast, slow = scenario.results["fast"], scenario.results["slow"]
    nbytes = slow.requests[0].upload_bytes
    expected = SLOW.upload_ms(nbytes)  # about 107 ms
    assert slow.upload.min >= 0.99 * expected  # the pacing never beats the link
    assert slow.upload.median <= 1.3 * expected + 15.0  # generous: a loaded machine only adds
    assert slow.upload.min > 5 * fast.upload.max
    # the answer is small: its time down is about the delay, more than the fast link's
    assert slow.download.median <= 1.3 * SLOW.download_ms(slow.requests[0].download_bytes) + 15.0
    assert slow.download.median > fast.download.median + 20.0


def test_the_server_does_the_same_work_on_both_links(scenario: RemoteScenario) -> None:
    fast, slow = scenario.results["fast"], scenario.results["slow"]
    assert fast.top5 == slow.top5  # same photo, same model
    assert [r.decode_ms > 0 for r in fast.requests + slow.requests] == [True] * (2 * REQUESTS)
    doc = json.loads(json.dumps(scenario.as_dict()))
    assert doc["results"]["slow"]["requests"][0]["shape"]["one_way_delay_ms"] == SLOW.one_way_delay_ms
    assert set(doc["results"]["fast"]["upload"]) >= {"median", "mean", "std", "p90"}


def test_measure_remote_raises_the_servers_reason(endpoint: InferenceEndpoint) -> None:
    with pytest.raises(RemoteError, match="HTTP 400: cannot decode the image/jpeg body"):
        measure_remote(endpoint.url, b"not a photo", "image/jpeg", FAST, 2, 0, np.random.default_rng(0))
    with pytest.raises(ValueError, match="requests must be at least 1"):
        measure_remote(endpoint.url, b"", "image/jpeg", None, 0, 0, np.random.default_rng(0))


def test_measure_remote_unshaped(endpoint: InferenceEndpoint) -> None:
    photo, content_type = upload_photo(320, 240)
    m = measure_remote(endpoint.url, photo, content_type, None, 3, 1, np.random.default_rng(0))
    assert m.e2e.n == 3 and m.warmup == 1
    assert all(r.shape is None for r in m.requests)
    assert m.upload.median < SLOW.one_way_delay_ms  # no delay added, no rate limit

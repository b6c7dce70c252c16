"""The HTTP inference endpoint: answers against onnxruntime run directly, errors for malformed
input, and a shutdown that frees its port."""

from __future__ import annotations

import http.client
import io
import json
import socket
from typing import Any

import numpy as np
import onnxruntime as ort
import pytest
from PIL import Image

from devicelab.graph.ir import Graph
from devicelab.graph.onnx import graph_to_onnx_bytes
from devicelab.measure import image_pipeline
from devicelab.remote.client import RemoteError, request_once, tensor_payload, upload_photo
from devicelab.remote.endpoint import EndpointError, InferenceEndpoint, serve_model
from tests.devicelab.remote.tiny import CLASSES, INPUT_SIZE, tiny_classifier


def call(
    endpoint: InferenceEndpoint, method: str, path: str, body: bytes = b"", headers: dict[str, str] | None = None
) -> tuple[int, dict[str, Any]]:
    """One plain request; (status, JSON answer)."""
    conn = http.client.HTTPConnection("127.0.0.1", endpoint.port, timeout=30)
    try:
        conn.request(method, path, body=body if method == "POST" else None, headers=headers or {})
        response = conn.getresponse()
        return response.status, json.loads(response.read())
    finally:
        conn.close()


def reference_top5(graph: Graph, x: np.ndarray) -> list[tuple[int, float]]:
    """Top-5 of the graph's output, run here in a plain onnxruntime session (the seed the lab uses)."""
    session = ort.InferenceSession(graph_to_onnx_bytes(graph, seed=0), providers=["CPUExecutionProvider"])
    (out,) = session.run(None, {graph.inputs[0]: x})
    probs = np.asarray(out, dtype=np.float64).reshape(-1)
    if graph.name == "tiny_logits":
        probs = np.exp(probs - probs.max()) / np.exp(probs - probs.max()).sum()
    order = np.argsort(-probs, kind="stable")[:5]
    return [(int(i), float(probs[i])) for i in order]


def test_health_describes_the_loaded_model(endpoint: InferenceEndpoint) -> None:
    status, answer = call(endpoint, "GET", "/health")
    assert status == 200
    assert answer["status"] == "ok"
    assert answer["model"] == "tiny_classifier"
    assert answer["input"]["shape"] == [1, 3, INPUT_SIZE, INPUT_SIZE]
    assert answer["takes_images"] is True
    assert answer["load_ms"] > 0
    assert answer["runtime"].startswith("onnxruntime ")


@pytest.mark.parametrize("softmax", [True, False])
def test_a_tensor_is_answered_as_onnxruntime_answers_it(softmax: bool) -> None:
    graph = tiny_classifier(softmax=softmax)
    x = np.random.default_rng(3).standard_normal((1, 3, INPUT_SIZE, INPUT_SIZE)).astype(np.float32)
    body, content_type, headers = tensor_payload(x)
    with serve_model(graph) as endpoint:
        timing, top5 = request_once(endpoint.url, body, content_type, None, headers)
    expected = reference_top5(graph, x)
    assert [i for i, _ in top5] == [i for i, _ in expected]
    assert [p for _, p in top5] == pytest.approx([p for _, p in expected], rel=1e-4)
    assert all(a >= b for (_, a), (_, b) in zip(top5, top5[1:]))  # most probable first
    assert timing.compute_ms > 0
    assert timing.resize_crop_ms == timing.normalize_ms == 0.0  # a tensor is taken as it is
    assert timing.server_ms >= timing.decode_ms + timing.compute_ms + timing.postprocess_ms


def test_an_image_goes_through_the_lab_pipeline_on_the_server(endpoint: InferenceEndpoint, graph: Graph) -> None:
    photo, content_type = upload_photo(160, 120, "png")
    timing, top5 = request_once(endpoint.url, photo, content_type, None)
    # the client pipeline of the time breakdown (decode, resize + centre crop, normalize)
    image = image_pipeline.resize_crop(image_pipeline.decode(photo), INPUT_SIZE, INPUT_SIZE)
    expected = reference_top5(graph, image_pipeline.normalize([image]))
    assert [i for i, _ in top5] == [i for i, _ in expected]
    assert [p for _, p in top5] == pytest.approx([p for _, p in expected], rel=1e-4)
    assert timing.decode_ms > 0 and timing.resize_crop_ms > 0 and timing.normalize_ms > 0


def test_a_jpeg_is_answered_with_five_classes(endpoint: InferenceEndpoint) -> None:
    photo, content_type = upload_photo(320, 240)
    _, top5 = request_once(endpoint.url, photo, content_type, None)
    assert len(top5) == 5
    assert all(0 <= i < CLASSES and 0 < p < 1 for i, p in top5)
    assert len({i for i, _ in top5}) == 5


def test_a_malformed_image_is_a_400_saying_why(endpoint: InferenceEndpoint) -> None:
    status, answer = call(endpoint, "POST", "/infer", b"\xff\xd8 not really a jpeg", {"Content-Type": "image/jpeg"})
    assert status == 400
    assert "cannot decode the image/jpeg body" in answer["error"]
    with pytest.raises(RemoteError, match="cannot decode") as raised:
        request_once(endpoint.url, b"GIF89a garbage", "image/png", None)
    assert raised.value.status == 400


def test_an_image_of_another_type_than_declared_is_a_400(endpoint: InferenceEndpoint) -> None:
    png = io.BytesIO()
    Image.new("RGB", (8, 8)).save(png, format="PNG")
    status, answer = call(endpoint, "POST", "/infer", png.getvalue(), {"Content-Type": "image/jpeg"})
    assert status == 400
    assert answer["error"] == "the body is a PNG image but Content-Type says image/jpeg"


def test_a_tensor_of_the_wrong_shape_is_a_400_naming_both_shapes(endpoint: InferenceEndpoint) -> None:
    body, content_type, headers = tensor_payload(np.zeros((1, 3, 32, 32), dtype=np.float32))
    with pytest.raises(RemoteError) as raised:
        request_once(endpoint.url, body, content_type, None, headers)
    assert raised.value.status == 400
    assert "tensor shape (1, 3, 32, 32) does not match" in raised.value.reason
    assert f"(1, 3, {INPUT_SIZE}, {INPUT_SIZE})" in raised.value.reason


@pytest.mark.parametrize(
    ("headers", "body", "status", "message"),
    [
        ({"Content-Type": "application/octet-stream"}, b"\0" * 16, 400, "needs its shape in X-Tensor-Shape"),
        (
            {"Content-Type": "application/octet-stream", "X-Tensor-Shape": "1,3,x,64"},
            b"\0" * 16,
            400,
            "is not comma-separated integers",
        ),
        (
            {"Content-Type": "application/octet-stream", "X-Tensor-Shape": f"1,3,{INPUT_SIZE},{INPUT_SIZE}"},
            b"\0" * 16,
            400,
            "the body has 16",
        ),
        ({"Content-Type": "text/plain"}, b"hello", 415, "Content-Type 'text/plain' is not one of"),
        ({"Content-Type": "image/png", "X-Shape-Downlink": "fast"}, b"x", 400, "must be numbers"),
        ({"Content-Type": "image/png", "X-Shape-Delay-Ms": "-5"}, b"x", 400, "X-Shape-Delay-Ms must be between"),
    ],
)
def test_malformed_requests_are_4xx_saying_what_was_wrong(
    endpoint: InferenceEndpoint, headers: dict[str, str], body: bytes, status: int, message: str
) -> None:
    got, answer = call(endpoint, "POST", "/infer", body, headers)
    assert got == status
    assert message in answer["error"]
    assert answer["status"] == status


def test_unknown_paths_are_404(endpoint: InferenceEndpoint) -> None:
    assert call(endpoint, "GET", "/infer")[0] == 404
    assert call(endpoint, "POST", "/health", b"{}")[0] == 404


def test_a_graph_that_takes_no_image_refuses_images() -> None:
    from devicelab.graph.builder import GraphBuilder

    b = GraphBuilder("vector_net", (1, 16))
    with serve_model(b.build(b.fc(b.input, 8))) as served:
        status, answer = call(served, "POST", "/infer", b"\x89PNG", {"Content-Type": "image/png"})
    assert status == 415
    assert "takes no image" in answer["error"] and "not an N x 3 x H x W image batch" in answer["error"]


def test_shutdown_frees_the_port(graph: Graph) -> None:
    endpoint = InferenceEndpoint(graph).start()
    port = endpoint.port
    assert call(endpoint, "GET", "/health")[0] == 200
    endpoint.stop()
    assert endpoint.returncode == 0  # it shut down when asked, not killed
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as again:
        again.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as http.server's servers do
        again.bind(("127.0.0.1", port))  # raises if the endpoint still held the port
    endpoint.stop()  # stopping twice is harmless
    with pytest.raises(RuntimeError, match="not running"):
        _ = endpoint.url


def test_a_model_that_cannot_load_is_an_error_with_its_reason() -> None:
    from devicelab.graph.builder import GraphBuilder

    b = GraphBuilder("int_net", (1, 4), dtype="int64")
    with pytest.raises(EndpointError, match="int_net.*exited.*takes int64; serving takes float32"):
        InferenceEndpoint(b.build(b.relu(b.input))).start()

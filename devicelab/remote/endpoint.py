"""A small HTTP inference server: one model, loaded once, served on 127.0.0.1 for a remote run.

The worker starts it for a job (``serve_model``), in a process of its own, and a client measures
it (``devicelab.remote.client``). The model is the CPU backend's: the graph exported to ONNX with the backend's seeded
weights and run in an onnxruntime session made with the backend's options, so a remote run's
server compute is the same computation as a profile's warm run.

``POST /infer`` takes the raw input, as a phone would send it:

* an image (``Content-Type: image/jpeg`` or ``image/png``): decoded, resized and centre-cropped
  to the model's input and normalized with ImageNet's mean and std on the server, by the lab's
  client pipeline (``devicelab.measure.image_pipeline``), so its stages cost here what they cost
  in a profile's time breakdown;
* a tensor (``Content-Type: application/octet-stream``) of float32 in C order, its shape in
  ``X-Tensor-Shape: 1,3,224,224``, which must be the model's input shape.

It answers JSON: the top-5 classes (``index``, ``probability``, after a softmax unless the graph
ends with one) and the server's own times (ms): ``decode_ms``, ``resize_crop_ms``,
``normalize_ms``, ``compute_ms`` (the session's run), ``postprocess_ms`` and ``server_ms``, the
whole from the request's last byte read to the response ready to send. The response is paced as the request's ``X-Shape-Downlink``
(bytes/s) and ``X-Shape-Delay-Ms`` ask (``devicelab.remote.shaping``); its ``X-Delay-Waited-Ms``
says how long the server waited the delay before its first byte, so that the client can time the
download itself. ``GET /health`` answers the
model and its load time. Malformed input gets a 4xx with a JSON ``error`` saying what was wrong.
"""

from __future__ import annotations

import http.server
import io
import json
import math
import os
import select
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http import HTTPStatus
from typing import IO, Any

import numpy as np

from devicelab.backends.profile_settings import ProfileSettings
from devicelab.graph.ir import Graph
from devicelab.measure import image_pipeline
from devicelab.measure.breakdown import ImageInput, NotAnImageModel, image_input
from devicelab.remote.shaping import MAX_DELAY_MS, MIN_RATE_BYTES_PER_S, send_shaped, sleep_ms

HOST = "127.0.0.1"
MAX_BODY_BYTES = 64 * 1024 * 1024
IMAGE_TYPES = {"image/jpeg": "JPEG", "image/png": "PNG"}
TENSOR_TYPE = "application/octet-stream"
SHAPE_HEADER = "X-Tensor-Shape"
DOWNLINK_HEADER = "X-Shape-Downlink"  # bytes/s for the response; absent: not paced
DELAY_HEADER = "X-Shape-Delay-Ms"  # one-way delay before the response
WAITED_HEADER = "X-Delay-Waited-Ms"  # in the response: the delay the server waited before its first byte
POLL_INTERVAL_S = 0.05  # how often serve_forever looks for a shutdown request


class InputError(ValueError):
    """A request the server refuses: ``status`` is the HTTP status, the message says why."""

    def __init__(self, status: HTTPStatus, message: str) -> None:
        super().__init__(message)
        self.status = status


def _ms(t0: int, t1: int) -> float:
    return (t1 - t0) / 1e6


@dataclass(frozen=True)
class Prediction:
    """One inference's answer and the server's own times (ms), by the client pipeline's stage names."""

    top: list[tuple[int, float]]  # (class index, probability), most probable first
    decode_ms: float
    resize_crop_ms: float  # 0 for a tensor, taken as it is
    normalize_ms: float  # 0 for a tensor
    compute_ms: float
    postprocess_ms: float

    def as_dict(self) -> dict[str, Any]:
        """The JSON body's fields (``server_ms`` is added by the server, which times the whole)."""
        return {
            "top5": [{"index": i, "probability": p} for i, p in self.top],
            "decode_ms": self.decode_ms,
            "resize_crop_ms": self.resize_crop_ms,
            "normalize_ms": self.normalize_ms,
            "compute_ms": self.compute_ms,
            "postprocess_ms": self.postprocess_ms,
        }


class LoadedModel:
    """A graph exported and loaded once in an onnxruntime session, as the CPU backend makes them;
    images go through the lab's client pipeline (``devicelab.measure.image_pipeline``)."""

    def __init__(self, graph: Graph, settings: ProfileSettings | None = None) -> None:
        from devicelab.backends import cpu  # onnxruntime: imported where a model is loaded, not by clients
        from devicelab.graph.onnx import graph_to_onnx_bytes

        self.graph = graph
        self.settings = settings or ProfileSettings()
        if len(graph.inputs) != 1 or not graph.outputs:
            raise ValueError(f"graph {graph.name!r} has {len(graph.inputs)} inputs; serving needs one and an output")
        tensor = graph.tensors[graph.inputs[0]]
        if tensor.dtype != "float32":
            raise ValueError(f"graph {graph.name!r} takes {tensor.dtype}; serving takes float32 inputs")
        self.input_name = tensor.name
        self.input_shape = tuple(int(d) for d in tensor.shape)
        try:
            self.image: ImageInput | None = image_input(graph)
            self.not_an_image_model = ""
        except NotAnImageModel as e:
            self.image, self.not_an_image_model = None, str(e)
        producer = graph.producers().get(graph.outputs[0])
        self.ends_with_softmax = producer is not None and producer.type == "softmax"
        t0 = time.perf_counter_ns()
        model = graph_to_onnx_bytes(graph, seed=cpu.WEIGHT_SEED)
        # The backend's own options and session factory (threads, sequential execution, full
        # graph optimization), pinned as the backend pins: a served model runs as a profiled one.
        with cpu.pinned(self.settings.cores):
            self.session = cpu._new_session(model, cpu._session_options(self.settings), graph)
        self.load_ms = _ms(t0, time.perf_counter_ns())
        self.runtime = cpu.runtime_version()
        self._pinned = cpu.pinned

    def decode_image(self, body: bytes, content_type: str) -> tuple[np.ndarray, float, float, float]:
        """The model's input from an encoded image, and the decode, resize + crop and normalize times (ms)."""
        from PIL import Image, UnidentifiedImageError

        if self.image is None:
            raise InputError(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE,
                f"model {self.graph.name!r} takes no image ({self.not_an_image_model}); send {TENSOR_TYPE}",
            )
        t0 = time.perf_counter_ns()
        try:
            found = Image.open(io.BytesIO(body)).format  # the header only: refuse a mislabelled body first
            if found != IMAGE_TYPES[content_type]:
                raise InputError(
                    HTTPStatus.BAD_REQUEST, f"the body is a {found} image but Content-Type says {content_type}"
                )
            image = image_pipeline.decode(body)
        except (UnidentifiedImageError, OSError, Image.DecompressionBombError, SyntaxError) as e:
            raise InputError(
                HTTPStatus.BAD_REQUEST, f"cannot decode the {content_type} body ({len(body)} bytes): {e}"
            ) from e
        t1 = time.perf_counter_ns()
        cropped = image_pipeline.resize_crop(image, self.image.height, self.image.width)
        t2 = time.perf_counter_ns()
        x = image_pipeline.normalize([cropped] * self.image.batch, self.image.dtype)  # one photo per batch entry
        return x, _ms(t0, t1), _ms(t1, t2), _ms(t2, time.perf_counter_ns())

    def decode_tensor(self, body: bytes, shape_header: str | None) -> tuple[np.ndarray, float]:
        """The model's input from raw float32 bytes and their declared shape, and the decode time (ms)."""
        t0 = time.perf_counter_ns()
        if not shape_header:
            raise InputError(
                HTTPStatus.BAD_REQUEST, f"a {TENSOR_TYPE} body needs its shape in {SHAPE_HEADER}, e.g. 1,3,224,224"
            )
        try:
            shape = tuple(int(d) for d in shape_header.split(","))
        except ValueError:
            raise InputError(
                HTTPStatus.BAD_REQUEST, f"{SHAPE_HEADER} {shape_header!r} is not comma-separated integers"
            ) from None
        if shape != self.input_shape:
            raise InputError(
                HTTPStatus.BAD_REQUEST,
                f"tensor shape {shape} does not match model {self.graph.name!r}'s input shape {self.input_shape}",
            )
        expected = 4 * math.prod(shape)
        if len(body) != expected:
            raise InputError(
                HTTPStatus.BAD_REQUEST,
                f"a float32 tensor of shape {shape} is {expected} bytes; the body has {len(body)}",
            )
        x = np.frombuffer(body, dtype=np.float32).reshape(shape)
        return x, _ms(t0, time.perf_counter_ns())

    def predict(self, x: np.ndarray) -> tuple[list[tuple[int, float]], float, float]:
        """Top-5 (index, probability) of the first batch entry, and the compute and postprocess times (ms)."""
        t0 = time.perf_counter_ns()
        with self._pinned(self.settings.cores):
            out = self.session.run(None, {self.input_name: x})[0]
        t1 = time.perf_counter_ns()
        scores = np.asarray(out)
        scores = scores.reshape(scores.shape[0] if scores.ndim > 1 else 1, -1)  # N x classes
        if self.ends_with_softmax:
            with np.errstate(divide="ignore"):
                scores = np.log(scores)  # softmax(log p) = p: the pipeline's one post-processing serves both
        probs, classes = image_pipeline.postprocess(scores, image_pipeline.TOP_K)
        pairs = [(int(i), float(p)) for i, p in zip(classes[0], probs[0])]
        return pairs, _ms(t0, t1), _ms(t1, time.perf_counter_ns())

    def infer(self, body: bytes, content_type: str, shape_header: str | None) -> Prediction:
        """Decode a request body (an image or a tensor), run the model, answer its top-5 with times."""
        if content_type in IMAGE_TYPES:
            x, decode_ms, resize_ms, normalize_ms = self.decode_image(body, content_type)
        elif content_type == TENSOR_TYPE:
            x, decode_ms = self.decode_tensor(body, shape_header)
            resize_ms = normalize_ms = 0.0
        else:
            accepted = ", ".join([*IMAGE_TYPES, TENSOR_TYPE])
            raise InputError(
                HTTPStatus.UNSUPPORTED_MEDIA_TYPE, f"Content-Type {content_type!r} is not one of {accepted}"
            )
        top, compute_ms, postprocess_ms = self.predict(x)
        return Prediction(top, decode_ms, resize_ms, normalize_ms, compute_ms, postprocess_ms)

    def describe(self) -> dict[str, Any]:
        """The model as ``/health`` reports it."""
        return {
            "model": self.graph.name,
            "input": {"name": self.input_name, "shape": list(self.input_shape), "dtype": "float32"},
            "takes_images": self.image is not None,
            "load_ms": self.load_ms,
            "threads": self.settings.threads,
            "cores": list(self.settings.cores),
            "runtime": self.runtime,
        }


def _downlink(headers: Any) -> tuple[float, float]:
    """The response's pacing from the request's headers: (bytes/s, delay ms); inf, 0 when absent."""
    rate_text, delay_text = headers.get(DOWNLINK_HEADER), headers.get(DELAY_HEADER)
    try:
        rate = float(rate_text) if rate_text else math.inf
        delay = float(delay_text) if delay_text else 0.0
    except ValueError:
        raise InputError(
            HTTPStatus.BAD_REQUEST,
            f"{DOWNLINK_HEADER} and {DELAY_HEADER} must be numbers, got {rate_text!r}, {delay_text!r}",
        ) from None
    if math.isnan(rate) or rate < MIN_RATE_BYTES_PER_S:
        raise InputError(
            HTTPStatus.BAD_REQUEST, f"{DOWNLINK_HEADER} must be at least {MIN_RATE_BYTES_PER_S:.0f} bytes/s"
        )
    if not (math.isfinite(delay) and 0 <= delay <= MAX_DELAY_MS):
        raise InputError(HTTPStatus.BAD_REQUEST, f"{DELAY_HEADER} must be between 0 and {MAX_DELAY_MS:.0f} ms")
    return rate, delay


class _Handler(http.server.BaseHTTPRequestHandler):
    """One request: ``/infer`` or ``/health``; the model is the server's."""

    server: _Server
    disable_nagle_algorithm = True  # paced chunks go out as they are written
    server_version = "devicelab-remote/1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a measurement makes hundreds of requests."""

    def _respond(
        self, status: HTTPStatus, payload: dict[str, Any], pace: tuple[float, float] = (math.inf, 0.0)
    ) -> None:
        rate, delay_ms = pace
        # The link's delay is waited here, before the head is written, so that the head can say
        # how long it took: the client sees only when the first byte arrives, and could not tell
        # the delay from the server's own time without it (the download is timed, not inferred).
        t0 = time.perf_counter_ns()
        if delay_ms > 0:
            sleep_ms(delay_ms)
        waited_ms = _ms(t0, time.perf_counter_ns())
        body = json.dumps(payload).encode()
        head = (
            f"{self.protocol_version} {status.value} {status.phrase}\r\n"
            f"Server: {self.server_version}\r\n"
            "Content-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n"
            f"{WAITED_HEADER}: {waited_ms:.4f}\r\n"
            "Connection: close\r\n\r\n"
        ).encode()
        # headers and body paced as one transfer, as they would cross the link
        send_shaped(self.connection, head + body, rate, 0.0)
        self.close_connection = True

    def _error(self, status: HTTPStatus, message: str) -> None:
        self._respond(status, {"error": message, "status": status.value})

    def do_GET(self) -> None:
        """``/health``: the model and its load time."""
        if self.path != "/health":
            self._error(HTTPStatus.NOT_FOUND, f"no {self.path}; GET /health or POST /infer")
            return
        self._respond(HTTPStatus.OK, {"status": "ok", **self.server.model.describe()})

    def do_POST(self) -> None:
        """``/infer``: decode the body, run the model, answer top-5 and the server's times."""
        if self.path != "/infer":
            self._error(HTTPStatus.NOT_FOUND, f"no {self.path}; POST /infer or GET /health")
            return
        try:
            body = self._read_body()  # first: an error answered before the body is read could reset the connection
            pace = _downlink(self.headers)
            t0 = time.perf_counter_ns()
            content_type = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
            prediction = self.server.model.infer(body, content_type, self.headers.get(SHAPE_HEADER))
        except InputError as e:
            self._error(e.status, str(e))
            return
        except Exception as e:  # the model failed on a well-formed input: the server's fault, said as such
            self._error(HTTPStatus.INTERNAL_SERVER_ERROR, f"{type(e).__name__}: {e}")
            return
        answer = prediction.as_dict()
        answer["model"] = self.server.model.graph.name
        answer["server_ms"] = _ms(t0, time.perf_counter_ns())
        self._respond(HTTPStatus.OK, answer, pace)

    def _read_body(self) -> bytes:
        length_text = self.headers.get("Content-Length")
        if length_text is None:
            raise InputError(HTTPStatus.LENGTH_REQUIRED, "POST /infer needs a Content-Length")
        try:
            length = int(length_text)
        except ValueError:
            raise InputError(HTTPStatus.BAD_REQUEST, f"Content-Length {length_text!r} is not an integer") from None
        if length < 0:
            raise InputError(HTTPStatus.BAD_REQUEST, f"Content-Length {length} is negative")
        if length > MAX_BODY_BYTES:
            raise InputError(
                HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                f"the body is {length} bytes; at most {MAX_BODY_BYTES} are accepted",
            )
        body = self.rfile.read(length)
        if len(body) != length:
            raise InputError(HTTPStatus.BAD_REQUEST, f"the body ended after {len(body)} of {length} bytes")
        return body


class _Server(http.server.ThreadingHTTPServer):
    """A threading HTTP server that holds the loaded model."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], model: LoadedModel) -> None:
        self.model = model
        super().__init__(address, _Handler)


READY = "devicelab-remote-endpoint ready "  # the child's line that says it serves, then JSON
STARTUP_TIMEOUT_S = 300.0  # export and session creation of the largest zoo model fit well within
STOP_TIMEOUT_S = 10.0
STDERR_TAIL_CHARS = 2_000
CHILD_PROGRAM = "import sys; from devicelab.remote.endpoint import serve_child; sys.exit(serve_child())"


class EndpointError(RuntimeError):
    """The serving process could not start (its model failed to load, it died); the message has its stderr's end."""


def serve_child() -> int:
    """The serving process: read the graph and settings (one JSON line on stdin), load the model,
    listen, print ``READY`` and the model's description, serve until stdin closes."""
    from devicelab.graph.jsonio import graph_from_dict

    spec = json.loads(sys.stdin.readline())
    model = LoadedModel(graph_from_dict(spec["graph"]), ProfileSettings.from_dict(spec["settings"]))
    server = _Server((HOST, 0), model)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": POLL_INTERVAL_S}, daemon=True)
    thread.start()
    print(READY + json.dumps({"port": server.server_address[1], "pid": os.getpid(), **model.describe()}), flush=True)
    sys.stdin.read()  # returns when the parent closes our stdin, or dies
    server.shutdown()
    server.server_close()
    thread.join()
    return 0


class InferenceEndpoint:
    """A model served over HTTP on 127.0.0.1, on a port the OS picks, by a process of its own.

    Its own interpreter, as a server on another machine: in a thread of the client's process, the
    server's Python code and the client's would take turns on one GIL, and a client timestamp
    could wait for the server's decode (up to the interpreter's 5 ms switch interval), moving time
    from the download to the upload."""

    def __init__(self, graph: Graph, settings: ProfileSettings | None = None) -> None:
        self.graph = graph
        self.settings = settings or ProfileSettings()
        self._process: subprocess.Popen[str] | None = None
        self._stderr: IO[bytes] | None = None
        self._info: dict[str, Any] = {}
        self.returncode: int | None = None  # the serving process's exit status, once stopped

    def _running(self) -> dict[str, Any]:
        if self._process is None:
            raise RuntimeError("the endpoint is not running")
        return self._info

    @property
    def port(self) -> int:
        """The port the server listens on (after ``start``)."""
        return int(self._running()["port"])

    @property
    def url(self) -> str:
        """``http://127.0.0.1:<port>``."""
        return f"http://{HOST}:{self.port}"

    @property
    def info(self) -> dict[str, Any]:
        """The served model as ``GET /health`` describes it: name, input, ``load_ms``, runtime, threads."""
        return dict(self._running())

    def start(self, timeout_s: float = STARTUP_TIMEOUT_S) -> InferenceEndpoint:
        """Start the serving process, which loads the model once; returns self once it listens."""
        from devicelab.graph.jsonio import graph_to_dict
        from devicelab.measure.cold_starts import child_environment

        if self._process is not None:
            raise RuntimeError("the endpoint is already running")
        self._stderr = tempfile.TemporaryFile()  # a file, not a pipe: nobody reads it while serving
        self._process = subprocess.Popen(
            [sys.executable, "-c", CHILD_PROGRAM],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr,
            text=True,
            env=child_environment(),
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        spec = {"graph": graph_to_dict(self.graph), "settings": self.settings.as_dict()}
        try:
            self._process.stdin.write(json.dumps(spec) + "\n")
            self._process.stdin.flush()
        except BrokenPipeError:
            pass  # it died before reading: its stdout ends, and its stderr says why
        deadline = time.monotonic() + timeout_s
        while True:
            ready, _, _ = select.select([self._process.stdout], [], [], max(0.0, deadline - time.monotonic()))
            line = self._process.stdout.readline() if ready else None
            if line is None or line == "":
                why = f"took more than {timeout_s:.0f} s to start" if line is None else "exited"
                tail = self._stop_and_read_stderr()
                raise EndpointError(f"the inference endpoint for {self.graph.name!r} {why}: {tail}")
            if line.startswith(READY):
                self._info = json.loads(line[len(READY) :])
                return self

    def _stop_and_read_stderr(self) -> str:
        stderr, self._stderr = self._stderr, None
        self.stop()
        if stderr is None:
            return "(no stderr)"
        with stderr:
            stderr.seek(0)
            lines = stderr.read().decode(errors="replace").strip().splitlines()
        # a traceback's last line says what went wrong; its frames would bury it in a job's failure
        return lines[-1][-STDERR_TAIL_CHARS:] if lines else "(nothing on stderr)"

    def stop(self) -> None:
        """Stop serving: the process closes its socket and exits (the port is free afterwards)."""
        process, self._process = self._process, None
        self._info = {}
        if process is not None:
            try:
                if process.stdin is not None:
                    process.stdin.close()  # the child's signal to shut down
            except OSError:
                pass  # it is gone already
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            if process.stdout is not None:
                process.stdout.close()
            self.returncode = process.returncode
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def __enter__(self) -> InferenceEndpoint:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextmanager
def serve_model(graph: Graph, settings: ProfileSettings | None = None) -> Iterator[InferenceEndpoint]:
    """Serve ``graph`` for the duration of the block; yields the running endpoint."""
    with InferenceEndpoint(graph, settings) as endpoint:
        yield endpoint


__all__ = [
    "DELAY_HEADER",
    "DOWNLINK_HEADER",
    "IMAGE_TYPES",
    "SHAPE_HEADER",
    "TENSOR_TYPE",
    "WAITED_HEADER",
    "EndpointError",
    "InferenceEndpoint",
    "InputError",
    "LoadedModel",
    "Prediction",
    "serve_model",
]

"""A Python client of the LatencyLab REST API for scripts and NAS tools: devices, uploads, profiling
jobs, batch latency predictions, fusion sweeps and plans, sharing sweeps, remote runs, and model selection.

    from latencylab.client import Client

    lab = Client("http://lab:8000", token)          # or LATENCYLAB_URL / LATENCYLAB_TOKEN
    result = lab.profile("net.onnx", device="host-cpu").wait(on_progress=print)
    latencies = lab.predict(["|nor_conv_3x3~0|+|none~0|skip_connect~1|+|...|"], device="pixel4")
    lab.import_qed(); p = lab.wait_for_predictor(lab.train_predictor("s10", method="lasso"))
    jobs = lab.build_training_set("host-cpu", synthetic=50, zoo=["mobilenet_v2"], rounds=3)
    sweep = lab.fusion_sweep("pocl-cpu", zoo=["mobilenet_v2"], spec={"sizes": [2]}, wait=True)
    pairs = lab.fusion_rows(sweep, contains=["DWC"], variant="rounded")
    shared = lab.sharing_sweep("pocl-cpu", spec={"shapes": ["256x128x1152"], "tenants": [1, 2, 4]}, wait=True)
    table1 = shared.result["table1"]; tails = lab.sharing_rows(shared, strategy="space_time")
    pick = lab.select("host-cpu", models=[3, 4, 5], sla_ms=300, network_profile="lte")  # CNNSelect
    remote = lab.remote_run(3, "host-cpu", ["unshaped", "lte"], requests=20, wait=True).result["profiles"]
    sim = lab.wait_for_selection_simulation(lab.simulate_selection(scenario="paper", requests=1000), 600)

Every answer that is not 2xx raises ``ClientError`` carrying the HTTP status and the server's message.

One module per domain, each a mixin of ``Client``: ``http`` (the session, the token, errors as
``ClientError``), ``handles`` (jobs to wait for and cancel), ``devices``, ``models`` (uploads),
``profiling``, ``predictors`` (with ``architectures``: what ``predict`` sends), ``training_data``
(training sets, the qed import), ``fusion``,
``sharing``, ``remote``, ``network_profiles``, ``selection``; ``errors`` holds what they raise.
"""

from __future__ import annotations

from latencylab.client.architectures import encode_architecture
from latencylab.client.errors import ClientError, InputError, JobFailed, ModelFailed, WaitTimeout
from latencylab.client.fusion import FusionMixin
from latencylab.client.handles import FINISHED, FusionHandle, JobHandle, RemoteHandle, SharingHandle
from latencylab.client.http import TOKEN_ENV, URL_ENV
from latencylab.client.network_profiles import NetworkProfilesMixin
from latencylab.client.predictors import PREDICT_CHUNK, PREDICT_CHUNK_BYTES, Predictions, PredictorsMixin
from latencylab.client.profiling import ProfilingMixin
from latencylab.client.remote import RemoteMixin
from latencylab.client.selection import SelectionMixin
from latencylab.client.sharing import SharingMixin
from latencylab.client.training_data import TrainingDataMixin


class Client(
    ProfilingMixin,
    PredictorsMixin,
    TrainingDataMixin,
    FusionMixin,
    SharingMixin,
    RemoteMixin,
    NetworkProfilesMixin,
    SelectionMixin,
):
    """One LatencyLab server and an API token (``Authorization: Token <key>``): every call of the
    API, by domain (devices and models, profiling, predictors and their training data, prediction,
    fusion, sharing, remote runs, network profiles, model selection)."""


__all__ = [
    "FINISHED",
    "PREDICT_CHUNK",
    "PREDICT_CHUNK_BYTES",
    "TOKEN_ENV",
    "URL_ENV",
    "Client",
    "ClientError",
    "FusionHandle",
    "InputError",
    "JobFailed",
    "JobHandle",
    "ModelFailed",
    "Predictions",
    "RemoteHandle",
    "SharingHandle",
    "WaitTimeout",
    "encode_architecture",
]

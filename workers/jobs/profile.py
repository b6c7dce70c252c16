"""A profiling job: measure one model on the device, store its profile."""

from __future__ import annotations

from typing import Any

from devicelab.backends.base import BackendError, DeviceInfo, ModelFile
from devicelab.backends.profile_settings import ProfileSettings
from devicelab.graph import graph_from_dict
from workers.jobs.progress import ProgressReporter

# Upload formats a device runs as uploaded (its own weights and quantization) when its runtime
# reads them (a phone a .tflite, the CPU's onnxruntime a .onnx); every other upload runs as its
# graph, and a graph JSON always does.
RUN_AS_UPLOADED = frozenset({"tflite", "onnx"})


def uploaded_file(model: Any, info: DeviceInfo) -> ModelFile | None:
    """The uploaded file, for a device that runs uploads of its format as they are (a phone runs
    a ``.tflite``, the CPU an ``.onnx``, with its own weights and quantization); None otherwise."""
    caps = info.capabilities
    if model.format not in RUN_AS_UPLOADED or caps is None or model.format not in caps.formats or not model.file:
        return None
    try:
        with model.file.open("rb") as f:
            data = f.read()
    except OSError as exc:
        raise BackendError(
            f"the uploaded file of model {model.name!r} ({model.file.name}) cannot be read on this worker: {exc}; "
            "the worker needs the server's media storage (LATENCYLAB_VAR_DIR / MEDIA_ROOT)"
        ) from None
    return ModelFile(model.format, data, model.filename or model.name)


def run_profile_job(job: Any, info: DeviceInfo, progress: ProgressReporter) -> bool:
    """Profile the job's model; whether its result was stored for this run."""
    from devicelab.backends.registry import backend_for
    from server.networks.services import import_limits
    from server.profiling.services import ingest_result

    # within the server's import limits: a model stored before they existed cannot make the
    # device allocate what its shapes declare
    graph = graph_from_dict(job.model.graph, import_limits())
    settings = ProfileSettings.from_dict(job.settings)
    backend = backend_for(info.kind)
    # the backend's profile, then the time breakdown of one inference (an image model's)
    result = backend.profile_job(info, graph, settings, progress, uploaded_file(job.model, info))
    return ingest_result(job.pk, progress.token, result) is not None

"""A profiling job: measure one model on the device; its profile is what the machine posts."""

from __future__ import annotations

from devicelab.backends.base import ModelFile
from devicelab.backends.profile_record import ProfileRecord
from devicelab.backends.profile_settings import ProfileSettings
from workers.jobs.run import JobRun, job_graph


def uploaded_file(run: JobRun) -> ModelFile | None:
    """The uploaded file, for a device that runs uploads of its format as they are (a phone runs
    a ``.tflite``, the CPU an ``.onnx``, with its own weights and quantization); None otherwise.
    It comes from the machine's cache, or from the server by its hash."""
    ref, caps = run.job.model, run.info.capabilities
    if ref is None or caps is None or ref.format not in caps.formats:
        return None
    return ModelFile(ref.format, run.files.fetch(ref, run.server), ref.filename or ref.sha256)


def run_profile_job(run: JobRun) -> ProfileRecord:
    """Profile the job's model: the backend's profile, then the time breakdown of one inference
    (an image model's)."""
    from devicelab.backends.registry import backend_for

    settings = ProfileSettings.from_dict(run.job.settings)
    backend = backend_for(run.info.kind)
    result = backend.profile_job(run.info, job_graph(run.job), settings, run.progress, uploaded_file(run))
    return ProfileRecord.of(result)

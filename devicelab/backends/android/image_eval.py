"""The image's preparation measured on the phone: TensorFlow Lite's ImageNet evaluation tool.

A phone app decodes the camera's JPEG, crops and scales it and normalizes it before the model
runs, on the phone's own cores. TensorFlow Lite ships a native tool that does exactly that and
times it: ``run_eval`` of ``tensorflow/lite/tools/evaluation/tasks/imagenet_image_classification``
(its ``ImagePreprocessingStage``: read and decode the JPEG, centre crop to 87.5 %, bilinear
resize to the model's input, normalize), which logs

    Num evaluation runs: N
    Preprocessing latency: avg=A(us), std_dev=S(us)
    Inference latency: avg=A(us), std_dev=S(us)
    Top-1 Accuracy: ...

The lab configures the binary for the phones' ABI as ``LATENCYLAB_TFLITE_IMAGENET_EVAL`` (like
``benchmark_model``, we cannot ship it). The job's JPEG photo is pushed once (by sha256) and
copied on the phone ``count`` times (the tool evaluates each file in a directory once, in name
order), with a ground-truth label per copy and one model label per output class. The tool runs
pinned to the job's cores with the job's threads, on the CPU (the preparation never runs on a
delegate; the inference the tool also times is only recorded beside it). It reports an average
and a standard deviation, no samples.

Without the binary, the breakdown's preparation stays measured on the worker's machine and says so.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from devicelab.backends.android import adb, tool_run
from devicelab.backends.base import BackendError
from devicelab.measure.breakdown import DEVICE, StageTiming
from devicelab.measure.photos import Photo
from devicelab.measure.stats import from_aggregate

TOOL_ENV = "LATENCYLAB_TFLITE_IMAGENET_EVAL"
REMOTE_TOOL = f"{tool_run.REMOTE_DIR}/imagenet_eval"
REMOTE_WORK = f"{tool_run.REMOTE_DIR}/image_eval"
RUN_TIMEOUT_S = 600.0
MAX_IMAGES = 20  # each one a full decode of a 12-megapixel photo and one inference on the CPU

_NUMBER = r"([-+]?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)"
_RUNS = re.compile(r"Num evaluation runs:\s*(\d+)")
_PREPROCESSING = re.compile(rf"Preprocessing latency: avg={_NUMBER}\(us\), std_dev={_NUMBER}\(us\)")
_INFERENCE = re.compile(rf"Inference latency: avg={_NUMBER}\(us\), std_dev={_NUMBER}\(us\)")


class EvalOutputError(ValueError):
    """The tool's output lacks a line the lab reads; the message names it."""


@dataclass(frozen=True)
class EvalSummary:
    """What the tool logged of a run (µs)."""

    runs: int
    preprocessing_avg_us: float
    preprocessing_std_us: float
    inference_avg_us: float | None
    inference_std_us: float | None


def configured_tool(environ: Mapping[str, str] | None = None) -> Path | None:
    """The evaluation binary the lab configured, or None."""
    raw = (os.environ if environ is None else environ).get(TOOL_ENV, "").strip()
    return Path(raw) if raw else None


def parse_output(text: str) -> EvalSummary:
    """The run count and latencies from the tool's log (``INFO:`` prefixes or not)."""
    runs = _RUNS.search(text)
    pre = _PREPROCESSING.search(text)
    if runs is None:
        raise EvalOutputError("no 'Num evaluation runs:' line")
    if pre is None:
        raise EvalOutputError("no 'Preprocessing latency: avg=...(us), std_dev=...(us)' line")
    inf = _INFERENCE.search(text)
    return EvalSummary(
        int(runs.group(1)),
        float(pre.group(1)),
        float(pre.group(2)),
        float(inf.group(1)) if inf else None,
        float(inf.group(2)) if inf else None,
    )


def command_line(model_path: str, count: int, threads: int, cores: Sequence[int] = (), tool: str = REMOTE_TOOL) -> str:
    """The shell command of one run over ``count`` images (``taskset`` first when cores are pinned)."""
    flags = [
        f"--model_file={model_path}",
        f"--ground_truth_images_path={REMOTE_WORK}/images",
        f"--ground_truth_labels={REMOTE_WORK}/ground_truth.txt",
        f"--model_output_labels={REMOTE_WORK}/labels.txt",
        f"--num_images={count}",
        f"--num_interpreter_threads={threads}",
    ]
    mask = tool_run.core_mask(cores) if cores else None
    words = ([f"taskset {mask}"] if mask else []) + [shlex.quote(tool)] + [shlex.quote(f) for f in flags]
    return " ".join(words)


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def measure_preparation(
    link: adb.PhoneLink,
    model_path: str,
    photo: Photo,
    classes: int,
    count: int,
    threads: int,
    cores: Sequence[int],
) -> tuple[StageTiming, dict[str, object]]:
    """Time the JPEG's preparation on the phone ``count`` times; the stage and what to record of
    the run. ``BackendError`` when the tool is not configured or fails; ``DeviceLost`` from adb."""
    path = configured_tool()
    if path is None:
        raise BackendError(f"no ImageNet evaluation tool configured ({TOOL_ENV} unset)")
    if photo.format != "jpeg":
        raise ValueError(f"the evaluation tool decodes JPEG files, not {photo.format!r}")
    if not 1 <= count <= MAX_IMAGES:
        raise ValueError(f"count must be between 1 and {MAX_IMAGES}, got {count}")
    try:
        tool = path.read_bytes()
    except OSError as e:
        raise BackendError(f"{TOOL_ENV}={path}: cannot read the evaluation binary: {e.strerror}") from None
    photo_path = f"{REMOTE_WORK}/photo_{photo.sha256[:16]}.jpg"
    link.run(f"rm -rf {REMOTE_WORK}/images && mkdir -p {REMOTE_WORK}/images")
    adb.ensure_file(link, tool, REMOTE_TOOL, 0o755)
    adb.ensure_file(link, photo.data, photo_path, 0o644)
    adb.ensure_file(link, "".join(f"class_{i}\n" for i in range(classes)).encode(), f"{REMOTE_WORK}/labels.txt", 0o644)
    link.push(b"class_0\n" * count, f"{REMOTE_WORK}/ground_truth.txt")
    copies = " && ".join(f"cp {photo_path} {REMOTE_WORK}/images/{i:03d}.jpg" for i in range(count))
    made = link.run(copies)
    if made.exit_code != 0:
        raise BackendError(
            f"phone {link.serial}: copying the photo failed: {(made.stdout + made.stderr).strip()[:200]}"
        )
    command = command_line(model_path, count, threads, cores)
    out = link.stream(command, lambda _text: None, lambda: None, RUN_TIMEOUT_S)
    link.run(f"rm -rf {REMOTE_WORK}/images")
    if out.exit_code != 0:
        lines = " | ".join(tool_run.error_lines(out.text)) or "no output"
        raise BackendError(
            f"the ImageNet evaluation tool failed on phone {link.serial} (exit {out.exit_code}): {lines}"
        )
    try:
        summary = parse_output(out.text)
    except EvalOutputError as e:
        raise BackendError(
            f"the ImageNet evaluation tool on phone {link.serial} printed output we cannot read: {e}"
        ) from None
    if summary.runs != count:
        raise BackendError(f"the ImageNet evaluation tool on phone {link.serial} ran {summary.runs} images of {count}")
    stats = from_aggregate(count, summary.preprocessing_avg_us / 1e3, summary.preprocessing_std_us / 1e3)
    stage = StageTiming(
        "preprocess",
        DEVICE,
        stats,
        [],
        f"TensorFlow Lite's ImageNet evaluation tool on the phone: read and decode the {photo.width}x{photo.height} "
        f"JPEG, centre crop, bilinear resize, normalize; mean and std of {count} images (it reports no samples)",
    )
    record: dict[str, object] = {
        "tool_sha256": _sha256(tool),
        "command": command,
        "images": count,
        "photo_sha256": photo.sha256,
        "inference_avg_ms": None if summary.inference_avg_us is None else summary.inference_avg_us / 1e3,
        "inference_std_ms": None if summary.inference_std_us is None else summary.inference_std_us / 1e3,
    }
    return stage, record


__all__ = [
    "MAX_IMAGES",
    "TOOL_ENV",
    "EvalOutputError",
    "EvalSummary",
    "command_line",
    "configured_tool",
    "measure_preparation",
    "parse_output",
]

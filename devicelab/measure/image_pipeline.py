"""One inference of an image model as a client runs it, measured stage by stage with Pillow and numpy.

The client's stages (``devicelab.measure.breakdown`` has the whole list and the data shapes):

* **decode**: Pillow opens the photo's bytes (in memory: reading the file is not timed) and
  decodes every pixel, once per image of the batch;
* **resize + center crop**: the ImageNet evaluation convention: scale the photo (bilinear, with
  Pillow's antialiasing) so that it covers ``H / 0.875`` x ``W / 0.875`` (256 x 256 for 224 x 224),
  then cut ``H x W`` out of its centre;
* **normalize**: to float, ``(x / 255 - mean) / std`` with ImageNet's mean and std per channel,
  HWC to CHW, the images stacked into the model's N x 3 x H x W input;
* **post-processing**: softmax over the class axis (axis 1) of the model's first output and its
  top 5, with numpy. The logits are seeded random numbers of the output's shape: the cost of a
  softmax and a top-k does not depend on the values.

Each client stage gets warm-up runs (dropped) and timed runs (kept), like the model's runs: at
most ``MAX_RUNS`` timed and ``MAX_WARMUP_RUNS`` warm-up runs (fewer when the job asks for fewer),
and fewer again, down to ``MIN_RUNS``, when they would take longer than ``BUDGET_S`` (a batch of
64 phone photos). In each run the JPEG's and the PNG's pipelines take turns, so that a burst of
other load hits both alike. The model's load and inference are not run here: they come from the
profile (``model_load``: its cold starts' loads; ``inference``: its warm timed runs).
"""

from __future__ import annotations

import io
import math
import os
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import PIL
from PIL import Image

from devicelab.graph.ir import Graph
from devicelab.measure.breakdown import (
    DEVICE,
    HOST,
    ImageFile,
    ImageInput,
    NotAnImageModel,
    PipelineTiming,
    StageTiming,
    TimeBreakdown,
    image_input,
)
from devicelab.measure.photos import Photo, phone_photos
from devicelab.measure.stats import SampleStats, summarize

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
CROP_FRACTION = 0.875  # the centre crop keeps 224 of 256
TOP_K = 5
LOGITS_SEED = 0
MAX_RUNS = 10
MAX_WARMUP_RUNS = 1
MIN_RUNS = 3
BUDGET_S = 20.0  # the client stages' timed runs should fit in this (checked after the first run)

StepFn = Callable[[str], None]
"""Called after each run of the client stages with a short message (a harness ``Meter.step``)."""


# -- the stages ------------------------------------------------------------------------------


def decode(data: bytes) -> Image.Image:
    """Decode an encoded image (every pixel, not only its header) to RGB."""
    image = Image.open(io.BytesIO(data))
    image.load()
    return image if image.mode == "RGB" else image.convert("RGB")


def resize_crop(image: Image.Image, height: int, width: int) -> Image.Image:
    """Scale ``image`` to cover ``height / CROP_FRACTION`` x ``width / CROP_FRACTION`` (keeping its
    aspect), then cut ``height x width`` from its centre."""
    scale = max(height / CROP_FRACTION / image.height, width / CROP_FRACTION / image.width)
    size = (max(width, round(image.width * scale)), max(height, round(image.height * scale)))
    scaled = image.resize(size, Image.Resampling.BILINEAR)
    left = (size[0] - width) // 2
    top = (size[1] - height) // 2
    return scaled.crop((left, top, left + width, top + height))


def normalize(images: Sequence[Image.Image], dtype: str = "float32") -> np.ndarray:
    """Images (RGB, all H x W) as one N x 3 x H x W array, normalized with ImageNet's mean and std."""
    scale = (1.0 / (255.0 * np.asarray(IMAGENET_STD, np.float32))).astype(np.float32)
    shift = (np.asarray(IMAGENET_MEAN, np.float32) / np.asarray(IMAGENET_STD, np.float32)).astype(np.float32)
    batch = np.stack([np.asarray(im, dtype=np.float32) * scale - shift for im in images])  # N x H x W x 3
    return np.ascontiguousarray(batch.transpose(0, 3, 1, 2), dtype=np.dtype(dtype))


def postprocess(logits: np.ndarray, k: int = TOP_K) -> tuple[np.ndarray, np.ndarray]:
    """Softmax over axis 1 (the classes) and the ``k`` most probable classes, most probable first:
    ``(probabilities, indices)``, each N x k (x the positions, for an output with more axes)."""
    n = logits.shape[0] if logits.ndim > 1 else 1
    classes = logits.shape[1] if logits.ndim > 1 else logits.shape[0]
    x = logits.reshape(n, classes, -1)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    p = e / e.sum(axis=1, keepdims=True)
    k = min(k, classes)
    idx = np.argpartition(-p, k - 1, axis=1)[:, :k]
    top = np.take_along_axis(p, idx, axis=1)
    order = np.argsort(-top, axis=1, kind="stable")
    probs, classes_of = np.take_along_axis(top, order, axis=1), np.take_along_axis(idx, order, axis=1)
    if x.shape[-1] == 1:  # a classifier: one position
        return probs[..., 0], classes_of[..., 0]
    return probs, classes_of


def seeded_logits(shape: Sequence[int], seed: int = LOGITS_SEED) -> np.ndarray:
    """Logits of the model's output shape, fixed by ``seed``."""
    return np.random.default_rng(seed).standard_normal(tuple(shape)).astype(np.float32)


# -- measuring -------------------------------------------------------------------------------


def _timed(fn: Callable[[], Any]) -> tuple[Any, float]:
    """``fn()`` and its wall time (ms)."""
    t0 = time.perf_counter_ns()
    out = fn()
    return out, (time.perf_counter_ns() - t0) / 1e6


def _one_pipeline(photo: Photo, spec: ImageInput) -> tuple[float, float, float]:
    """Decode, resize + crop and normalize a batch of ``photo``: the three stages' times (ms)."""
    decoded, t_decode = _timed(lambda: [decode(photo.data) for _ in range(spec.batch)])
    cropped, t_resize = _timed(lambda: [resize_crop(im, spec.height, spec.width) for im in decoded])
    batch, t_norm = _timed(lambda: normalize(cropped, spec.dtype))
    if batch.shape != spec.shape:  # the pipeline must feed exactly what the model takes
        raise RuntimeError(f"the pipeline made a {list(batch.shape)} batch for a {list(spec.shape)} input")
    return t_decode, t_resize, t_norm


def bounded_runs(runs: int, warmup_runs: int) -> tuple[int, int]:
    """The timed and warm-up runs of the client's stages for a job's ``runs`` and ``warmup_runs``
    (before the budget, which only the first run can tell, lowers them further)."""
    return max(1, min(runs, MAX_RUNS)), max(0, min(warmup_runs, MAX_WARMUP_RUNS))


def _runs_within_budget(runs: int, warmup: int, first_run_s: float) -> int:
    """The timed runs to make, given how long the first run took (``MIN_RUNS`` at least, where asked)."""
    if first_run_s <= 0:
        return runs
    fit = math.floor(BUDGET_S / first_run_s) - warmup
    return max(min(runs, MIN_RUNS), min(runs, fit))


def _pinned(cores: Sequence[int]) -> tuple[set[int] | None, list[int]]:
    """Pin this thread to ``cores`` (when given and possible); its old affinity and the one in force."""
    if not cores or not hasattr(os, "sched_setaffinity"):
        now = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        return None, now
    old = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(cores))
    return old, sorted(os.sched_getaffinity(0))


def measure_host_stages(
    spec: ImageInput,
    photos: Sequence[Photo],
    runs: int,
    warmup_runs: int,
    step: StepFn | None = None,
) -> tuple[dict[str, dict[str, list[float]]], list[float], int]:
    """The client's stages, each run ``warmup_runs`` (dropped) + ``runs`` (kept) times, the photos
    taking turns within a run: ``({format: {stage: samples}}, postprocess samples, runs made)``."""
    samples: dict[str, dict[str, list[float]]] = {
        p.format: {"decode": [], "resize_crop": [], "normalize": []} for p in photos
    }
    logits = seeded_logits(spec.output_shape)
    post: list[float] = []
    total = warmup_runs + runs
    i = 0
    while i < total:
        t0 = time.perf_counter()
        for photo in photos:
            t_decode, t_resize, t_norm = _one_pipeline(photo, spec)
            if i >= warmup_runs:
                kept = samples[photo.format]
                kept["decode"].append(t_decode)
                kept["resize_crop"].append(t_resize)
                kept["normalize"].append(t_norm)
        _, t_post = _timed(lambda: postprocess(logits))
        if i >= warmup_runs:
            post.append(t_post)
        if i == 0:
            runs = _runs_within_budget(runs, warmup_runs, time.perf_counter() - t0)
            total = warmup_runs + runs
        i += 1
        if step is not None:
            phase = "warm-up" if i <= warmup_runs else "timed run"
            n, of = (i, warmup_runs) if i <= warmup_runs else (i - warmup_runs, runs)
            step(f"image pipeline {phase} {n}/{of}")
    return samples, post, runs


def _stage(name: str, where: str, samples: Sequence[float], source: str) -> StageTiming:
    return StageTiming(name, where, summarize(samples), [float(s) for s in samples], source)


def measure_breakdown(
    graph: Graph,
    *,
    load_samples_ms: Sequence[float],
    load_source: str,
    inference: SampleStats,
    inference_samples_ms: Sequence[float],
    runs: int,
    warmup_runs: int,
    host_side: bool = False,
    cores: Sequence[int] = (),
    step: StepFn | None = None,
    photos: Sequence[Photo] | None = None,
) -> TimeBreakdown:
    """The time breakdown of one inference of ``graph``, or why it has none.

    ``load_samples_ms`` / ``inference``: the profile's model loads and warm-run statistics (with
    the runs' samples, where the runtime kept them). ``runs`` / ``warmup_runs``: the job's, bounded
    here (``bounded_runs``). ``host_side``: the device is not this machine (a phone), so the
    client's stages measured here are not the device's. ``cores``: pin the client's stages as the
    model's runs were. ``step``: called after each run of the client's stages.
    """
    try:
        spec = image_input(graph)
    except NotAnImageModel as exc:
        return TimeBreakdown.not_applicable(str(exc))
    runs, warmup_runs = bounded_runs(runs, warmup_runs)
    photos = list(phone_photos() if photos is None else photos)
    old, applied = _pinned(cores)
    try:
        host, post, runs = measure_host_stages(spec, photos, runs, warmup_runs, step)
    finally:
        if old is not None:
            os.sched_setaffinity(0, old)
    inference_source = (
        f"the profile's {inference.n} warm timed runs (median)"
        if inference_samples_ms
        else f"the runtime's mean of {inference.n} warm runs (it reports aggregates only)"
    )
    shared = [
        _stage("model_load", DEVICE, load_samples_ms, load_source),
        StageTiming("inference", DEVICE, inference, [float(s) for s in inference_samples_ms], inference_source),
        _stage(
            "postprocess",
            HOST,
            post,
            f"numpy softmax and top-{TOP_K} over axis 1 of seeded logits shaped like the output "
            f"{list(spec.output_shape)}",
        ),
    ]
    pipelines = []
    for photo in photos:
        kept = host[photo.format]
        per_image = f"{spec.batch} image{'s' if spec.batch != 1 else ''} per run"
        first = [
            _stage(
                "decode",
                HOST,
                kept["decode"],
                f"Pillow {PIL.__version__}: {photo.format.upper()} bytes in memory to RGB, {per_image}",
            ),
            _stage(
                "resize_crop",
                HOST,
                kept["resize_crop"],
                f"Pillow bilinear resize of {photo.width}x{photo.height} to cover "
                f"{spec.height / CROP_FRACTION:.0f}x{spec.width / CROP_FRACTION:.0f}, centre crop to "
                f"{spec.height}x{spec.width}, {per_image}",
            ),
            _stage("normalize", HOST, kept["normalize"], "numpy: ImageNet mean and std, HWC to NCHW float"),
        ]
        image = ImageFile(photo.format, photo.width, photo.height, len(photo.data), photo.sha256)
        pipelines.append(PipelineTiming(image, [*first, *shared]))
    return TimeBreakdown(
        applicable=True,
        input=spec,
        pipelines=pipelines,
        host_side=host_side,
        note=HOST_SIDE_NOTE if host_side else "",
        runs=runs,
        warmup_runs=warmup_runs,
        environment={
            "pillow": PIL.__version__,
            "numpy": np.__version__,
            "affinity": applied,
            "host_stages_on": "the worker's machine",
        },
    )


HOST_SIDE_NOTE = (
    "decode, resize + crop, normalize and post-processing were measured on the worker's machine, not on "
    "the phone (with TensorFlow Lite's ImageNet evaluation tool configured as LATENCYLAB_TFLITE_IMAGENET_EVAL, "
    "the JPEG's are timed on the phone). Model load and inference are the phone's."
)


__all__ = [
    "CROP_FRACTION",
    "HOST_SIDE_NOTE",
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "MAX_RUNS",
    "MAX_WARMUP_RUNS",
    "bounded_runs",
    "decode",
    "measure_breakdown",
    "measure_host_stages",
    "normalize",
    "postprocess",
    "resize_crop",
    "seeded_logits",
]

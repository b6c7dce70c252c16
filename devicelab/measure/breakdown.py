"""Where the time of one inference of an image model goes, stage by stage: the data, and which
graphs are image models.

Ogden & Guo (``../shared/seeds/002_*``, table 4 and figure 5) break an image recognition into
loading the image, scaling it, loading the model and computing. A ``TimeBreakdown`` has the same
stages as a client runs them, each measured (``devicelab.measure.image_pipeline`` measures the
client's stages with Pillow and numpy; the model's load and inference come from the profile):

decode -> resize + center crop -> normalize -> model load -> inference -> post-processing

one pipeline per image format (a phone-sized JPEG and PNG). A graph that does not take one
N x 3 x H x W image batch gets a breakdown that says it is not applicable, and why; nothing is
made up for it.

Data only (no Pillow here): the server and the dashboard read these shapes without decoding images.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from devicelab.graph.ir import Graph
from devicelab.measure.stats import SampleStats, central

# The stages of one inference, in the order a client runs them.
STAGES = ("decode", "resize_crop", "normalize", "preprocess", "model_load", "inference", "postprocess")
# Where a device measures the image's preparation itself (a phone, with TensorFlow Lite's ImageNet
# evaluation tool), decode, resize + crop and normalize are one stage: the tool times them together.
CLIENT_PREPARATION = ("decode", "resize_crop", "normalize")
STAGE_LABELS = {
    "decode": "image decode",
    "resize_crop": "resize + center crop",
    "normalize": "normalize",
    "preprocess": "decode + resize + crop + normalize",
    "model_load": "model load",
    "inference": "inference",
    "postprocess": "post-processing",
}
HOST = "host"  # the machine that runs the worker (the client, except for a phone)
DEVICE = "device"  # the profiled device: the model's load and inference
IMAGE_CHANNELS = 3


class NotAnImageModel(ValueError):
    """A graph whose input is not one N x 3 x H x W floating-point image batch; the message says why."""


@dataclass(frozen=True)
class ImageInput:
    """The image batch an image model takes (NCHW), and the output its post-processing reads."""

    name: str
    shape: tuple[int, int, int, int]
    dtype: str
    output_name: str
    output_shape: tuple[int, ...]

    @property
    def batch(self) -> int:
        """Images per inference (N)."""
        return self.shape[0]

    @property
    def height(self) -> int:
        """H."""
        return self.shape[2]

    @property
    def width(self) -> int:
        """W."""
        return self.shape[3]


def image_input(graph: Graph) -> ImageInput:
    """The graph's image input, or ``NotAnImageModel`` saying why it has none."""
    if len(graph.inputs) != 1:
        raise NotAnImageModel(
            f"the model has {len(graph.inputs)} inputs ({', '.join(graph.inputs)}); "
            "an image model takes one N x 3 x H x W image batch"
        )
    tensor = graph.tensors[graph.inputs[0]]
    shape = tuple(int(d) for d in tensor.shape)
    if len(shape) != 4 or shape[1] != IMAGE_CHANNELS:
        raise NotAnImageModel(f"the model's input {tensor.name!r} is {list(shape)}, not an N x 3 x H x W image batch")
    if not tensor.dtype.startswith("float"):
        raise NotAnImageModel(f"the model's input {tensor.name!r} is {tensor.dtype}, not a floating-point image")
    if min(shape) < 1:
        raise NotAnImageModel(f"the model's input {tensor.name!r} has an empty dimension: {list(shape)}")
    if not graph.outputs:
        raise NotAnImageModel("the model has no output to post-process")
    out = graph.tensors[graph.outputs[0]]
    n, c, h, w = shape
    return ImageInput(tensor.name, (n, c, h, w), tensor.dtype, out.name, tuple(int(d) for d in out.shape))


def _number(value: float) -> float | None:
    """A statistic as plain data: NaN (not reported: a phone's tool prints no median) is None."""
    return None if math.isnan(value) else value


@dataclass(frozen=True)
class StageTiming:
    """One stage of the pipeline: where it ran, its statistics and samples (ms), how it was measured."""

    name: str  # one of STAGES
    where: str  # HOST or DEVICE
    stats: SampleStats
    samples_ms: list[float]
    source: str

    @property
    def central_ms(self) -> float:
        """The median, or the mean where only aggregates were reported."""
        return central(self.stats)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        s = self.stats
        return {
            "name": self.name,
            "label": STAGE_LABELS[self.name],
            "where": self.where,
            "central_ms": self.central_ms,
            "median_ms": _number(s.median),
            "mean_ms": s.mean,
            "std_ms": _number(s.std) if s.n > 1 else None,
            "min_ms": _number(s.min),
            "max_ms": _number(s.max),
            "n": s.n,
            "samples_ms": list(self.samples_ms),
            "source": self.source,
        }


@dataclass(frozen=True)
class ImageFile:
    """The image a pipeline decodes."""

    format: str  # "jpeg", "png"
    width: int
    height: int
    bytes: int
    sha256: str

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "format": self.format,
            "width": self.width,
            "height": self.height,
            "bytes": self.bytes,
            "sha256": self.sha256,
        }


@dataclass(frozen=True)
class PipelineTiming:
    """Every stage of one inference, starting from one image file."""

    image: ImageFile
    stages: list[StageTiming]

    @property
    def total_ms(self) -> float:
        """The stages' central times, summed: one cold inference, from file to top-5."""
        return sum(s.central_ms for s in self.stages)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        return {
            "image": self.image.as_dict(),
            "total_ms": self.total_ms,
            "stages": [s.as_dict() for s in self.stages],
        }


@dataclass(frozen=True)
class TimeBreakdown:
    """The time breakdown of one inference of a model, or why it has none (``applicable`` False)."""

    applicable: bool
    reason: str = ""  # why not, when not applicable
    input: ImageInput | None = None
    pipelines: list[PipelineTiming] = field(default_factory=list)
    host_side: bool = False  # the host's stages ran on the worker's machine, not on the device (a phone)
    note: str = ""
    runs: int = 0  # timed runs of each host stage
    warmup_runs: int = 0
    environment: dict[str, Any] = field(default_factory=dict)  # Pillow and numpy versions, affinity

    def with_device_preparation(self, image_format: str, stage: StageTiming, note: str) -> TimeBreakdown:
        """This breakdown with the ``image_format`` pipeline's decode, resize + crop and normalize
        replaced by one ``preprocess`` stage the device measured itself; ``note`` says what ran where."""
        if not self.applicable:
            raise ValueError("a breakdown that does not apply has no pipeline to change")
        if stage.name != "preprocess" or stage.where != DEVICE:
            raise ValueError(f"the device's preparation is a {DEVICE!r} 'preprocess' stage, not {stage.name!r}")
        if image_format not in {p.image.format for p in self.pipelines}:
            raise ValueError(f"no {image_format!r} pipeline in this breakdown")
        pipelines = [
            PipelineTiming(p.image, [stage, *(s for s in p.stages if s.name not in CLIENT_PREPARATION)])
            if p.image.format == image_format
            else p
            for p in self.pipelines
        ]
        return replace(self, pipelines=pipelines, note=note)

    @classmethod
    def not_applicable(cls, reason: str) -> TimeBreakdown:
        """The breakdown of a model that is not an image model: none, and why."""
        return cls(applicable=False, reason=reason)

    def as_dict(self) -> dict[str, Any]:
        """Plain data for JSON."""
        if not self.applicable:
            return {"applicable": False, "reason": self.reason}
        assert self.input is not None
        return {
            "applicable": True,
            "reason": "",
            "input": {"name": self.input.name, "shape": list(self.input.shape), "dtype": self.input.dtype},
            "output": {"name": self.input.output_name, "shape": list(self.input.output_shape)},
            "host_side": self.host_side,
            "note": self.note,
            "runs": self.runs,
            "warmup_runs": self.warmup_runs,
            "environment": dict(self.environment),
            "pipelines": [p.as_dict() for p in self.pipelines],
        }


__all__ = [
    "CLIENT_PREPARATION",
    "DEVICE",
    "HOST",
    "STAGES",
    "STAGE_LABELS",
    "ImageFile",
    "ImageInput",
    "NotAnImageModel",
    "PipelineTiming",
    "StageTiming",
    "TimeBreakdown",
    "image_input",
]

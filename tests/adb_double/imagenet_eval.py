"""An emulated TensorFlow Lite ImageNet evaluation tool (``run_eval`` of
``tensorflow/lite/tools/evaluation/tasks/imagenet_image_classification``) for the phones of the
adb double: its flags, its checks of the image directory and label files, a real look at each
image (a file that is not a JPEG fails as the tool's decoder does), phone time spent on each
image's preparation and inference, and its summary lines."""

from __future__ import annotations

import hashlib
import io
import random

from PIL import Image, UnidentifiedImageError

from tests.adb_double.shell import Proc, Program

FAKE_IMAGENET_EVAL_MARKER = b"\x7fELF latencylab-adb-double imagenet_eval"
FLAGS = (
    "model_file",
    "ground_truth_images_path",
    "ground_truth_labels",
    "model_output_labels",
    "denylist_file_path",
    "output_file_path",
    "num_images",
    "num_interpreter_threads",
    "delegate",
)
DECODE_NS_PER_PIXEL = 5.0  # a 12-megapixel JPEG in about 60 ms on a big core
PREPARE_SPREAD = 0.04


def imagenet_eval_binary() -> bytes:
    """The bytes of a pushable evaluation tool."""
    return FAKE_IMAGENET_EVAL_MARKER + b"\n" + hashlib.shake_256(b"imagenet_eval").digest(4096)


def program_for(content: bytes) -> Program | None:
    """The emulated tool for a file's bytes, or None when the file is not it."""
    if not content.startswith(FAKE_IMAGENET_EVAL_MARKER):
        return None
    return lambda proc: ImagenetEval(proc).main()


class _Failed(Exception):
    """RunImpl returned nullopt: the task logs why and exits 1."""


class ImagenetEval:
    """One run of the tool in a process."""

    def __init__(self, proc: Proc) -> None:
        self.proc = proc
        self.phone = proc.phone
        self.scale = max(0.0, float(self.phone.time_scale))
        self.values: dict[str, str] = {}
        self.rng = random.Random(hashlib.sha256(" ".join(proc.argv).encode()).digest())

    def info(self, message: str) -> None:
        self.proc.out(f"INFO: {message}\n")

    def error(self, message: str) -> None:
        self.proc.err(f"ERROR: {message}\n")

    def main(self) -> int:
        for arg in self.proc.argv[1:]:
            name, eq, value = arg.removeprefix("--").partition("=")
            if not arg.startswith("--") or not eq or name not in FLAGS:
                self.proc.err(f"WARNING: unconsumed flag {arg}\n")
                continue
            self.values[name] = value
        try:
            self._run()
        except _Failed:
            self.error("Could not run the task evaluation!")
            return 1
        return 0

    def _read(self, flag: str) -> bytes | None:
        path = self.values.get(flag, "")
        f = self.phone.fs.get(self.proc.resolve(path)) if path else None
        return None if f is None else f.read()

    def _lines(self, flag: str, what: str) -> list[str]:
        data = self._read(flag)
        if data is None:
            self.error(f"Could not read {what} file")
            raise _Failed
        return [line for line in data.decode(errors="replace").splitlines() if line.strip()]

    def _sleep(self, us: float) -> None:
        if self.scale > 0:
            self.proc.sleep(us / 1e6 * self.scale)

    def _run(self) -> None:
        fs = self.phone.fs
        folder = self.proc.resolve(self.values.get("ground_truth_images_path", "").rstrip("/") or ".")
        if not fs.is_dir(folder):
            self.error(f"Could not read directory: {folder}")
            raise _Failed
        images = sorted(f"{folder}/{name}" for name in fs.listdir(folder) if fs.get(f"{folder}/{name}") is not None)
        labels = self._lines("ground_truth_labels", "ground truth labels")
        if len(images) != len(labels):
            self.error("Number of images and ground truth labels is not same")
            raise _Failed
        count = int(self.values.get("num_images", "0") or 0)
        if count > 0:
            images = images[:count]
        classes = self._lines("model_output_labels", "model output labels")
        model = self._read("model_file")
        if not model:
            self.error(f"Could not build model from {self.values.get('model_file', '')}")
            raise _Failed
        threads = max(1, int(self.values.get("num_interpreter_threads", "1") or 1))
        if not classes:
            self.error("Number of labels does not match model output")
            raise _Failed
        prepare: list[float] = []
        infer: list[float] = []
        for path in images:
            f = fs.get(path)
            assert f is not None
            try:
                with Image.open(io.BytesIO(f.read())) as image:
                    if image.format != "JPEG":
                        raise UnidentifiedImageError(image.format)
                    width, height = image.size
            except (UnidentifiedImageError, OSError):
                self.error(f"Failed to decode image {path}")
                raise _Failed from None
            us = width * height * DECODE_NS_PER_PIXEL / 1e3 * (1 + self.rng.gauss(0, PREPARE_SPREAD))
            prepare.append(us)
            self._sleep(us)
            inference_us = (4000 + len(model) / 40) / threads**0.8 * (1 + self.rng.gauss(0, 0.02))
            infer.append(inference_us)
            self._sleep(inference_us)
        self.info(f"Num evaluation runs: {len(images)}")
        for what, values in (("Preprocessing", prepare), ("Inference", infer)):
            mean = sum(values) / len(values) if values else 0.0
            std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5 if values else 0.0
            self.info(f"{what} latency: avg={mean:g}(us), std_dev={int(std)}(us)")  # the proto's std is an int64
        for k in (1, 5):
            self.info(f"Top-{k} Accuracy: {min(1.0, k / max(len(classes), 1)):g}")


__all__ = ["FAKE_IMAGENET_EVAL_MARKER", "ImagenetEval", "imagenet_eval_binary", "program_for"]

"""The public qed dataset as published (``dataset/tflite_cnn_ops_gpu.csv`` and
``dataset/tflite_cnn_e2e.csv`` of qed-usc/mobile-ml-benchmark@40ba833), in small: the lines of a
few networks copied from our shared training files into files of the published names, in a
folder laid out like a clone of the repository. The columns are the published ones: our files
are a subset of the published rows with the same header."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from devicelab.predict import qed

PUBLISHED_OPS = "tflite_cnn_ops_gpu.csv"
PUBLISHED_E2E = "tflite_cnn_e2e.csv"


def _copy_lines(source: Path, target: Path, models: Sequence[str]) -> None:
    lines = source.read_text().splitlines(keepends=True)
    kept = [line for line in lines[1:] if line.split(",", 1)[0] in models]
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(lines[0] + "".join(kept))


def write_published(clone: Path, models: Sequence[str]) -> tuple[Path, Path]:
    """``clone/dataset/`` with the two published files holding ``models``' lines; their paths."""
    data = qed.default_data_dir()
    ops, e2e = clone / "dataset" / PUBLISHED_OPS, clone / "dataset" / PUBLISHED_E2E
    _copy_lines(data / qed.OPS_FILE, ops, models)
    _copy_lines(data / qed.E2E_FILE, e2e, models)
    return ops, e2e

"""``latencylab zoo export NAME OUT.tflite [--precision fp16]``: the zoo written as TFLite."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from devicelab.graph import load_graph_file, zoo
from devicelab.graph.tflite import graph_to_tflite_bytes
from devicelab.graph.tflite.wire import decode
from latencylab.cli import main


@pytest.mark.parametrize(("precision", "float16_tensors"), [(None, False), ("fp32", False), ("fp16", True)])
def test_zoo_export_tflite_writes_the_writers_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], precision: str | None, float16_tensors: bool
) -> None:
    out = tmp_path / "models" / "m.tflite"
    args = ["zoo", "export", "squeezenet_1_1", str(out), "--seed", "3"]
    assert main(args + (["--precision", precision] if precision else [])) == 0
    data = out.read_bytes()
    assert data == graph_to_tflite_bytes(zoo.build("squeezenet_1_1"), precision=precision or "fp32", seed=3)
    assert any(t.type == 1 for t in decode(data).tensors) == float16_tensors
    graph = load_graph_file(out)
    assert [t.shape for t in graph.tensors.values() if t.name in graph.outputs] == [(1, 1000)]
    printed = capsys.readouterr().out
    assert f"wrote squeezenet_1_1 to {out}" in printed and f"{precision or 'fp32'} weights" in printed


def test_precision_is_refused_for_other_formats(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["zoo", "export", "squeezenet_1_1", str(tmp_path / "m.onnx"), "--precision", "fp16"]) == 2
    assert "--precision applies to a .tflite output" in capsys.readouterr().err
    assert not (tmp_path / "m.onnx").exists()


def test_installed_entry_point_exports_tflite(tmp_path: Path) -> None:
    exe = shutil.which("latencylab") or str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "latencylab")
    out = tmp_path / "m.tflite"
    done = subprocess.run(
        [exe, "zoo", "export", "mobilenet_v1_0.25", str(out), "--precision", "fp16"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert out.read_bytes()[4:8] == b"TFL3"
    assert "fp16 weights" in done.stdout

"""The Django-free CLI commands: graph show, zoo list/export, nas sample."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

from devicelab.graph import load_graph_file, zoo
from latencylab.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "tiny-se-net.json"


def test_graph_show_prints_the_operator_table(capsys):
    assert main(["graph", "show", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out
    assert "se_scale" in out and "depthwise_conv2d" in out
    assert "13 operators" in out and "1.05K parameters" in out and "147.87K MACs" in out


def test_graph_show_json_has_costs(capsys):
    assert main(["graph", "show", str(EXAMPLE), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["macs"] == 147_872
    assert [r["name"] for r in doc["op_table"]][:2] == ["stem", "stem_bn"]


def test_graph_show_bad_file_is_a_clear_error(tmp_path, capsys):
    bad = tmp_path / "broken.onnx"
    bad.write_bytes(b"\x08\x07\x12\x04trunc")
    assert main(["graph", "show", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "broken.onnx" in err and "error" in err and "Traceback" not in err


def test_zoo_list_json(capsys):
    assert main(["zoo", "list", "--json"]) == 0
    items = json.loads(capsys.readouterr().out)
    names = {i["name"] for i in items}
    assert len(items) >= 20 and {"mobilenet_v2", "resnet18", "deeplab_v3_mnv2"} <= names
    mnv2 = next(i for i in items if i["name"] == "mobilenet_v2")
    assert mnv2["params"] == 3_504_872 and mnv2["input_shape"] == [1, 3, 224, 224] and mnv2["macs"] > 290e6
    assert sum(i["table1"] for i in items) == 6


def test_zoo_export_onnx_reads_back(tmp_path, capsys):
    out = tmp_path / "m.onnx"
    assert main(["zoo", "export", "squeezenet_1_1", str(out)]) == 0
    graph = load_graph_file(out)
    assert graph.params == zoo.build("squeezenet_1_1").params


def test_zoo_export_unknown_name(tmp_path, capsys):
    assert main(["zoo", "export", "resnet9000", str(tmp_path / "x.onnx")]) == 2
    assert "no zoo model named 'resnet9000'" in capsys.readouterr().err


def test_nas_sample_writes_graph_json_by_default(tmp_path, capsys):
    out = tmp_path / "s"
    assert main(["nas", "sample", "--space", "synthetic", "--n", "2", "--seed", "1", "--out", str(out)]) == 0
    assert "wrote 2 synthetic architectures as json" in capsys.readouterr().out
    files = sorted(out.iterdir())
    assert [f.suffix for f in files] == [".json", ".json"] and files[0].name.startswith("synthetic-1-")
    # No weights: a synthetic network is a few KB of graph JSON, not ~10 MB of ONNX.
    assert all(f.stat().st_size < 100_000 for f in files)
    assert load_graph_file(files[0]).params > 100_000


def test_nas_sample_writes_onnx_when_asked(tmp_path, capsys):
    argv = ["nas", "sample", "--space", "nb201", "--n", "3", "--seed", "7", "--out", str(tmp_path), "--format", "onnx"]
    assert main(argv) == 0
    assert "wrote 3 nb201 architectures as onnx" in capsys.readouterr().out
    files = sorted(tmp_path.glob("*.onnx"))
    assert len(files) == 3 and list(tmp_path.glob("*.json")) == []
    assert all(load_graph_file(f).tensors[load_graph_file(f).outputs[0]].shape == (1, 10) for f in files)


def test_installed_entry_point_runs():
    exe = shutil.which("latencylab") or str(Path(__file__).resolve().parents[2] / ".venv" / "bin" / "latencylab")
    done = subprocess.run([exe, "graph", "show", str(EXAMPLE)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "tiny-se-net" in done.stdout

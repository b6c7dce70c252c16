"""``latencylab nas sample``: architectures from the synthetic and NAS-Bench-201 spaces."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from latencylab.commands.output import fail


def add_parser(sub: Any) -> None:
    """Register ``nas`` and its sub-commands."""
    nas = sub.add_parser("nas", help="sample neural architectures")
    nsub = nas.add_subparsers(dest="nas_command", required=True, metavar="SUBCOMMAND")
    sample = nsub.add_parser("sample", help="write N sampled architectures as graph JSON (or ONNX)")
    sample.add_argument("--space", choices=["synthetic", "nb201"], required=True)
    sample.add_argument("--n", type=int, required=True)
    sample.add_argument("--seed", type=int, default=0)
    sample.add_argument("--out", required=True, help="output folder")
    # Graph JSON by default: what the API and the predictor read, a few KB a network. ONNX carries
    # random weights (100 synthetic networks are about 1 GB of them), so it is asked for by name.
    sample.add_argument(
        "--format",
        choices=["json", "onnx"],
        default="json",
        help="json: graph JSON, no weights (default); onnx: ONNX with random weights, for onnxruntime",
    )
    sample.set_defaults(func=sample_nas)


def sample_nas(args: argparse.Namespace) -> int:
    """Write sampled architectures to a folder."""
    from devicelab.graph import GraphError, graph_to_json
    from devicelab.graph.nas import sample

    if args.n < 1:
        return fail("--n must be at least 1")
    try:
        graphs = sample(args.space, args.n, args.seed)
    except GraphError as exc:
        return fail(str(exc))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for graph in graphs:
        if args.format == "json":
            (out / f"{graph.name}.json").write_text(graph_to_json(graph))
        else:
            from devicelab.graph.onnx import graph_to_onnx_bytes

            (out / f"{graph.name}.onnx").write_bytes(graph_to_onnx_bytes(graph))
    print(f"wrote {len(graphs)} {args.space} architectures as {args.format} to {out}")
    return 0

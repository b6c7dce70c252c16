"""``latencylab zoo list|export``: the built-in model zoo."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from latencylab.commands.output import fail, human, print_json, print_table


def add_parser(sub: Any) -> None:
    """Register ``zoo`` and its sub-commands."""
    zoo = sub.add_parser("zoo", help="the built-in model zoo (no downloads)")
    zsub = zoo.add_subparsers(dest="zoo_command", required=True, metavar="SUBCOMMAND")
    lst = zsub.add_parser("list", help="list zoo models with parameters and MACs")
    lst.add_argument("--json", action="store_true", help="print a JSON array")
    lst.set_defaults(func=list_zoo)
    exp = zsub.add_parser("export", help="write a zoo model as ONNX or TFLite (random weights) or graph JSON")
    exp.add_argument("name")
    exp.add_argument("out", help="output path; .json writes graph JSON, .tflite TFLite, anything else ONNX")
    exp.add_argument("--seed", type=int, default=0, help="seed of the random weights")
    exp.add_argument(
        "--precision",
        choices=["fp32", "fp16"],
        default=None,
        help="weights of a .tflite model: float32 (default) or float16 with DEQUANTIZE",
    )
    exp.set_defaults(func=export_zoo)


def list_zoo(args: argparse.Namespace) -> int:
    """Print the zoo."""
    from devicelab.graph import zoo

    items: list[dict[str, Any]] = []
    for name, entry in sorted(zoo.entries().items()):
        graph = zoo.build(name)
        items.append(
            {
                "name": name,
                "family": entry.family,
                "params": graph.params,
                "macs": graph.macs,
                "input_shape": list(entry.input_shape),
                "num_operators": len(graph.operators),
                "table1": entry.table1,
                "reference_params": entry.reference_params,
                "reference_macs": entry.reference_macs,
                "source": entry.source,
            }
        )
    if args.json:
        print_json(items)
    else:
        print_table(
            ["name", "family", "input", "params", "MACs", "ops"],
            [
                (
                    i["name"],
                    i["family"],
                    "x".join(map(str, i["input_shape"])),
                    human(i["params"]),
                    human(i["macs"]),
                    i["num_operators"],
                )
                for i in items
            ],
        )
    return 0


def export_zoo(args: argparse.Namespace) -> int:
    """Write one zoo model to a file."""
    from devicelab.graph import GraphError, graph_to_json, zoo

    try:
        graph = zoo.build(args.name)
    except GraphError as exc:
        return fail(str(exc))
    out = Path(args.out)
    if args.precision is not None and out.suffix != ".tflite":
        return fail(f"--precision applies to a .tflite output, not {out.name!r}")
    out.parent.mkdir(parents=True, exist_ok=True)
    if out.suffix == ".json":
        out.write_text(graph_to_json(graph, indent=1))
    elif out.suffix == ".tflite":
        from devicelab.graph.tflite import graph_to_tflite

        try:
            export = graph_to_tflite(graph, precision=args.precision or "fp32", seed=args.seed)
        except GraphError as exc:
            return fail(str(exc))
        out.write_bytes(export.data)
        print(
            f"wrote {args.name} to {out} ({len(graph.operators)} operators as {len(export.ops)} TFLite "
            f"operators, {export.precision} weights)"
        )
        return 0
    else:
        from devicelab.graph.onnx import graph_to_onnx_bytes

        out.write_bytes(graph_to_onnx_bytes(graph, seed=args.seed))
    print(f"wrote {args.name} to {out} ({len(graph.operators)} operators)")
    return 0

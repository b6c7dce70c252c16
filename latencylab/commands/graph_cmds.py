"""``latencylab graph show FILE``: the operator table, MACs and parameters of a model file."""

from __future__ import annotations

import argparse
from typing import Any

from latencylab.commands.output import fail, human, print_json, print_table


def add_parser(sub: Any) -> None:
    """Register ``graph`` and its sub-commands."""
    graph = sub.add_parser("graph", help="inspect model files (ONNX, TFLite, graph JSON)")
    gsub = graph.add_subparsers(dest="graph_command", required=True, metavar="SUBCOMMAND")
    show = gsub.add_parser("show", help="print the operator table, MACs and parameters")
    show.add_argument("file", help="an .onnx, .tflite or graph .json file")
    show.add_argument("--json", action="store_true", help="print the graph JSON with per-operator costs")
    show.set_defaults(func=show_graph)


def show_graph(args: argparse.Namespace) -> int:
    """Print a model's operator table."""
    from devicelab.graph import GraphError, graph_to_dict, load_graph_file

    try:
        graph = load_graph_file(args.file)
    except GraphError as exc:
        return fail(f"{args.file}: {exc}")
    if args.json:
        doc = graph_to_dict(graph)
        doc["summary"] = graph.summary()
        doc["op_table"] = graph.op_table()
        print_json(doc)
        return 0
    rows = [
        (
            r["index"],
            r["name"],
            r["type"],
            "x".join(map(str, r["output_shapes"][0])),
            human(r["macs"]),
            human(r["params"]),
        )
        for r in graph.op_table()
    ]
    print_table(["#", "name", "type", "output", "MACs", "params"], rows)
    s = graph.summary()
    print(
        f"\n{s['name']}: {s['num_operators']} operators, {human(s['macs'])} MACs, "
        f"{human(s['flops'])} FLOPs, {human(s['params'])} parameters"
    )
    return 0

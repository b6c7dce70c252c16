"""The single ``latencylab`` command: graph tools, the zoo, NAS samples, the service, and its API client."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from latencylab.commands import (
    client_cmds,
    fusion_cmds,
    graph_cmds,
    lab_cmds,
    nas_cmds,
    network_cmds,
    predictor_cmds,
    remote_cmds,
    selection_cmds,
    service_cmds,
    sharing_cmds,
    zoo_cmds,
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every sub-command."""
    parser = argparse.ArgumentParser(prog="latencylab", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    graph_cmds.add_parser(sub)
    zoo_cmds.add_parser(sub)
    nas_cmds.add_parser(sub)
    service_cmds.add_parsers(sub)
    lab_cmds.add_parsers(sub)
    predictor_cmds.add_parsers(sub)
    client_cmds.add_parsers(sub)
    fusion_cmds.add_parsers(sub)
    sharing_cmds.add_parsers(sub)
    selection_cmds.add_parsers(sub)
    remote_cmds.add_parsers(sub)
    network_cmds.add_parsers(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command; return its exit status (0 ok, 1 failed, 2 bad usage or bad input)."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())

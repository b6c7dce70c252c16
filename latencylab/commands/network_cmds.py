"""``latencylab network``: network profiles, and recording one from real transfers to the lab.

    latencylab network record home-wifi --sizes 16K,128K,512K,2M --rounds 3
    latencylab network list

``record`` times uploads and downloads between this machine and the server
(``latencylab.network_recording``) and stores them as the team's recorded profile, which
``latencylab select --network-profile``, simulations and remote runs can then name.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from latencylab.commands.client_cmds import ProgressBar, _add_server_arguments, _client, _with_client_errors
from latencylab.commands.output import print_table


def _sizes_argument(value: str) -> list[int]:
    from latencylab.network_recording import parse_size

    try:
        return [parse_size(part) for part in value.split(",") if part.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_parsers(sub: Any) -> None:
    """Register ``network`` with ``record`` and ``list``."""
    network = sub.add_parser("network", help="network profiles: list them, record one from real transfers")
    nsub = network.add_subparsers(dest="network_command", required=True, metavar="SUBCOMMAND")

    rec = nsub.add_parser("record", help="time uploads and downloads to the lab and store them as a profile")
    rec.add_argument("name", metavar="NAME", help="the profile's name (your team's; not a preset's)")
    rec.add_argument(
        "--sizes",
        type=_sizes_argument,
        metavar="S,...",
        help="transfer sizes, comma-separated, K and M binary (default 16K,128K,512K,2M; at most 8M each)",
    )
    rec.add_argument("--rounds", type=int, help="rounds of every size in each direction (default 3)")
    rec.add_argument("--seed", type=int, default=0, help="seeds the order of sizes within each round")
    rec.add_argument("--dry-run", action="store_true", help="time the transfers but store nothing")
    _add_server_arguments(rec)
    rec.set_defaults(func=_with_client_errors(run_record))

    listing = nsub.add_parser("list", help="the presets and your team's profiles")
    _add_server_arguments(listing)
    listing.set_defaults(func=_with_client_errors(run_list))


def _mbps(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


def run_record(args: argparse.Namespace) -> int:
    """Record a profile and print what was measured and fitted."""
    with _client(args) as client:
        bar = None if args.json else ProgressBar(sys.stderr)
        answer = client.record_network_profile(
            args.name,
            args.sizes,
            args.rounds,
            seed=args.seed,
            save=not args.dry_run,
            progress=None if bar is None else lambda done, total: bar.update(done / total, f"{done}/{total} transfers"),
        )
        if bar is not None:
            bar.close()
    if args.json:
        print(json.dumps(answer, indent=2))
        return 0
    rows: dict[tuple[str, int], list[float]] = {}
    for t in answer["transfers"]:
        rows.setdefault((t["direction"], t["bytes"]), []).append(t["seconds"] * 1e3)
    print_table(
        ["direction", "bytes", "n", "median ms", "min ms", "max ms"],
        [
            [d, n, len(ms), f"{sorted(ms)[len(ms) // 2]:.2f}", f"{min(ms):.2f}", f"{max(ms):.2f}"]
            for (d, n), ms in sorted(rows.items())
        ],
    )
    print(f"\nupload {_mbps(answer['upload_mbps'])} Mbit/s, download {_mbps(answer['download_mbps'])} Mbit/s")
    stored = answer["profile"]
    if stored is None:
        print("dry run: nothing stored")
        return 0
    per_byte = stored["ms_per_byte"]
    mbps = "-" if not per_byte else f"{8.0 / per_byte / 1e3:.1f}"
    print(
        f"stored {stored['name']!r} (id {stored['id']}): latency {stored['latency_ms']:.2f} ms, "
        f"throughput {mbps} Mbit/s, spread (cv) {stored['cv']:.2f}"
    )
    return 0


def run_list(args: argparse.Namespace) -> int:
    """Print every profile a selection can name."""
    with _client(args) as client:
        profiles = client.network_profiles()
    if args.json:
        print(json.dumps(profiles, indent=2))
        return 0
    print_table(
        ["name", "kind", "latency ms", "Mbit/s", "cv", "330 KB ms", "source"],
        [
            [
                p["name"],
                p["stored_kind"],
                f"{p['latency_ms']:.1f}",
                _mbps(p.get("throughput_mbps")),
                f"{p['cv']:.2f}",
                f"{p['transfer_330kb_ms']:.1f}",
                (p.get("source") or "")[:60],
            ]
            for p in profiles
        ],
    )
    return 0


__all__ = ["add_parsers", "run_list", "run_record"]

"""Benchmark: where a remote request's time goes, each part timed on its own (issue 35 item 7;
seed 002, section 4).

Serves a zoo model on loopback (``devicelab.remote.client.run_remote_scenario``) and measures it
under an unshaped link, a fixed 2 MB/s 25 ms link and the paper's presets, interleaved. Each
request's upload is timed by the client around its sends, the server by its own clock, the
download as the delay the server says it waited plus the client's receiving from the first byte
to the last; the remainder is the end to end less the three, what no clock attributes.

Prints per link the medians of upload, server, download, remainder and end to end, and the
remainder's p90 and maximum; writes ``<var>/benchmarks/remote_parts.json`` (each link's
``RemoteMeasurement.as_dict()`` without the requests, and the machine's load).

    python benchmarks/remote_parts.py
    python benchmarks/remote_parts.py --model mobilenet_v1 --requests 20 --warmup 3
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as `python benchmarks/remote_parts.py` without an install
    sys.path.insert(0, str(ROOT))

OUT = Path(os.environ.get("LATENCYLAB_VAR_DIR") or ROOT / "var") / "benchmarks" / "remote_parts.json"
PRESETS = ("campus_wifi", "lte", "cellular_hotspot")


def main(argv: list[str] | None = None) -> int:
    """Measure the links, print the table, write the JSON."""
    import numpy as np

    from devicelab.graph.zoo.registry import build
    from devicelab.remote.client import profile_draw, run_remote_scenario
    from devicelab.remote.shaping import LinkShape
    from devicelab.selection.network_profiles import NetworkProfile

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="mobilenet_v1")
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)

    links: dict[str, Any] = {"unshaped": None, "2 MB/s, 25 ms": LinkShape(2e6, 2e6, 25.0)}
    links.update({name: profile_draw(NetworkProfile.preset(name)) for name in PRESETS})
    load_before = os.getloadavg()[0]
    scenario = run_remote_scenario(
        build(args.model), links, requests=args.requests, warmup=args.warmup, rng=np.random.default_rng(args.seed)
    )
    print(
        f"{args.model}, {scenario.payload_bytes:,}-byte {scenario.content_type}, {args.requests} requests per link "
        f"after {args.warmup} warm-up; load average {load_before:.1f} -> {os.getloadavg()[0]:.1f}"
    )
    print("medians in ms; remainder = end to end - upload - server - download, each part timed on its own")
    head = (
        f"{'link':<18}{'upload':>9}{'server':>9}{'download':>10}{'remainder':>11}{'rem p90':>9}{'rem max':>9}{'e2e':>9}"
    )
    print(head)
    for name, m in scenario.results.items():
        print(
            f"{name:<18}{m.upload.median:>9.1f}{m.server.median:>9.1f}{m.download.median:>10.1f}"
            f"{m.remainder.median:>11.2f}{m.remainder.p90:>9.2f}{m.remainder.max:>9.2f}{m.e2e.median:>9.1f}"
        )
    out = {
        "model": args.model,
        "payload_bytes": scenario.payload_bytes,
        "load_ms": scenario.load_ms,
        "requests": args.requests,
        "warmup": args.warmup,
        "seed": args.seed,
        "machine": {"python": platform.python_version(), "cpus": os.cpu_count(), "load_average": os.getloadavg()},
        "links": {n: {k: v for k, v in m.as_dict().items() if k != "requests"} for n, m in scenario.results.items()},
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(out, indent=1))
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

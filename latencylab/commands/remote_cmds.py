"""``latencylab remote``: remote runs (a model served by a lab machine, measured from a client under
network profiles) through the API client.

    latencylab remote run --model 3 --device host-cpu --profiles campus_wifi,lte --requests 20 --wait
    latencylab remote show 12

The server and token come from ``--url`` / ``--token`` or ``LATENCYLAB_URL`` / ``LATENCYLAB_TOKEN``;
errors are one line on stderr (exit 2 for bad input, 1 otherwise), as for ``latencylab sharing``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from devicelab.remote.spec import RemoteSettings
from latencylab.commands.client_cmds import (
    _add_server_arguments,
    _client,
    _cores_argument,
    _model_argument,
    _with_client_errors,
)
from latencylab.commands.experiment_cmds import (
    add_wait_arguments,
    print_data,
    print_job_state,
    print_queued,
)
from latencylab.commands.output import print_table
from latencylab.commands.spec_flags import add_spec_flags, spec_values


def _profile_list(value: str) -> list[str]:
    """``--profiles campus_wifi,lte,unshaped``: network profile names, comma-separated."""
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name at least one network profile (campus_wifi, lte, unshaped, ...)")
    return names


def add_parsers(sub: Any) -> None:
    """Register ``remote`` with ``run`` and ``show``."""
    remote = sub.add_parser("remote", help="remote runs: a model served by a lab machine, measured under networks")
    rsub = remote.add_subparsers(dest="remote_command", required=True, metavar="SUBCOMMAND")

    run = rsub.add_parser("run", help="queue a remote run of an image model on a CPU device under network profiles")
    run.add_argument("--model", required=True, help="an image model's id, or an .onnx / graph .json file to upload")
    run.add_argument("--device", required=True, help="the CPU device (its name or id) that serves the model")
    # every field of RemoteSettings, as its declaration says
    add_spec_flags(
        run,
        RemoteSettings,
        types={"profiles": _profile_list, "cores": _cores_argument},
        metavars={"profiles": "P,...", "cores": "CORES"},
        notes={"profiles": "Here comma-separated.", "cores": "Here ids as 0-3 or 0,2."},
        required=("profiles",),
    )
    add_wait_arguments(run)
    _add_server_arguments(run)
    run.set_defaults(func=run_remote)

    show = rsub.add_parser("show", help="a remote run's state and, per profile, where its time went")
    show.add_argument("run", type=int, metavar="RUN_ID")
    _add_server_arguments(show)
    show.set_defaults(func=run_show)


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value:.1f}"


def _remainder(value: Any) -> str:
    # sub-millisecond: one decimal would show most of them as 0.0 or -0.0
    return "-" if value is None else f"{value:.2f}"


def print_run(job: dict[str, Any]) -> None:
    """A run's state, and once it succeeded one line per profile: the medians of upload, server
    (and its compute), download, the remainder none of them holds and end to end, the end to
    end's p90, and the network's share."""
    s = job.get("settings") or {}
    print(
        f"remote run #{job['id']} {job['state']}: {job.get('model_name')} served by {job.get('device_name')} "
        f"under {', '.join(s.get('profiles') or ()) or '-'} ({s.get('requests')} requests and {s.get('warmup')} "
        f"warm-up per profile, {s.get('payload')} payload)"
    )
    print_job_state(job)
    result = job.get("result")
    if not result:
        return
    env = result.get("environment") or {}
    print(
        f"{result['payload']} payload of {result['payload_bytes']:,} bytes; model load {_ms(result['load_ms'])} ms "
        f"(once, before the first request); {env.get('runtime', '?')}, {env.get('threads', '?')} thread(s); "
        f"measured in {result['elapsed_s']:.1f} s"
    )
    print(
        "\nmedians in ms, each part timed on its own; remainder = what none of them holds (end to end less the "
        "three); network share = (upload + download) / end to end, of the means"
    )
    print_table(
        ["profile", "upload", "server", "compute", "download", "remainder", "end to end", "e2e p90", "network"],
        [
            (
                p["profile"],
                _ms(p["upload_median_ms"]),
                _ms(p["server_median_ms"]),
                _ms(p["compute_median_ms"]),
                _ms(p["download_median_ms"]),
                _remainder(p.get("remainder_median_ms")),
                _ms(p["e2e_median_ms"]),
                _ms(p["e2e_p90_ms"]),
                f"{p['network_share']:.0%}",
            )
            for p in result["profiles"]
        ],
    )


@_with_client_errors
def run_remote(args: argparse.Namespace) -> int:
    """``latencylab remote run --model M --device D --profiles P,...``: queue a run (and with --wait,
    what it measured)."""
    from latencylab.client import InputError

    if isinstance(args.cores, str):
        raise InputError(f"--cores takes CPU ids (0-3 or 0,2), not {args.cores!r}: a CPU device has no named clusters")
    try:
        settings = spec_values(args, RemoteSettings)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    model = _model_argument(args.model)
    with _client(args) as client:
        handle = client.remote_run(model, args.device, settings.pop("profiles"), **settings)
        print(f"remote run #{handle.id} queued on {handle.data.get('device_name', args.device)}", file=sys.stderr)
        return print_queued(handle, args, print_run)


@_with_client_errors
def run_show(args: argparse.Namespace) -> int:
    """``latencylab remote show RUN_ID``: a run's state and, per profile, where its time went."""
    from latencylab.client import InputError

    with _client(args) as client:
        kind = client.job(args.run).data.get("kind")
        if kind != "remote_scenario":
            raise InputError(f"job #{args.run} is a {kind or 'profiling'} job, not a remote run")
        data = client.remote_run_status(args.run).data
    print_data(args, data, print_run)
    return 0


__all__ = ["add_parsers", "print_run", "run_remote", "run_show"]

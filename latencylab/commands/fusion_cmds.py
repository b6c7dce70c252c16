"""``latencylab fusion``: fusion sweeps and plans through the API client.

    latencylab fusion sweep --device pocl-cpu --models mobilenet_v2,squeezenet_1_0 --sizes 2,3 --wait
    latencylab fusion rows 12 --contains DWC --variant rounded
    latencylab fusion show 12
    latencylab fusion plan --device pocl-cpu --models mobilenet_v2,mobilenet_v2 --sweep 12 --wait

The server and token come from ``--url`` / ``--token`` or ``LATENCYLAB_URL`` / ``LATENCYLAB_TOKEN``;
errors are one line on stderr (exit 2 for bad input, 1 otherwise), as for ``latencylab profile``.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from devicelab.fusion.spec import KINDS, PRECISIONS, PlanOptions, SweepSpec
from devicelab.measure.ratios import RatioEstimate
from devicelab.spec import declared
from devicelab.text import one_line
from latencylab.commands.client_cmds import _add_server_arguments, _client, _with_client_errors
from latencylab.commands.experiment_cmds import (
    add_wait_arguments,
    print_data,
    print_found_rows,
    print_job_state,
    print_queued,
)
from latencylab.commands.output import print_table
from latencylab.commands.spec_flags import add_spec_flags, comma_list, spec_values

VARIANTS = ("rounded", "unrounded")
EXPERIMENTS = ("combination", "identical")
# the rows' filters name kinds as a sweep's spec does, checked by the same declaration
_kind_list = comma_list(declared(SweepSpec, "kinds"))


def _networks_argument(value: str) -> dict[str, list[Any]]:
    """``--models mobilenet_v2,7``: zoo names and model ids (numbers), mixed, in order."""
    zoo: list[str] = []
    ids: list[int] = []
    for part in (p.strip() for p in value.split(",")):
        if not part:
            continue
        if part.isdigit():
            ids.append(int(part))
        else:
            zoo.append(part)
    if not zoo and not ids:
        raise argparse.ArgumentTypeError("name at least one zoo network or model id")
    return {"zoo": zoo, "models": ids}


def _sweep_argument(value: str) -> int | bool:
    """``--sweep 12`` or ``--sweep none``."""
    if value.lower() == "none":
        return False
    if value.isdigit() and int(value) >= 1:
        return int(value)
    raise argparse.ArgumentTypeError(f"{value!r} is neither a sweep id nor 'none'")


def add_parsers(sub: Any) -> None:
    """Register ``fusion`` with ``sweep``, ``rows``, ``show`` and ``plan``."""
    fusion = sub.add_parser("fusion", help="fusion sweeps and plans of independent OpenCL kernels (ParallelFusion)")
    fsub = fusion.add_subparsers(dest="fusion_command", required=True, metavar="SUBCOMMAND")

    sweep = fsub.add_parser("sweep", help="queue a sweep of 2- and 3-combinations of operator kinds on a device")
    sweep.add_argument("--device", required=True, help="an OpenCL device's name or id")
    sweep.add_argument(
        "--models",
        type=_networks_argument,
        metavar="NETS",
        help="zoo names and/or model ids, comma-separated (default: the six networks of table 1)",
    )
    # every field of SweepSpec, as its declaration says (--time-budget for time_budget_s)
    add_spec_flags(
        sweep,
        SweepSpec,
        metavars={"max_combinations": "K", "time_budget_s": "SECONDS", "wave_size": "N"},
        notes={"kinds": f"Here comma-separated: {','.join(KINDS)}."},
    )
    sweep.add_argument(
        "--no-identical", action="store_true", help="skip figure 9's N identical operators (--identical-counts '')"
    )
    sweep.add_argument("--precision", choices=PRECISIONS, help="default fp32")
    add_wait_arguments(sweep)
    _add_server_arguments(sweep)
    sweep.set_defaults(func=run_sweep)

    rows = fsub.add_parser("rows", help="a succeeded sweep's rows: throughput of fused vs sequential per set")
    rows.add_argument("sweep", type=int, metavar="SWEEP_ID")
    rows.add_argument("--kinds", type=_kind_list, help="exactly this combination (any order), e.g. C,DWC")
    rows.add_argument("--contains", type=_kind_list, help="rows that contain every one of these kinds")
    rows.add_argument("--size", type=int, help="rows that fuse this many operators")
    rows.add_argument("--variant", choices=VARIANTS, help="rounded to the wave or not")
    rows.add_argument("--experiment", choices=EXPERIMENTS, help="combinations (figure 8) or identical (figure 9)")
    errors = rows.add_mutually_exclusive_group()
    errors.add_argument("--errors", dest="errors", action="store_const", const=True, help="only refused sets")
    errors.add_argument("--no-errors", dest="errors", action="store_const", const=False, help="only measured rows")
    _add_server_arguments(rows)
    rows.set_defaults(func=run_rows)

    show = fsub.add_parser("show", help="a sweep's or plan's state and result summary")
    show.add_argument("id", type=int, metavar="ID", help="the sweep's or plan's (job) id")
    _add_server_arguments(show)
    show.set_defaults(func=run_show)

    plan = fsub.add_parser("plan", help="plan fusion for networks run together and compare it end to end")
    plan.add_argument("--device", required=True, help="an OpenCL device's name or id")
    plan.add_argument(
        "--models",
        type=_networks_argument,
        metavar="NETS",
        help="zoo names and/or model ids, comma-separated; repeat one to run it twice (default: "
        "mobilenet_v2,mobilenet_v2)",
    )
    plan.add_argument(
        "--sweep",
        type=_sweep_argument,
        metavar="ID|none",
        help="the sweep whose measurements the planner uses (default: the newest on the device; none: no sweep)",
    )
    # every option of PlanOptions, as its declaration says (--round/--no-round for round_to_wave)
    add_spec_flags(plan, PlanOptions, metavars={"max_group": "N"})
    plan.add_argument("--precision", choices=PRECISIONS, help="default fp32")
    add_wait_arguments(plan)
    _add_server_arguments(plan)
    plan.set_defaults(func=run_plan)


def _given(args: argparse.Namespace, spec: type) -> dict[str, Any]:
    """The fields of ``spec`` its flags gave, checked by its declaration."""
    from latencylab.client import InputError

    try:
        return spec_values(args, spec)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _spec(args: argparse.Namespace) -> dict[str, Any]:
    spec = _given(args, SweepSpec)
    if args.no_identical:
        spec["identical_counts"] = []
    return spec


def _networks(args: argparse.Namespace) -> dict[str, Any]:
    return dict(args.models) if args.models else {}


def _networks_text(settings: dict[str, Any]) -> str:
    names = list(settings.get("zoo") or []) + list(settings.get("model_names") or [])
    return ", ".join(names) or "-"


def _ratio(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def print_sweep(job: dict[str, Any]) -> None:
    """A sweep's state, and once it succeeded what it measured: sets, rows and their checks,
    throughput per size and variant, notes."""
    settings = job.get("settings") or {}
    spec = settings.get("spec") or {}
    print(
        f"fusion sweep #{job['id']} {job['state']} on {job.get('device_name')}: {_networks_text(settings)} "
        f"({settings.get('precision', '?')}, sizes {spec.get('sizes')}, kinds {','.join(spec.get('kinds') or [])})"
    )
    print_job_state(job)
    result = job.get("result")
    if not result:
        return
    sampled = " (sampled)" if result.get("sampled") else ""
    print(
        f"measured {result['measured_units']} of {result['planned_units']} sets in {result['elapsed_s']:.1f} s "
        f"on {result['device_name']} (wave {result['wave_size']}){sampled}"
    )
    combos = "; ".join(f"size {c['size']}: {c['planned']} of {c['total']}" for c in result.get("combinations") or [])
    if combos:
        print(f"combinations of kinds: {combos}")
    counts = result["row_counts"]
    print(
        f"rows: {counts['total']} ({counts['correct']} correct, {counts['incorrect']} incorrect, "
        f"{counts['errors']} refused)"
    )
    if result.get("headlines"):
        print("\nsequential / fused time, paired over rounds (> 1: fusion wins; counted by each row's 95 % interval):")
        print_table(
            ["sets", "variant", "n", "above 1", "below 1", "within noise", "median span", "median busy", "min..max"],
            [
                (
                    h["sets"],
                    h["variant"],
                    h["count"],
                    f"{h['above']} ({h['share_above_1']:.0%})",
                    h["below"],
                    h["within_noise"],
                    _ratio(h["median"]),
                    "-" if h.get("busy_median") is None else _ratio(h["busy_median"]),
                    f"{h['min']:.2f}..{h['max']:.2f}",
                )
                for h in result["headlines"]
            ],
        )
    for note in result.get("notes") or ():
        print(f"note: {note}")
    print(f"\nrows: latencylab fusion rows {job['id']}")


def _estimate_text(raw: Any) -> str | None:
    """A stored ratio estimate as ``1.044x [1.012-1.071]`` (+ "within noise"); None if not one."""
    if not isinstance(raw, dict):
        return None
    try:
        return RatioEstimate.from_dict(raw).label(3)
    except (ValueError, TypeError):
        return None


def _paired(raw: Any, fallback: float) -> tuple[str, str]:
    """A strategy's paired span ratio with its interval, and its busy ratio."""
    raw = raw if isinstance(raw, dict) else {}
    span = _estimate_text(raw.get("ratio")) or f"{_ratio(fallback)} (no interval stored)"
    return span, _estimate_text(raw.get("busy_ratio")) or "-"


def print_plan(job: dict[str, Any]) -> None:
    """A plan's state, and once it succeeded the three strategies' end-to-end times."""
    settings = job.get("settings") or {}
    sweep = settings.get("sweep")
    print(
        f"fusion plan #{job['id']} {job['state']} on {job.get('device_name')}: {_networks_text(settings)} "
        f"({'sweep #' + str(sweep) if sweep else 'no sweep: the latency model'})"
    )
    print_job_state(job)
    result = job.get("result")
    if not result:
        return
    ratios = (result.get("data") or {}).get("ratios") or {}
    # The ratio column is the paired estimate (both strategies in every round), never the quotient
    # of the two medians beside it: 45.5 against 31.9 ms medians was a paired 1.04x.
    print_table(
        ["strategy", "median ms", "sequential / strategy, paired [95 % interval]", "busy ratio"],
        [
            ("sequential", f"{result['sequential_ms']:.3f}", "reference", ""),
            ("plan", f"{result['plan_ms']:.3f}", *_paired(ratios.get("plan"), result["plan_ratio"])),
            ("fuse all", f"{result['fuse_all_ms']:.3f}", *_paired(ratios.get("fuse_all"), result["fuse_all_ratio"])),
        ],
    )
    print("outputs: " + ("both fused strategies match sequential" if result["correct"] else "MISMATCH (see data)"))


@_with_client_errors
def run_sweep(args: argparse.Namespace) -> int:
    """``latencylab fusion sweep --device D ...``: queue a sweep (and with --wait, its result)."""
    spec = _spec(args)
    with _client(args) as client:
        handle = client.fusion_sweep(args.device, precision=args.precision, spec=spec, **_networks(args))
        print(f"fusion sweep #{handle.id} queued on {handle.data.get('device_name', args.device)}", file=sys.stderr)
        return print_queued(handle, args, print_sweep)


@_with_client_errors
def run_plan(args: argparse.Namespace) -> int:
    """``latencylab fusion plan --device D ...``: queue a plan (and with --wait, its comparison)."""
    options = _given(args, PlanOptions)
    with _client(args) as client:
        handle = client.fusion_plan(
            args.device, precision=args.precision, options=options, sweep=args.sweep, **_networks(args)
        )
        print(f"fusion plan #{handle.id} queued on {handle.data.get('device_name', args.device)}", file=sys.stderr)
        return print_queued(handle, args, print_plan)


def _check(row: dict[str, Any]) -> str:
    if row.get("error"):
        # Cut in the middle: the fuser's reason names the cause last.
        return one_line("refused: " + str(row["error"]), 70)
    return {True: "ok", False: "WRONG", None: "-"}[row.get("correct")]


def print_rows(rows: list[dict[str, Any]]) -> None:
    """Rows as a table: kinds (``N x kind`` for identical operators), variant, the paired span
    ratio with its verdict (and interval, when the rows carry their data), the busy ratio, MFLOPs,
    padding, the check."""
    table = []
    for r in rows:
        stored = _estimate_text((r.get("data") or {}).get("ratio"))
        verdict = r.get("verdict") or "no interval"
        throughput = "-" if r.get("throughput") is None else stored or f"{r['throughput']:.3f}x {verdict}"
        busy = "-" if r.get("busy_ratio") is None else f"{r['busy_ratio']:.3f}x"
        padding = "-" if r.get("padding_fraction") is None else f"{r['padding_fraction']:.0%}"
        # figure 9's rows fuse N copies of one operator: "2 x C_1x1", not a combination of kinds
        kinds = f"{r['size']} x {r['kinds'][0]}" if r.get("experiment") == "identical" else "+".join(r["kinds"])
        table.append((kinds, r["variant"], throughput, busy, f"{r['total_mflops']:.2f}", padding, _check(r)))
    print_table(["kinds", "variant", "span ratio", "busy ratio", "MFLOPs", "padding", "check"], table)


@_with_client_errors
def run_rows(args: argparse.Namespace) -> int:
    """``latencylab fusion rows SWEEP_ID [filters]``: the rows as a table (or JSON)."""
    with _client(args) as client:
        rows = client.fusion_rows(
            args.sweep,
            experiment=args.experiment,
            size=args.size,
            variant=args.variant,
            kinds=args.kinds,
            contains=args.contains,
            errors=args.errors,
        )
    print_found_rows(
        args,
        rows,
        print_rows,
        "span ratio = sequential / fused device span, paired over rounds; above / below: its 95 % interval "
        "excludes 1; busy ratio: the same on the kernels' own times",
    )
    return 0


@_with_client_errors
def run_show(args: argparse.Namespace) -> int:
    """``latencylab fusion show ID``: a sweep's or plan's state and result."""
    from latencylab.client import InputError

    with _client(args) as client:
        kind = client.job(args.id).data.get("kind")
        if kind == "fusion_sweep":
            data, printer = client.fusion_sweep_status(args.id).data, print_sweep
        elif kind == "fusion_plan":
            data, printer = client.fusion_plan_status(args.id).data, print_plan
        else:
            raise InputError(f"job #{args.id} is a {kind or 'profiling'} job, not a fusion sweep or plan")
    print_data(args, data, printer)
    return 0


__all__ = ["add_parsers", "print_plan", "print_rows", "print_sweep", "run_plan", "run_rows", "run_show", "run_sweep"]

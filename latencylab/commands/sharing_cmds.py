"""``latencylab sharing``: sharing sweeps (R tenants on one OpenCL device) through the API client.

    latencylab sharing sweep --device pocl-cpu --shape 256x128x1152 --tenants 1,2,4,...,120 --wait
    latencylab sharing sweep --device pocl-cpu --networks resnet18,mobilenet_v2 --tenants 1,2,4,8
    latencylab sharing rows 12 --workload 256x128x1152 --strategy space_time
    latencylab sharing show 12
    latencylab sharing online --device pocl-cpu --workload 256x128x1152 --tenants 8 --load 0.8 --wait

The server and token come from ``--url`` / ``--token`` or ``LATENCYLAB_URL`` / ``LATENCYLAB_TOKEN``;
errors are one line on stderr (exit 2 for bad input, 1 otherwise), as for ``latencylab fusion``.
"""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from devicelab.tenancy.online_spec import ONLINE_POLICIES, OnlineSpec
from devicelab.tenancy.spec import STRATEGIES, SharingSpec
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
from latencylab.commands.spec_flags import add_spec_flags, spec_values

# server.tenancy.models.SharingStatus (tests/cli check they agree), written out: the rows' filter.
STATUSES = ("ok", "memory_bound", "unsupported", "error")
_SHAPE = re.compile(r"^([0-9]+)x([0-9]+)x([0-9]+)$")
ELLIPSIS = "..."


def _shape_list(value: str) -> list[list[int]]:
    """``--shape 256x128x1152`` (or several, comma-separated): SGEMM shapes as ``[m, n, k]``."""
    shapes = []
    for part in (p.strip().lower() for p in value.split(",")):
        match = _SHAPE.match(part)
        if match is None or min(int(v) for v in match.groups()) < 1:
            raise argparse.ArgumentTypeError(f"{part!r} is not a shape MxNxK of positive sizes (256x128x1152)")
        shapes.append([int(v) for v in match.groups()])
    return shapes


def _name_list(value: str) -> list[str]:
    """``--networks resnet18,mobilenet_v2``: names, comma-separated."""
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name at least one network")
    return names


def _megabytes(value: str) -> dict[str, int]:
    """``--memory-cap-mb 500``: the memory cap in MB, as ``memory_cap_bytes``."""
    try:
        megabytes = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of MB (500)") from None
    return {"memory_cap_bytes": int(megabytes * 1e6)}


def _continued(head: list[int], last: int) -> list[int]:
    """``head`` continued up to ``last``: geometrically when it starts so (1,2,4 -> 8, 16, ...),
    else arithmetically when its steps agree (1,2 -> 3, 4, ...); ``last`` ends the list."""
    pairs = list(zip(head, head[1:], strict=False))
    ratio, step = head[1] // head[0], head[1] - head[0]
    geometric = len(head) >= 3 and ratio > 1 and all(b == a * ratio for a, b in pairs)
    if not geometric and not (step > 0 and all(b - a == step for a, b in pairs)):
        raise argparse.ArgumentTypeError(
            f"cannot continue {','.join(map(str, head))},...: start an increasing arithmetic (1,2,...) or "
            "geometric (1,2,4,...) progression"
        )
    if last <= head[-1]:
        raise argparse.ArgumentTypeError(f"the count after '...' ({last}) must be larger than {head[-1]}")
    values = list(head)
    while (following := values[-1] * ratio if geometric else values[-1] + step) < last:
        values.append(following)
    return [*values, last]


def _tenants_argument(value: str) -> list[int]:
    """``--tenants 1,2,4,8`` or ``1,2,4,...,120`` (continued geometrically up to 120: 1, 2, 4, 8,
    16, 32, 64, 120) or ``1,2,...,6`` (arithmetically): the R values."""
    parts = [p.strip() for p in value.split(",") if p.strip()]
    counts = [p for p in parts if p != ELLIPSIS]
    if not counts or not all(p.isascii() and p.isdigit() and int(p) >= 1 for p in counts):
        raise argparse.ArgumentTypeError(f"{value!r} is not a comma-separated list of tenant counts (1,2,4,...,120)")
    if ELLIPSIS not in parts:
        return [int(p) for p in parts]
    at = parts.index(ELLIPSIS)
    if parts.count(ELLIPSIS) != 1 or at < 2 or at != len(parts) - 2:
        raise argparse.ArgumentTypeError(f"{value!r}: write at least two counts, '...', then the last (1,2,4,...,120)")
    return _continued([int(p) for p in parts[:at]], int(parts[-1]))


def add_parsers(sub: Any) -> None:
    """Register ``sharing`` with ``sweep``, ``rows`` and ``show``."""
    sharing = sub.add_parser("sharing", help="sharing sweeps: R tenants on one OpenCL device, four ways (seed 003)")
    ssub = sharing.add_subparsers(dest="sharing_command", required=True, metavar="SUBCOMMAND")

    sweep = ssub.add_parser("sweep", help="queue a sweep of SGEMM shapes and networks over R tenants on a device")
    sweep.add_argument("--device", required=True, help="an OpenCL device's name or id")
    # every field of SharingSpec, as its declaration says (--shape, repeatable; --memory-cap-mb in MB)
    add_spec_flags(
        sweep,
        SharingSpec,
        types={
            "shapes": _shape_list,
            "networks": _name_list,
            "tenants": _tenants_argument,
            "memory_cap_bytes": _megabytes,
        },
        metavars={
            "shapes": "MxNxK",
            "networks": "NETS",
            "tenants": "R,...",
            "strategies": "S,...",
            "memory_cap_bytes": "MB",
        },
        notes={
            "shapes": "Here MxNxK, repeated or comma-separated; with --networks and no --shape, networks only.",
            "tenants": "Here comma-separated; 1,2,4,...,120 continues the pattern up to 120.",
            "strategies": f"Here comma-separated, among {', '.join(STRATEGIES)}.",
            "memory_cap_bytes": "Here in MB.",
        },
        extend=("shapes",),
    )
    sweep.add_argument(
        "--time-budget",
        type=float,
        metavar="SECONDS",
        help="stop measuring after this long and keep what was measured (default: the server's task limit)",
    )
    add_wait_arguments(sweep)
    _add_server_arguments(sweep)
    sweep.set_defaults(func=run_sweep)

    rows = ssub.add_parser("rows", help="a succeeded sweep's rows: throughput, latency, stragglers, memory, checks")
    rows.add_argument("sweep", type=int, metavar="SWEEP_ID")
    rows.add_argument("--workload", help="a shape's MxNxK or a network's name")
    rows.add_argument("--strategy", choices=STRATEGIES)
    rows.add_argument("--tenants", type=int, metavar="R", help="rows at this R")
    rows.add_argument("--status", choices=STATUSES, help="ok (measured), memory_bound, unsupported or error")
    _add_server_arguments(rows)
    rows.set_defaults(func=run_rows)

    online = ssub.add_parser("online", help="replay one arrival trace of R tenants under every scheduling policy")
    online.add_argument("--device", required=True, help="an OpenCL device's name or id")
    # every field of OnlineSpec, as its declaration says
    add_spec_flags(
        online,
        OnlineSpec,
        metavars={"workload": "MxNxK|NET", "tenants": "R", "policies": "P,..."},
        notes={"policies": f"Here comma-separated, among {', '.join(ONLINE_POLICIES)}."},
    )
    add_wait_arguments(online)
    _add_server_arguments(online)
    online.set_defaults(func=run_online)

    show = ssub.add_parser("show", help="a sweep's state, summary and table 1")
    show.add_argument("sweep", type=int, metavar="SWEEP_ID")
    _add_server_arguments(show)
    show.set_defaults(func=run_show)


def _spec(args: argparse.Namespace) -> dict[str, Any]:
    """The spec the flags give (keys left out take the server's defaults)."""
    from latencylab.client import InputError

    try:
        spec = spec_values(args, SharingSpec)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if "networks" in spec:
        spec.setdefault("shapes", [])  # networks alone, unless shapes were named too
    return spec


def _join(values: Any) -> str:
    return ",".join(str(v) for v in values or ())


def _shape_names(spec: dict[str, Any]) -> list[str]:
    return ["x".join(str(v) for v in s) for s in spec.get("shapes") or ()]


def _plural(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def print_sweep(job: dict[str, Any]) -> None:
    """A sweep's state, and once it succeeded what it measured: rows and checks, the ceiling,
    table 1, the largest R per strategy, what the time budget left out, notes."""
    spec = (job.get("settings") or {}).get("spec") or {}
    workloads = _shape_names(spec) + list(spec.get("networks") or ())
    print(
        f"sharing sweep #{job['id']} {job['state']} on {job.get('device_name')}: {', '.join(workloads) or '-'}; "
        f"R {_join(spec.get('tenants'))}; {', '.join(spec.get('strategies') or ())} "
        f"({spec.get('runs')} runs, {spec.get('warmup')} warm-up)"
    )
    print_job_state(job)
    result = job.get("result")
    if not result:
        return
    print(f"measured in {result['elapsed_s']:.1f} s on {result['device_name']}")
    if not result["complete"]:
        left = ", ".join(f"{u['workload']} R={u['tenants']}" for u in result["not_measured"])
        budget = result.get("time_budget_s")
        print(
            f"incomplete: the time budget{f' of {budget:.0f} s' if budget else ''} left "
            f"{_plural(len(result['not_measured']), 'unit')} out: {left}"
        )
    c = result["row_counts"]
    incorrect = f"{c['incorrect']} INCORRECT" if c["incorrect"] else "0 incorrect"
    print(
        f"rows: {c['total']} ({c['ok']} measured, {c['memory_bound']} memory-bound, {c['unsupported']} unsupported, "
        f"{c['error']} error; {c['correct']} correct, {incorrect})"
    )
    ceiling = result.get("ceiling") or {}
    if ceiling.get("error"):
        print(f"numpy ceiling: not measured ({ceiling['error']})")
    elif ceiling.get("shapes"):
        print(f"numpy ceiling: {ceiling.get('what') or 'numpy SGEMM of one matrix per shape on the same cores'}")
        for name, shape in ceiling["shapes"].items():
            if shape.get("gflops") is None:
                continue
            per = shape.get("per_tenants") or {}
            by_r = ", ".join(f"R={r}: {v['gflops']:.1f}" for r, v in per.items() if v.get("gflops") is not None)
            print(
                f"  {name}: median {shape['gflops']:.1f} GFLOP/s, best {shape['best_gflops']:.1f}"
                + (f" (median per R: {by_r})" if by_r else "")
            )
    _print_table1(result.get("table1") or [])
    _print_largest(result.get("largest_tenants") or [])
    for note in result.get("notes") or ():
        print(f"note: {note}")
    print(f"\nrows: latencylab sharing rows {job['id']}")


def _print_table1(table: list[dict[str, Any]]) -> None:
    if not table:
        return
    low, high = table[0].get("r_range") or (2, 120)
    print(
        f"\ntable 1: space-time GFLOP/s over the next best of time-only and space-only, geomean over R in [{low}, {high}]"
    )
    from devicelab.measure.ratios import RatioEstimate  # numpy: imported when a result is printed

    def per_r(p: dict[str, Any]) -> str:
        if p.get("ratio"):  # paired by round, with its interval
            return f"{p['tenants']}: {RatioEstimate.from_dict(p['ratio']).label()}"
        return f"{p['tenants']}: {p['speedup']:.2f}x"

    def significant(counts: dict[str, int] | None) -> str:
        if not counts:
            return "-"
        return f"{counts['above']} above, {counts['below']} below, {counts['within noise']} within noise"

    rows = []
    for entry in table:
        subjects = [("space_time", entry), *sorted((entry.get("peers") or {}).items())]
        for strategy, result in subjects:
            geomean = result.get("speedup_geomean")
            rows.append(
                (
                    entry["workload"]["name"],
                    strategy,
                    "-" if geomean is None else f"{geomean:.2f}x",
                    significant(result.get("significant")),
                    result.get("next_best") or "-",
                    "; ".join(per_r(p) for p in result.get("per_tenants") or ()) or "-",
                )
            )
    print_table(["workload", "super-kernel", "geomean", "R significantly", "next best", "per R (95% interval)"], rows)


def _print_largest(largest: list[dict[str, Any]]) -> None:
    if not largest:
        return
    print("\nlargest R: measured, first memory-bound, fits by the memory model (figure 5)")

    def cell(value: Any) -> str:
        return "-" if value is None else str(value)

    print_table(
        ["workload", "strategy", "measured", "memory-bound", "fits"],
        [
            (
                e["workload"],
                e["strategy"],
                cell(e.get("largest_measured")),
                cell(e.get("smallest_memory_bound")),
                cell(e.get("largest_that_fits")),
            )
            for e in largest
        ],
    )


@_with_client_errors
def run_sweep(args: argparse.Namespace) -> int:
    """``latencylab sharing sweep --device D ...``: queue a sweep (and with --wait, its summary)."""
    spec = _spec(args)
    with _client(args) as client:
        handle = client.sharing_sweep(args.device, spec=spec, time_budget_s=args.time_budget)
        print(f"sharing sweep #{handle.id} queued on {handle.data.get('device_name', args.device)}", file=sys.stderr)
        return print_queued(handle, args, print_sweep)


def print_online(job: dict[str, Any]) -> None:
    """An online run's state, and once it succeeded the units it set and every policy on the trace."""
    spec = (job.get("settings") or {}).get("spec") or {}
    print(
        f"online run #{job['id']} {job['state']} on {job.get('device_name')}: {spec.get('workload')}, "
        f"R {spec.get('tenants')}, load {spec.get('load')} x 1/t1 for {spec.get('duration_s')} s"
    )
    print_job_state(job)
    result = job.get("result")
    if not result:
        return
    print(
        f"t1 {result['t1_ms']:.3f} ms (one request alone); offered {result['offered_per_s']:.0f} requests/s; "
        f"target {result['target_ms']:.2f} ms; space-time's window {result['window_ms']:.2f} ms"
    )
    rows = []
    for p in result["comparison"]:
        if p.get("status") != "ok":
            rows.append((p["policy"], p.get("status", "-"), "-", "-", "-", "-", "-", "-"))
            continue
        rows.append(
            (
                p["policy"],
                f"{p['attainment']:.0%}",
                f"{p['per_s']:.0f}",
                f"{p['goodput_per_s']:.0f}",
                _number(p.get("p50_ms"), 3),
                _number(p.get("p99_ms"), 3),
                f"{p['mean_batch']:.2f}",
                "ok" if p.get("outputs_correct") else "WRONG",
            )
        )
    print_table(["policy", "within target", "req/s", "goodput/s", "p50 ms", "p99 ms", "batch", "outputs"], rows)
    for note in result.get("notes") or ():
        print(f"note: {note}")


@_with_client_errors
def run_online(args: argparse.Namespace) -> int:
    """``latencylab sharing online --device D ...``: queue an online run (and with --wait, its result)."""
    from latencylab.client import InputError

    try:
        spec = spec_values(args, OnlineSpec)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    with _client(args) as client:
        handle = client.online_run(args.device, spec=spec)
        print(f"online run #{handle.id} queued on {handle.data.get('device_name', args.device)}", file=sys.stderr)
        return print_queued(handle, args, print_online)


def _number(value: Any, digits: int) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _check(row: dict[str, Any]) -> str:
    if row["status"] != "ok":
        # Cut in the middle: an error names its cause last.
        return one_line(str(row["error"]), 100) if row.get("error") else "-"
    return {True: "ok", False: "WRONG", None: "-"}[row.get("correct")]


def print_rows(rows: list[dict[str, Any]]) -> None:
    """Rows as a table: workload, R, strategy, status, GFLOP/s, requests/s, pooled p50 and p99, the
    straggler gap, memory, the check (or why a row was not measured)."""
    table = []
    for r in rows:
        gap = r.get("straggler_gap_ms")
        ratio = r.get("straggler_gap_ratio")
        memory = r.get("memory_bytes")
        table.append(
            (
                r["workload"],
                r["tenants"],
                r["strategy"],
                r["status"],
                _number(r.get("throughput_gflops"), 1),
                _number(r.get("throughput_per_s"), 1),
                _number(r.get("latency_p50_ms"), 3),
                _number(r.get("latency_p99_ms"), 3),
                "-" if gap is None else f"{gap:.3f}" + ("" if ratio is None else f" ({ratio:.0%})"),
                "-" if memory is None else f"{memory / 1e6:.1f} MB",
                _check(r),
            )
        )
    print_table(
        [
            "workload",
            "R",
            "strategy",
            "status",
            "GFLOP/s",
            "req/s",
            "p50 ms",
            "p99 ms",
            "straggler gap ms",
            "memory",
            "check",
        ],
        table,
    )


@_with_client_errors
def run_rows(args: argparse.Namespace) -> int:
    """``latencylab sharing rows SWEEP_ID [filters]``: the rows as a table (or JSON)."""
    with _client(args) as client:
        rows = client.sharing_rows(
            args.sweep, workload=args.workload, strategy=args.strategy, tenants=args.tenants, status=args.status
        )
    print_found_rows(
        args,
        rows,
        print_rows,
        "req/s: requests served per second (an SGEMM or an inference each); p50/p99: every tenant's latencies "
        "pooled; straggler gap: slowest tenant's p50 less the fastest's",
    )
    return 0


@_with_client_errors
def run_show(args: argparse.Namespace) -> int:
    """``latencylab sharing show SWEEP_ID``: a sweep's state, summary and table 1."""
    from latencylab.client import InputError

    with _client(args) as client:
        kind = client.job(args.sweep).data.get("kind")
        if kind != "sharing_sweep":
            raise InputError(f"job #{args.sweep} is a {kind or 'profiling'} job, not a sharing sweep")
        data = client.sharing_sweep_status(args.sweep).data
    print_data(args, data, print_sweep)
    return 0


__all__ = ["add_parsers", "print_rows", "print_sweep", "run_rows", "run_show", "run_sweep"]

"""``latencylab select`` and ``latencylab selection``: CNNSelect (seed 002, section 5) through the
API client: one request's model, and simulations against greedy, fastest and an oracle.

    latencylab select --device host-cpu --models 3,4,5 --sla-ms 300 --network-profile lte
    latencylab select --device host-cpu --models 3,4,5 --sla-ms 300 --input-ms 40 --threshold-ms 20 --seed 1
    latencylab select --device host-cpu --models 3,4,5 --sla-ms 100,200,...,600 --network-profile lte \
        --on-device pixel-7 --load-per-request
    latencylab selection accuracy 3 --top1 71.9 --top5 90.3
    latencylab selection simulate --paper --sla-ms 50,100,...,400 --profiles campus_wifi,lte --wait
    latencylab selection simulate --device host-cpu --models 3,4,5 --requests 2000
    latencylab selection show 7
    latencylab selection list

The server and token come from ``--url`` / ``--token`` or ``LATENCYLAB_URL`` / ``LATENCYLAB_TOKEN``;
errors are one line on stderr (exit 2 for bad input, 1 otherwise), as for the other commands.
"""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from latencylab.commands.client_cmds import _add_server_arguments, _client, _with_client_errors
from latencylab.commands.experiment_cmds import check_minimums, print_data, print_job_state
from latencylab.commands.output import print_json, print_table

# devicelab.selection's POLICIES (tests/cli check they agree), written out so that building the
# parser imports no numpy.
POLICIES = ("cnnselect", "cnnselect_lab", "greedy", "greedy_budget", "fastest", "oracle")
POLICY_LABELS = {
    "cnnselect": "CNNSelect (paper)",
    "cnnselect_lab": "CNNSelect (lab)",
    "greedy": "greedy",
    "greedy_budget": "greedy-budget",
    "fastest": "fastest",
    "oracle": "oracle",
}
# devicelab.selection's DEFAULT_THRESHOLD_MS and SELECT_POLICIES (tests/cli check they agree): the
# same T_threshold for one request as for a simulation.
DEFAULT_THRESHOLD_MS = 20.0
SELECT_POLICIES = ("lab", "paper")
# The paper's headline: "maintaining SLA attainment in 88.5% more cases than a greedy baseline"
# (seed 002, abstract and section 6).
PAPER_IMPROVEMENT_PCT = 88.5
ELLIPSIS = "..."


def _id_list(value: str) -> list[int]:
    """``--models 3,4,5``: model ids, comma-separated."""
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if not parts or not all(p.isascii() and p.isdigit() and int(p) >= 1 for p in parts):
        raise argparse.ArgumentTypeError(f"{value!r} is not a comma-separated list of model ids (3,4,5)")
    return [int(p) for p in parts]


def _ms(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of milliseconds") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"an SLA target is a positive number of milliseconds, got {text!r}")
    return value


def _sla_list(value: str) -> list[float]:
    """``--sla-ms 100,200,300`` or ``50,100,...,400`` (continued by the first step up to the last):
    the SLA targets in milliseconds."""
    parts = [p.strip() for p in value.split(",") if p.strip()]
    if ELLIPSIS not in parts:
        if not parts:
            raise argparse.ArgumentTypeError("name at least one SLA target (100,200,300)")
        return [_ms(p) for p in parts]
    at = parts.index(ELLIPSIS)
    if parts.count(ELLIPSIS) != 1 or at < 2 or at != len(parts) - 2:
        raise argparse.ArgumentTypeError(
            f"{value!r}: write at least two targets, '...', then the last (50,100,...,400)"
        )
    head, last = [_ms(p) for p in parts[:at]], _ms(parts[-1])
    step = head[1] - head[0]
    if step <= 0 or any(not math.isclose(b - a, step) for a, b in zip(head, head[1:], strict=False)):
        raise argparse.ArgumentTypeError(f"cannot continue {','.join(parts[:at])},...: give evenly increasing targets")
    if last <= head[-1]:
        raise argparse.ArgumentTypeError(f"the target after '...' ({parts[-1]}) must be larger than {parts[at - 1]}")
    targets = list(head)
    while (following := head[0] + step * len(targets)) < last and not math.isclose(following, last):
        targets.append(following)
    return [*targets, last]


def _name_list(value: str) -> list[str]:
    """``--profiles campus_wifi,lte``: names, comma-separated."""
    names = [n.strip() for n in value.split(",") if n.strip()]
    if not names:
        raise argparse.ArgumentTypeError("name at least one")
    return names


def _policy_list(value: str) -> list[str]:
    """``--policies cnnselect,greedy``: policies, comma-separated."""
    names = _name_list(value)
    unknown = [p for p in names if p not in POLICIES]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown policies {unknown}; the policies are {', '.join(POLICIES)}")
    return names


def add_parsers(sub: Any) -> None:
    """Register ``select``, and ``selection`` with ``simulate``, ``show`` and ``list``."""
    select = sub.add_parser(
        "select",
        help="CNNSelect: the model to serve one request with (one SLA), or per model and policy the chance of "
        "meeting each of a range of SLAs and the accuracy it buys (several SLAs, or --table)",
    )
    select.add_argument("--device", required=True, help="the serving device's name or id")
    select.add_argument("--models", required=True, type=_id_list, metavar="IDS", help="candidate model ids (3,4,5)")
    select.add_argument(
        "--sla-ms",
        required=True,
        type=_sla_list,
        metavar="MS",
        help="T_sla, the end-to-end target; several (100,200,...,600) answer over the range",
    )
    source = select.add_mutually_exclusive_group(required=True)
    source.add_argument("--input-ms", type=float, metavar="MS", help="T_input: how long the input took to arrive")
    source.add_argument(
        "--network-profile",
        metavar="NAME",
        help="estimate T_input from a network profile (campus_wifi, lte, cellular_hotspot, prototype_wifi, "
        "or your team's); a range of SLAs needs one",
    )
    select.add_argument(
        "--input-bytes", type=int, metavar="N", help="with --network-profile: the input's size (330 KB)"
    )
    select.add_argument(
        "--output-bytes", type=int, metavar="N", help="with --network-profile: the answer's size (1 KB)"
    )
    select.add_argument(
        "--threshold-ms",
        type=float,
        metavar="MS",
        help=f"T_threshold (default {DEFAULT_THRESHOLD_MS:g}, as selection simulate)",
    )
    select.add_argument(
        "--policy",
        choices=SELECT_POLICIES,
        help="lab (default: never a model dominated in accuracy and latency, T_E centred) or paper (as printed)",
    )
    select.add_argument("--seed", type=int, help="seed of the final draw, or of the table's requests")
    select.add_argument("--table", action="store_true", help="answer over the SLAs even for one")
    select.add_argument(
        "--on-device", metavar="DEVICE", help="with a table: also price running on this phone or CPU (its profiles)"
    )
    select.add_argument(
        "--load-per-request",
        action="store_true",
        help="with --on-device: the app loads the model for each request (its measured cold start)",
    )
    select.add_argument("--requests", type=int, help="with a table: seeded requests per SLA (default 4,000)")
    _add_server_arguments(select)
    select.set_defaults(func=run_select)

    selection = sub.add_parser("selection", help="simulations of CNNSelect against greedy (seed 002, section 5.2)")
    ssub = selection.add_subparsers(dest="selection_command", required=True, metavar="SUBCOMMAND")

    simulate = ssub.add_parser("simulate", help="queue a simulation over SLA targets and network profiles")
    models = simulate.add_mutually_exclusive_group(required=True)
    models.add_argument("--paper", action="store_true", help="the paper's scenario: table 5's eleven models")
    models.add_argument("--device", help="with --models: your models with their profiles on this device")
    simulate.add_argument("--models", type=_id_list, metavar="IDS", help="with --device: candidate model ids")
    simulate.add_argument(
        "--sla-ms",
        type=_sla_list,
        metavar="MS,...",
        help="SLA targets, comma-separated; 50,100,...,400 continues the step (default: 10 to 700 ms by 10)",
    )
    simulate.add_argument(
        "--profiles",
        type=_name_list,
        metavar="NAMES",
        help="network profiles, comma-separated (default: prototype_wifi, campus_wifi, lte, cellular_hotspot)",
    )
    simulate.add_argument("--requests", type=int, help="requests per SLA target and profile (default 10,000)")
    simulate.add_argument("--seed", type=int, help="seed of the request streams (default 0)")
    simulate.add_argument("--threshold-ms", type=float, metavar="MS", help="T_threshold (default 20)")
    simulate.add_argument(
        "--policies",
        type=_policy_list,
        metavar="P,...",
        help=f"among {', '.join(POLICIES)} (default: all but greedy_budget)",
    )
    simulate.add_argument("--input-bytes", type=int, metavar="N", help="the request's size on the wire (330 KB)")
    simulate.add_argument("--title", help="a title for the list")
    simulate.add_argument("--wait", action="store_true", help="wait for the trainer to run it and print the result")
    simulate.add_argument("--timeout", type=float, help="with --wait: give up waiting after this many seconds")
    _add_server_arguments(simulate)
    simulate.set_defaults(func=run_simulate)

    show = ssub.add_parser("show", help="a simulation's state and, per network profile, its table over SLA targets")
    show.add_argument("simulation", type=int, metavar="SIMULATION_ID")
    _add_server_arguments(show)
    show.set_defaults(func=run_show)

    accuracy = ssub.add_parser("accuracy", help="set what a model scores (%): selection trades it against latency")
    accuracy.add_argument("model", type=int, metavar="MODEL_ID")
    accuracy.add_argument("--top1", type=float, required=True, metavar="PCT", help="top-1 accuracy in percent")
    accuracy.add_argument("--top5", type=float, metavar="PCT", help="top-5 accuracy in percent")
    _add_server_arguments(accuracy)
    accuracy.set_defaults(func=run_accuracy)

    listing = ssub.add_parser("list", help="your team's simulations, newest first")
    _add_server_arguments(listing)
    listing.set_defaults(func=run_list)


# -- one request -------------------------------------------------------------------------------


def _num(value: Any, digits: int = 1) -> str:
    if isinstance(value, str):  # an infinite utility travels as "inf"
        return value
    return "-" if value is None else f"{value:.{digits}f}"


def _latency_source(candidate: dict[str, Any]) -> str:
    source = candidate.get("latency_source") or {}
    if source.get("kind") == "measured":
        return f"measured (job #{source.get('job')}, {candidate.get('samples', 0)} samples)"
    if source.get("kind") == "predicted":
        return f"predicted (predictor #{source.get('predictor')})"
    return str(source.get("kind") or "-")


def print_selection(answer: dict[str, Any]) -> None:
    """CNNSelect's answer: the chosen model, T_input and the time range, m*, M_E, every
    candidate's profile and probability, and why."""
    chosen = answer["chosen"]
    print(f"chosen: {chosen['name']} (model #{chosen['model']})")
    src = answer.get("input_source") or {}
    if src.get("kind") == "network_profile":
        how = f"the mean transfer of {src.get('input_bytes'):,} bytes under {src.get('profile')}"
    else:
        how = "given"
    print(f"T_input = {answer['input_ms']:.4g} ms ({how}); T_sla = {answer['sla_ms']:.4g} ms")
    t_explore = answer.get("t_explore")
    explore = f"; T_E = [{t_explore[0]:.4g}, {t_explore[1]:.4g}] ms" if t_explore else ""
    k = (answer["sla_ms"] - answer["t_budget"]) / answer["input_ms"] if answer["input_ms"] else 2.0
    print(
        f"T_budget = T_sla - {k:.3g} T_input = {answer['t_budget']:.4g} ms; T_R = [T_L, T_U] = "
        f"[{answer['t_lower']:.4g}, {answer['t_upper']:.4g}] ms (T_threshold {answer['threshold_ms']:.4g} ms){explore}"
    )
    if answer.get("fallback"):
        print(f"base model m*: {answer['base']} (fallback: no model meets equations 2 and 3; the fastest runs)")
    else:
        print(f"base model m*: {answer['base']}")
    members = answer.get("exploration") or []
    print(f"M_E: {{{', '.join(members)}}}" if members else "M_E: empty (the base model runs)")
    print(f"policy: {answer.get('policy', 'paper')}")
    for gone, by in (answer.get("dominated") or {}).items():
        print(f"dropped: {gone} (dominated by {by}: as accurate or more, and no slower at any latency quantile)")
    for w in answer.get("warnings") or []:
        print(f"warning: {w}")
    utilities = answer.get("utilities") or {}
    rows = []
    for c in answer.get("candidates") or []:
        name = c["name"]
        roles = [r for r, on in (("chosen", name == chosen["name"]), ("m*", name == answer["base"])) if on]
        if name in members:
            roles.append("M_E")
        rows.append(
            (
                name,
                c["model"],
                _num(c["accuracy"]),
                _num(c["mu_ms"], 2),
                _num(c["sigma_ms"], 2),
                _latency_source(c),
                f"{answer['probabilities'].get(name, 0.0):.3f}",
                _num(utilities.get(name), 1) if name in utilities else "-",
                " ".join(roles),
            )
        )
    print()
    print_table(["model", "id", "accuracy %", "mu ms", "sigma ms", "latency profile", "Pr", "U(m)", "role"], rows)
    print(f"\nwhy: {answer['why']}")


def print_select_table(answer: dict[str, Any]) -> None:
    """The answer over a range of SLAs: per SLA target, each model remote and on the device, then
    the selection policy and greedy, with the chance of meeting the SLA and the accuracy it buys."""
    for w in answer.get("warnings") or []:
        print(f"warning: {w}")
    where = f", or run on device #{answer['on_device']}" if answer.get("on_device") is not None else ""
    cold = " (loading the model per request: its cold start)" if answer.get("load_per_request") else ""
    print(
        f"served on device #{answer['device']} over {answer['profile']}{where}{cold}; {answer['requests']:,} "
        f"seeded requests per SLA, T_threshold {answer['threshold_ms']:g} ms, policy {answer['policy']}"
    )
    print(
        "P(meet): share of requests whose end to end met the SLA; expected acc: the accuracy a request gets, "
        "misses included; acc within SLA: a miss counts 0\n"
    )
    kinds = {"remote": "remote", "on_device": "on device", "policy": "per request"}
    rows = [
        (
            f"{r['sla_ms']:g}",
            POLICY_LABELS.get(r["option"], r["option"]) if r["kind"] == "policy" else r["option"],
            kinds.get(r["kind"], r["kind"]),
            f"{r['p_meet'] * 100:.1f}%",
            f"{r['expected_accuracy']:.1f}",
            f"{r['accuracy_within_sla']:.1f}",
        )
        for r in answer["rows"]
    ]
    print_table(["SLA ms", "option", "how", "P(meet)", "expected acc %", "acc within SLA %"], rows)


@_with_client_errors
def run_select(args: argparse.Namespace) -> int:
    """``latencylab select --device D --models 3,4,5 --sla-ms 300 --input-ms 40``: CNNSelect's choice;
    with several SLAs (or --table), the answer per model and policy over them."""
    from latencylab.client import InputError

    if args.input_bytes is not None and args.network_profile is None:
        raise InputError("--input-bytes goes with --network-profile (with --input-ms the time is given)")
    if args.output_bytes is not None and args.network_profile is None:
        raise InputError("--output-bytes goes with --network-profile")
    table = args.table or len(args.sla_ms) > 1
    if not table and (args.on_device or args.load_per_request or args.requests is not None):
        raise InputError("--on-device, --load-per-request and --requests go with a range of SLAs (or --table)")
    if args.load_per_request and not args.on_device:
        raise InputError("--load-per-request prices the on-device option: name --on-device")
    if table and args.network_profile is None:
        raise InputError("a range of SLAs needs --network-profile: the network's spread, not one input time")
    with _client(args) as client:
        if table:
            answer = client.select_table(
                args.device,
                args.models,
                args.sla_ms,
                args.network_profile,
                on_device=args.on_device,
                load_per_request=args.load_per_request,
                input_bytes=args.input_bytes,
                output_bytes=args.output_bytes,
                threshold_ms=args.threshold_ms,
                policy=args.policy,
                requests=args.requests,
                seed=args.seed,
            )
            print_data(args, answer, print_select_table)
            return 0
        answer = client.select(
            args.device,
            args.models,
            args.sla_ms[0],
            input_ms=args.input_ms,
            network_profile=args.network_profile,
            input_bytes=args.input_bytes,
            output_bytes=args.output_bytes,
            threshold_ms=args.threshold_ms,
            seed=args.seed,
            policy=args.policy,
        )
    print_data(args, answer, print_selection)
    return 0


@_with_client_errors
def run_accuracy(args: argparse.Namespace) -> int:
    """``latencylab selection accuracy MODEL --top1 71.9 [--top5 90.3]``: set what a model scores."""
    with _client(args) as client:
        model = client.set_accuracy(args.model, args.top1, args.top5)
    top5 = model.get("top5_accuracy")
    print(
        f"model #{model['id']} {model.get('name', '')}: top-1 {model['top1_accuracy']:g}%"
        + ("" if top5 is None else f", top-5 {top5:g}%")
    )
    return 0


# -- simulations -------------------------------------------------------------------------------


def _spec(args: argparse.Namespace) -> dict[str, Any]:
    """The request the flags give (keys left out take the server's defaults)."""
    from latencylab.client import InputError

    check_minimums(args, {"requests": 1, "seed": 0, "input-bytes": 1})
    if args.threshold_ms is not None and args.threshold_ms < 0:
        raise InputError(f"--threshold-ms must be at least 0, got {args.threshold_ms:g}")
    spec: dict[str, Any] = {}
    if args.paper:
        if args.models is not None:
            raise InputError("--paper runs table 5's models; --models goes with --device")
        spec["scenario"] = "paper"
    else:
        if args.models is None:
            raise InputError("--device needs --models (the candidate model ids), or use --paper")
        spec.update(device=args.device, models=args.models)
    for key, flag in (
        ("sla_targets_ms", "sla_ms"),
        ("profiles", "profiles"),
        ("requests", "requests"),
        ("seed", "seed"),
        ("threshold_ms", "threshold_ms"),
        ("policies", "policies"),
        ("input_bytes", "input_bytes"),
        ("title", "title"),
    ):
        if getattr(args, flag) is not None:
            spec[key] = getattr(args, flag)
    return spec


def _targets_text(slas: list[float]) -> str:
    if not slas:
        return "no SLA target"
    if len(slas) == 1:
        return f"1 SLA target, {slas[0]:g} ms"
    return f"{len(slas)} SLA targets from {min(slas):g} to {max(slas):g} ms"


def _improvement(pct: float | None) -> str:
    return "-" if pct is None else f"{pct:+.1f}%"


def _print_profile(result: Any, profile: str, policies: tuple[str, ...], compare: Any) -> None:
    """One network profile's table over the SLA targets and CNNSelect's pooled gain over greedy."""
    first = result.point(policies[0], result.sla_targets_ms[0], profile)
    print(f"\n{profile}: mean network time (upload + download) {first.mean_network_ms:.1f} ms")
    headers = ["SLA ms"]
    for p in policies:
        headers += [f"{POLICY_LABELS.get(p, p)} met", f"{POLICY_LABELS.get(p, p)} acc %"]
    comparing = compare is not None
    if comparing:
        headers.append("vs greedy")
    rows = []
    for sla in result.sla_targets_ms:
        row = [f"{sla:g}"]
        for p in policies:
            point = result.point(p, sla, profile)
            row += [f"{point.attainment * 100:.1f}%", f"{point.effective_accuracy:.1f}"]
        if comparing:
            one = compare(result, profiles=[profile], sla_min_ms=sla, sla_max_ms=sla)
            row.append(_improvement(one.attainment_improvement_pct))
        rows.append(row)
    print_table(headers, rows)
    if comparing:
        pooled = compare(result, profiles=[profile])
        total = result.requests * pooled.points
        print(
            f"CNNSelect met the SLA in {pooled.met:,} of {total:,} requests, greedy in {pooled.baseline_met:,}: "
            f"{_improvement(pooled.attainment_improvement_pct)} relative improvement in SLA attainment"
        )


def print_simulation(sim: dict[str, Any]) -> None:
    """A simulation's state, what it runs, and once it succeeded, per network profile a table over
    the SLA targets (attainment = share of requests that met the SLA, and effective accuracy, per
    policy; CNNSelect's relative improvement in attainment over greedy) and the pooled gains."""
    spec = sim.get("spec") or {}
    print(f"selection simulation #{sim['id']} {sim['state']}: {sim.get('title') or '-'}")
    models = spec.get("models") or []
    profiles = [p.get("name") for p in spec.get("profiles") or []]
    if models:
        names = ", ".join(f"{m['name']} ({m['accuracy']:g}%, {m['mu_ms']:.3g} ms)" for m in models)
        print(f"models ({spec.get('scenario', '-')}): {names}")
    if spec:
        print(
            f"{_targets_text(spec.get('sla_targets_ms') or [])}; profiles {', '.join(map(str, profiles))}; "
            f"{spec.get('requests', 0):,} requests per point, seed {spec.get('seed')}, "
            f"T_threshold {spec.get('threshold_ms', 0):g} ms; policies {', '.join(spec.get('policies') or [])}"
        )
    print_job_state(sim)
    data = sim.get("result")
    if not data:
        return
    from devicelab.selection import SimulationResult, compare_policies

    result = SimulationResult.from_dict(data)
    policies = result.policies
    comparing = "cnnselect" in policies and "greedy" in policies
    print(
        "\nmet: share of requests whose end-to-end time met the SLA; acc: effective accuracy (the chosen models' "
        "mean top-1, misses included); vs greedy: CNNSelect's relative improvement in SLA attainment ('-' where "
        "greedy met none)"
    )
    for profile in result.profiles:
        _print_profile(result, profile.name, policies, compare_policies if comparing else None)
    if comparing:
        overall = compare_policies(result)
        print(
            f"\nover every profile and SLA target: CNNSelect met the SLA in {overall.met:,} requests, greedy in "
            f"{overall.baseline_met:,}: {_improvement(overall.attainment_improvement_pct)} relative improvement "
            f"in SLA attainment (the paper: +{PAPER_IMPROVEMENT_PCT}%); mean accuracy "
            f"{overall.mean_accuracy_gain_pp:+.1f} points, mean end-to-end up to "
            f"{overall.max_latency_reduction_pct:.0f}% lower"
        )
    if "cnnselect_lab" in policies and "greedy" in policies:
        from devicelab.selection import shortfalls

        lab = compare_policies(result, "cnnselect_lab", "greedy")
        short = shortfalls(result, "cnnselect_lab", "greedy")
        print(
            f"CNNSelect (lab) met the SLA in {lab.met:,} requests: {_improvement(lab.attainment_improvement_pct)} "
            f"over greedy, mean accuracy {lab.mean_accuracy_gain_pp:+.1f} points; below greedy's attainment or "
            f"more than a point below its accuracy within the SLA at {len(short)} of {lab.points} points"
        )


def _wait(client: Any, pk: int, timeout: float | None) -> dict[str, Any] | None:
    """The finished simulation, or None when Ctrl-C stopped the wait (it goes on on the server)."""
    try:
        return dict(client.wait_for_selection_simulation(pk, timeout=timeout))
    except KeyboardInterrupt:
        print(f"stopped waiting; simulation #{pk} goes on on the server", file=sys.stderr)
        return None


@_with_client_errors
def run_simulate(args: argparse.Namespace) -> int:
    """``latencylab selection simulate (--paper | --device D --models IDS) ...``: queue a simulation
    (and with --wait, print its result)."""
    spec = _spec(args)
    with _client(args) as client:
        sim = client.simulate_selection(**spec)
        print(f"selection simulation #{sim['id']} queued", file=sys.stderr)
        if args.wait:
            done = _wait(client, int(sim["id"]), args.timeout)
            if done is None:
                return 130
            sim = done
    print_data(args, sim, print_simulation)
    return 0


@_with_client_errors
def run_show(args: argparse.Namespace) -> int:
    """``latencylab selection show ID``: a simulation's state and result tables."""
    with _client(args) as client:
        sim = client.selection_simulation(args.simulation)
    print_data(args, sim, print_simulation)
    return 0


@_with_client_errors
def run_list(args: argparse.Namespace) -> int:
    """``latencylab selection list``: the team's simulations."""
    with _client(args) as client:
        sims = client.selection_simulations()
    if args.json:
        print_json(sims)
    elif not sims:
        print("no simulations yet", file=sys.stderr)
    else:
        print_table(
            ["id", "state", "title", "submitted"],
            [(s["id"], s["state"], s.get("title") or "-", str(s.get("created_at", ""))[:19]) for s in sims],
        )
    return 0


__all__ = [
    "add_parsers",
    "print_select_table",
    "print_selection",
    "print_simulation",
    "run_accuracy",
    "run_list",
    "run_select",
    "run_show",
    "run_simulate",
]

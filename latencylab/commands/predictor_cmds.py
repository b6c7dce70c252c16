"""Predictor commands: ``qed import``, ``trainset build``, ``predictors train``, ``predictors adapt``,
``predictors list`` and ``predictors show``.

They speak to the server's REST API (``--url`` / ``--token`` or ``LATENCYLAB_URL`` /
``LATENCYLAB_TOKEN``), as ``latencylab profile`` does: the lab is the server's, never a database
file here. Only ``predictors train --inline`` opens the database itself, on the server host
(``server_host.server_host_only``).
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from latencylab.client.training_data import TRAINING_SET_MAX_JOBS, TRAINING_SET_MAX_SYNTHETIC
from latencylab.commands.client_cmds import _add_server_arguments, _client, _with_client_errors
from latencylab.commands.output import fail, print_json, print_table
from latencylab.commands.server_host import server_host_only


def add_parsers(sub: Any) -> None:
    """Register ``qed``, ``trainset`` and ``predictors``."""
    q = sub.add_parser("qed", help="public qed measurements of six phones")
    qsub = q.add_subparsers(dest="qed_command", required=True, metavar="SUBCOMMAND")
    imp = qsub.add_parser("import", help="create the six qed phones as devices and store their GPU measurements")
    imp.add_argument(
        "--data",
        help="a folder here with the qed CSV files, under our names or as published (tflite_cnn_ops_gpu.csv, "
        "tflite_cnn_e2e.csv; a clone of the public repository works too), sent to the server (a lab admin's "
        "token only) (default: the server reads its own copy: its $LATENCYLAB_QED_DATA or shared/data)",
    )
    _add_server_arguments(imp)
    imp.set_defaults(func=_with_client_errors(qed_import))

    t = sub.add_parser("trainset", help="training sets for latency predictors")
    tsub = t.add_subparsers(dest="trainset_command", required=True, metavar="SUBCOMMAND")
    build = tsub.add_parser(
        "build",
        help="profile N synthetic NAS samples plus zoo models on a device through ordinary jobs of your team",
    )
    build.add_argument("--device", required=True, help="device id, name or identity")
    build.add_argument(
        "--synthetic",
        type=int,
        default=0,
        metavar="N",
        help="synthetic NAS samples (default: 0); a big set goes to the server as several requests of at most "
        f"{TRAINING_SET_MAX_SYNTHETIC} samples and {TRAINING_SET_MAX_JOBS} jobs each",
    )
    build.add_argument(
        "--zoo",
        nargs="?",
        const="all",
        default="",
        metavar="NAMES",
        help="zoo models, comma-separated ('all' or no value: the whole zoo)",
    )
    build.add_argument("--threads", type=int, default=1)
    build.add_argument("--delegate", default="", help="phones: the delegate the jobs run on (cpu, xnnpack, gpu)")
    build.add_argument("--runs", type=int, default=10, help="timed runs per network (default: %(default)s)")
    build.add_argument("--warmup-runs", type=int, default=2)
    build.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="jobs per network, queued round by round and merged when training (default: %(default)s; "
        "3 on a machine shared with other work)",
    )
    build.add_argument("--seed", type=int, default=0, help="seed of the synthetic samples")
    build.add_argument("--no-probes", action="store_true", help="do not profile the CPU deducer's probe graphs")
    build.add_argument("--wait", action="store_true", help="wait for the jobs, showing progress")
    _add_server_arguments(build)
    build.set_defaults(func=_with_client_errors(trainset_build))

    p = sub.add_parser("predictors", help="latency predictors")
    psub = p.add_subparsers(dest="predictors_command", required=True, metavar="SUBCOMMAND")
    train = psub.add_parser("train", help="train a new predictor version for a device")
    train.add_argument("--device", required=True, help="device id, name or identity (e.g. 3, pixel4)")
    train.add_argument("--method", choices=["lasso", "rf", "gbdt", "mlp"], default="gbdt")
    train.add_argument(
        "--team",
        help="with --inline: the team whose timings it trains on (not needed for imported devices); through the "
        "server it is your token's team",
    )
    train.add_argument("--threads", type=int, default=1)
    train.add_argument("--cores", help="the pinned cores of the scenario: ids (6,7) or a phone's cluster name (big)")
    train.add_argument("--precision", default="fp32", choices=["fp32", "fp16", "int8"])
    train.add_argument(
        "--delegate", default="", help="phones: the delegate whose jobs it trains on (cpu, xnnpack, gpu)"
    )
    train.add_argument("--seed", type=int, default=0)
    train.add_argument("--search", choices=["paper", "fast"], default="paper", help="hyper-parameter search")
    train.add_argument("--overhead", choices=["constant", "affine", "calibrated"], default="constant")
    train.add_argument(
        "--inline",
        action="store_true",
        help="on the server host only: train in this process, against the lab's database, instead of queueing it "
        "for the trainer",
    )
    train.add_argument("--wait", action="store_true", help="wait for the trainer to finish (when queued)")
    train.add_argument(
        "--no-table",
        action="store_true",
        help="with --inline: skip the NB201 lookup table (15625 cells, a few minutes) the trainer computes",
    )
    _add_server_arguments(train)
    train.set_defaults(func=_with_client_errors(predictors_train))
    ad = psub.add_parser(
        "adapt", help="a predictor for a device from a few measured networks and other devices' predictors"
    )
    ad.add_argument("--device", help="a lab device (id, name or identity)")
    ad.add_argument("--new-device", help="or a device that is not in the lab: its name (with --soc and --gpu)")
    ad.add_argument("--soc", default="", help="with --new-device: its SoC, e.g. Snapdragon 855")
    ad.add_argument("--gpu", default="", help="with --new-device: its GPU, e.g. Adreno 640")
    ad.add_argument(
        "--shot",
        action="append",
        default=[],
        metavar="MODEL=MS",
        help="a measured network: a zoo name or model id and its end-to-end latency in ms (repeat, at least 3)",
    )
    ad.add_argument("--job", action="append", type=int, default=[], help="a profiling job's measurement (repeat)")
    ad.add_argument("--source", action="append", type=int, default=[], help="a source predictor id (default: all)")
    ad.add_argument("--backend", default="tflite_gpu")
    ad.add_argument("--precision", default="fp16", choices=["fp32", "fp16", "int8"])
    ad.add_argument("--method", choices=["lasso", "rf", "gbdt", "mlp"], default="rf")
    ad.add_argument("--wait", action="store_true", help="wait for the trainer to finish")
    _add_server_arguments(ad)
    ad.set_defaults(func=_with_client_errors(predictors_adapt))
    ls = psub.add_parser("list", help="list the predictor versions you can use (your team's and the shared ones)")
    ls.add_argument("--device", help="only this device (id, name or identity)")
    _add_server_arguments(ls)
    ls.set_defaults(func=_with_client_errors(predictors_list))
    show = psub.add_parser("show", help="a predictor's evaluation and metadata as JSON")
    show.add_argument("id", type=int)
    _add_server_arguments(show)
    show.set_defaults(func=_with_client_errors(predictors_show))


def _messages(exc: Exception) -> str:
    return "; ".join(getattr(exc, "messages", None) or [str(exc)])


def _progress_line(text: str) -> None:
    end = "\r" if sys.stdout.isatty() else "\n"
    print(text, end=end, flush=True)


def qed_import(args: argparse.Namespace) -> int:
    """``latencylab qed import [--data DIR]``."""
    with _client(args) as lab:
        answer = lab.import_qed(args.data)
    if args.json:
        print_json(answer)
        return 0
    rows = [
        (
            d["device"],
            d["name"],
            d["gpu"],
            "created" if d["device_created"] else "kept",
            d["networks"],
            d["created"],
            d["updated"],
            d["unchanged"],
        )
        for d in answer["devices"]
    ]
    where = f"{args.data}: " if args.data else "the server's copy: "
    print(f"imported qed measurements from {where}{', '.join(answer['files'])}")
    print_table(["id", "device", "gpu", "device row", "networks", "new", "updated", "unchanged"], rows)
    return 0


def trainset_build(args: argparse.Namespace) -> int:
    """``latencylab trainset build``: upload and profile a training set through the server."""
    zoo: list[str] | str = "all" if args.zoo == "all" else [n.strip() for n in args.zoo.split(",") if n.strip()]
    with _client(args) as lab:
        built = lab.build_training_set(
            args.device,
            synthetic=args.synthetic,
            zoo=zoo,
            threads=args.threads,
            delegate=args.delegate,
            runs=args.runs,
            warmup_runs=args.warmup_runs,
            rounds=args.rounds,
            seed=args.seed,
            probes=False if args.no_probes else None,
        )
        if args.json:
            print_json(built)
        else:
            print(
                f"{len(built['submitted'])} job(s) submitted, {len(built['reused'])} already measured or queued, "
                f"on device {built['device_name']!r} (#{built['device']})"
            )
        if not args.wait:
            return 0
        return _wait_jobs(lab, built)


def _wait_jobs(lab: Any, built: dict[str, Any]) -> int:
    total = len(built["submitted"]) + len(built["reused"])
    last = ""
    while True:
        states = lab.training_set_states(built)
        done = sum(states.get(s, 0) for s in ("succeeded", "failed", "cancelled"))
        width = 30
        bar = "#" * int(width * done / max(1, total))
        line = f"[{bar:<{width}}] {done}/{total} " + " ".join(f"{k}={v}" for k, v in sorted(states.items()))
        if line != last:
            _progress_line(line)
            last = line
        if done == total:
            print()
            return 0 if states.get("succeeded", 0) == total else 1
        time.sleep(1)


def _cores(text: str | None) -> list[int] | str | None:
    """``--cores``: core ids (``6,7``) or a cluster name (``big``)."""
    if not text:
        return None
    parts = [p.strip() for p in text.split(",") if p.strip()]
    if all(p.isdigit() for p in parts):
        return [int(p) for p in parts]
    return text.strip()


def predictors_train(args: argparse.Namespace) -> int:
    """``latencylab predictors train --device D --method M [--wait | --inline]``."""
    if args.inline:
        return _train_inline(args)
    if args.team:
        return fail("--team goes with --inline; through the server a predictor trains on your token's team's timings")
    with _client(args) as lab:
        row = lab.train_predictor(
            args.device,
            method=args.method,
            threads=args.threads,
            cores=_cores(args.cores),
            precision=args.precision,
            delegate=args.delegate,
            seed=args.seed,
            search=args.search,
            overhead=args.overhead,
        )
        print(
            f"predictor #{row['id']}: {row['method']} v{row['version']} for {row['device_name']!r} "
            f"({row['scenario_key']})"
        )
        if not args.wait:
            print("queued for the trainer (latencylab predictors show ID, or --wait, follows it)")
            return 0

        def say(data: dict[str, Any]) -> None:
            print(f"  {data['state']}: {data['progress_message']}", flush=True)

        return _print_outcome(lab.wait_for_predictor(row["id"], on_progress=say))


def _shots(args: argparse.Namespace) -> list[dict[str, Any]] | str:
    """``--shot MODEL=MS`` and ``--job ID`` as the API's shots, or what is wrong with one."""
    shots: list[dict[str, Any]] = [{"job": j} for j in args.job]
    for text in args.shot:
        model, sep, ms = text.rpartition("=")
        try:
            latency = float(ms)
        except ValueError:
            latency = -1.0
        if not sep or not model or latency <= 0:
            return f"--shot {text!r}: expected MODEL=MS, e.g. mobilenet_v2=7.1"
        shots.append({"model": int(model) if model.isdigit() else model, "latency_ms": latency})
    return shots


def predictors_adapt(args: argparse.Namespace) -> int:
    """``latencylab predictors adapt (--device D | --new-device NAME --gpu G) --shot MODEL=MS ... [--wait]``."""
    if bool(args.device) == bool(args.new_device):
        return fail("give --device (a lab device) or --new-device NAME (with --soc and --gpu)")
    shots = _shots(args)
    if isinstance(shots, str):
        return fail(shots)
    new_device = {"name": args.new_device, "soc": args.soc, "gpu": args.gpu} if args.new_device else None
    with _client(args) as lab:
        row = lab.adapt_predictor(
            shots,
            device=args.device,
            new_device=new_device,
            sources=args.source or None,
            backend=args.backend,
            precision=args.precision,
            method=args.method,
        )
        sources = ", ".join(row.get("params", {}).get("source_devices", []))
        print(
            f"predictor #{row['id']}: adapted {row['method']} v{row['version']} for {row['device_name']!r} from {sources}"
        )
        if not args.wait:
            print("queued for the trainer (latencylab predictors show ID, or --wait, follows it)")
            return 0
        done = lab.wait_for_predictor(row["id"])
        if done["state"] != "ready":
            return fail(f"training failed: {done['failure_reason']}", 1)
        ev = done["evaluation"]
        print(f"ready: leave-one-out MAPE on the {ev['n_test']} measured networks {100 * ev['e2e_mape']:.2f} %")
        return 0


def _train_inline(args: argparse.Namespace) -> int:
    """``--inline``: the services of the API, in this process, on the server host's database."""
    if (refused := server_host_only("predictors train --inline")) is not None:
        return refused
    from latencylab.commands.service_cmds import migrate, setup_django

    setup_django()
    migrate()
    from django.core.exceptions import ValidationError

    from server.accounts.models import Team
    from server.predictors.services import find_device, request_predictor, run_training

    try:
        device = find_device(args.device)
        team = None
        if args.team:
            team = Team.objects.filter(name=args.team).first()
            if team is None:
                raise LookupError(f"there is no team {args.team!r} (latencylab user add NAME --team {args.team})")
        row = request_predictor(
            team,
            device,
            method=args.method,
            threads=args.threads,
            cores=_cores(args.cores),
            precision=args.precision,
            delegate=args.delegate,
            seed=args.seed,
            search=args.search,
            overhead=args.overhead,
            enqueue=False,
        )
    except (ValidationError, LookupError) as exc:
        return fail(_messages(exc))
    print(f"predictor #{row.pk}: {row.method} v{row.version} for {device.name!r} ({row.scenario_key})")
    started = time.monotonic()

    def say(message: str) -> None:
        print(f"  {time.monotonic() - started:7.1f} s  {message}", flush=True)

    trained = run_training(row.pk, progress=say, enqueue_table=False)
    if trained is not None and trained.state == "ready" and not args.no_table:
        from server.predictors.tables import build_nb201_table

        say("computing the NB201 lookup table")

        def cells(n: int, total: int) -> None:
            if n % 2500 == 0:
                say(f"NB201 table: {n}/{total} cells")

        table = build_nb201_table(trained, progress=cells)
        say(f"NB201 table: {table.computed} of 15625 cells answered")
    if trained is None:
        return fail("training failed: the predictor is gone", 1)
    return _print_outcome(
        {
            "state": trained.state,
            "failure_reason": trained.failure_reason,
            "rank_reason": trained.rank_reason,
            "evaluation": trained.evaluation,
        }
    )


def _print_outcome(row: dict[str, Any]) -> int:
    if row["state"] != "ready":
        return fail(f"training failed: {row['failure_reason']}", 1)
    ev = row["evaluation"]
    print(f"ready: end-to-end MAPE {100 * ev['e2e_mape']:.2f} % ({ev['protocol']}, {ev['n_test']} networks)")
    if row["rank_reason"]:
        print(f"not rankable: {row['rank_reason']}; it answers when named, never as its device's best")
    rows = [(k, f"{100 * v:.2f} %", ev.get("kernel_count", {}).get(k, "")) for k, v in ev["kernel_mape"].items()]
    print_table(["kernel type", "MAPE", "kernels"], rows)
    curve = ", ".join(f"{p['n']}: {100 * p['e2e_mape']:.2f} %" for p in ev.get("by_training_size", []))
    print(f"MAPE vs training networks: {curve}")
    return 0


def predictors_list(args: argparse.Namespace) -> int:
    """``latencylab predictors list [--device D]``: the predictors the server lets your team use."""
    with _client(args) as lab:
        rows = lab.predictors(device=args.device)
    if args.json:
        print_json(rows)
        return 0
    rows.sort(key=lambda p: (p["device"], p["method"], p["version"], p["id"]))
    table = [
        (
            p["id"],
            p["device_name"],
            p["method"],
            p["version"],
            p["state"],
            "-" if p["e2e_mape"] is None else f"{100 * p['e2e_mape']:.2f} %",
            p["n_test"],
            "yes" if p["rankable"] else "no",
            p["n_train"],
            "(shared)" if p["shared"] else "yours",
            p["scenario_key"],
        )
        for p in rows
    ]
    print_table(
        ["id", "device", "method", "v", "state", "e2e MAPE", "tested on", "rankable", "n", "team", "scenario"], table
    )
    return 0


def predictors_show(args: argparse.Namespace) -> int:
    """``latencylab predictors show ID``: the predictor as the server has it, without the scatter points."""
    with _client(args) as lab:
        row = lab.predictor(args.id)
    row["evaluation"] = {k: v for k, v in (row.get("evaluation") or {}).items() if k != "points"}
    print_json(row)
    return 0

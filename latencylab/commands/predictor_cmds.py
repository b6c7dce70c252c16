"""Predictor commands: ``qed import``, ``trainset build``, ``predictors train`` and ``predictors list``.

They call the same services as the API (``server.predictors``), against the database the
environment configures.
"""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from latencylab.commands.output import fail, print_json, print_table


def add_parsers(sub: Any) -> None:
    """Register ``qed``, ``trainset`` and ``predictors``."""
    q = sub.add_parser("qed", help="public qed measurements of six phones")
    qsub = q.add_subparsers(dest="qed_command", required=True, metavar="SUBCOMMAND")
    imp = qsub.add_parser("import", help="create the six qed phones as devices and store their GPU measurements")
    imp.add_argument(
        "--data",
        help="folder with the qed CSV files, under our names or as published (tflite_cnn_ops_gpu.csv, "
        "tflite_cnn_e2e.csv; a clone of the public repository works too) (default: $LATENCYLAB_QED_DATA or "
        "../shared/data)",
    )
    imp.set_defaults(func=qed_import)

    t = sub.add_parser("trainset", help="training sets for latency predictors")
    tsub = t.add_subparsers(dest="trainset_command", required=True, metavar="SUBCOMMAND")
    build = tsub.add_parser(
        "build", help="profile N synthetic NAS samples plus zoo models on a device through ordinary jobs"
    )
    build.add_argument("--device", required=True, help="device id, name or identity")
    build.add_argument("--team", required=True, help="the team that owns the networks and jobs")
    build.add_argument("--synthetic", type=int, default=0, metavar="N", help="synthetic NAS samples (default: 0)")
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
    build.set_defaults(func=trainset_build)

    p = sub.add_parser("predictors", help="latency predictors")
    psub = p.add_subparsers(dest="predictors_command", required=True, metavar="SUBCOMMAND")
    train = psub.add_parser("train", help="train a new predictor version for a device")
    train.add_argument("--device", required=True, help="device id, name or identity (e.g. 3, pixel4)")
    train.add_argument("--method", choices=["lasso", "rf", "gbdt", "mlp"], default="gbdt")
    train.add_argument("--team", help="the team whose timings it trains on (not needed for imported devices)")
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
        "--inline", action="store_true", help="train in this process instead of queueing it for the trainer"
    )
    train.add_argument("--wait", action="store_true", help="wait for the trainer to finish (when queued)")
    train.add_argument(
        "--no-table",
        action="store_true",
        help="with --inline: skip the NB201 lookup table (15625 cells, a few minutes) the trainer computes",
    )
    train.set_defaults(func=predictors_train)
    ls = psub.add_parser("list", help="list predictor versions")
    ls.add_argument("--device", help="only this device (id, name or identity)")
    ls.set_defaults(func=predictors_list)
    show = psub.add_parser("show", help="a predictor's evaluation and metadata as JSON")
    show.add_argument("id", type=int)
    show.set_defaults(func=predictors_show)


def _django() -> None:
    from latencylab.commands.service_cmds import migrate, setup_django

    setup_django()
    migrate()


def _messages(exc: Exception) -> str:
    return "; ".join(getattr(exc, "messages", None) or [str(exc)])


def qed_import(args: argparse.Namespace) -> int:
    """``latencylab qed import [--data DIR]``."""
    _django()
    from devicelab.predict.errors import PredictorError
    from server.predictors.qed_import import import_qed

    try:
        outcome = import_qed(args.data)
    except PredictorError as exc:
        return fail(str(exc))
    rows = [
        (
            d.device.pk,
            d.device.name,
            d.device.hardware.get("gpu_name", ""),
            "created" if d.device_created else "kept",
            d.networks,
            d.created,
            d.updated,
            d.unchanged,
        )
        for d in outcome.devices
    ]
    print(f"imported qed measurements from {', '.join(str(f) for f in outcome.files)}")
    print_table(["id", "device", "gpu", "device row", "networks", "new", "updated", "unchanged"], rows)
    return 0


def _team(name: str) -> Any:
    from server.accounts.models import Team

    team = Team.objects.filter(name=name).first()
    if team is None:
        raise LookupError(f"there is no team {name!r} (latencylab user add NAME --team {name} creates it)")
    return team


def _progress_line(text: str) -> None:
    end = "\r" if sys.stdout.isatty() else "\n"
    print(text, end=end, flush=True)


def trainset_build(args: argparse.Namespace) -> int:
    """``latencylab trainset build``: upload and profile a training set."""
    _django()
    from django.core.exceptions import ValidationError

    from devicelab.graph import GraphError
    from server.predictors.services import find_device
    from server.predictors.trainset import build_training_set

    try:
        team = _team(args.team)
        device = find_device(args.device)
        from devicelab.graph import zoo

        names = sorted(zoo.entries()) if args.zoo == "all" else [n.strip() for n in args.zoo.split(",") if n.strip()]
        built = build_training_set(
            team,
            device,
            args.synthetic,
            names,
            threads=args.threads,
            runs=args.runs,
            warmup_runs=args.warmup_runs,
            seed=args.seed,
            probes=False if args.no_probes else None,
            rounds=args.rounds,
            delegate=args.delegate,
            progress=lambda n, total: _progress_line(f"uploading and submitting {n}/{total}"),
        )
    except (ValidationError, LookupError, GraphError) as exc:
        return fail(_messages(exc))
    print()
    print(
        f"{len(built.submitted)} job(s) submitted, {len(built.reused)} already measured or queued, "
        f"on device {device.name!r} (#{device.pk}) for team {team.name!r}"
    )
    if not args.wait:
        return 0
    return _wait_jobs([j.pk for j in built.jobs])


def _wait_jobs(ids: list[int]) -> int:
    from server.profiling.models import ProfilingJob

    last = ""
    while True:
        states: dict[str, int] = {}
        for state in ProfilingJob.objects.filter(pk__in=ids).values_list("state", flat=True):
            states[state] = states.get(state, 0) + 1
        done = sum(states.get(s, 0) for s in ("succeeded", "failed", "cancelled"))
        width = 30
        bar = "#" * int(width * done / max(1, len(ids)))
        line = f"[{bar:<{width}}] {done}/{len(ids)} " + " ".join(f"{k}={v}" for k, v in sorted(states.items()))
        if line != last:
            _progress_line(line)
            last = line
        if done == len(ids):
            print()
            return 0 if states.get("succeeded", 0) == len(ids) else 1
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
    """``latencylab predictors train --device D --method M [--inline]``."""
    _django()
    from django.core.exceptions import ValidationError

    from server.predictors.services import find_device, request_predictor, run_training

    try:
        device = find_device(args.device)
        team = _team(args.team) if args.team else None
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
            enqueue=not args.inline,
        )
    except (ValidationError, LookupError) as exc:
        return fail(_messages(exc))
    print(f"predictor #{row.pk}: {row.method} v{row.version} for {device.name!r} ({row.scenario_key})")
    if args.inline:
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
        return _print_outcome(trained)
    if args.wait:
        return _print_outcome(_wait_predictor(row.pk))
    print("queued for the trainer (latencylab trainer, or latencylab up, runs it)")
    return 0


def _wait_predictor(pk: int) -> Any:
    from server.predictors.models import Predictor

    last = ""
    while True:
        row = Predictor.objects.get(pk=pk)
        line = f"  {row.state}: {row.progress_message}"
        if line != last:
            print(line, flush=True)
            last = line
        if row.state in ("ready", "failed"):
            return row
        time.sleep(1)


def _print_outcome(row: Any) -> int:
    if row is None or row.state != "ready":
        return fail(f"training failed: {row.failure_reason if row is not None else 'the predictor is gone'}", 1)
    ev = row.evaluation
    print(f"ready: end-to-end MAPE {100 * ev['e2e_mape']:.2f} % ({ev['protocol']}, {ev['n_test']} networks)")
    if row.rank_reason:
        print(f"not rankable: {row.rank_reason}; it answers when named, never as its device's best")
    rows = [(k, f"{100 * v:.2f} %", ev.get("kernel_count", {}).get(k, "")) for k, v in ev["kernel_mape"].items()]
    print_table(["kernel type", "MAPE", "kernels"], rows)
    curve = ", ".join(f"{p['n']}: {100 * p['e2e_mape']:.2f} %" for p in ev.get("by_training_size", []))
    print(f"MAPE vs training networks: {curve}")
    return 0


def predictors_list(args: argparse.Namespace) -> int:
    """``latencylab predictors list [--device D]``."""
    _django()
    from django.core.exceptions import ValidationError

    from server.predictors.models import Predictor
    from server.predictors.services import find_device

    rows = Predictor.objects.select_related("device", "team").defer("artifact").order_by("device", "method", "version")
    if args.device:
        try:
            rows = rows.filter(device=find_device(args.device))
        except ValidationError as exc:
            return fail(_messages(exc))
    table = [
        (
            p.pk,
            p.device.name,
            p.method,
            p.version,
            p.state,
            "-" if p.e2e_mape is None else f"{100 * p.e2e_mape:.2f} %",
            p.n_test,
            "yes" if p.rankable else "no",
            p.n_train,
            p.team.name if p.team else "(shared)",
            p.scenario_key,
        )
        for p in rows
    ]
    print_table(
        ["id", "device", "method", "v", "state", "e2e MAPE", "tested on", "rankable", "n", "team", "scenario"], table
    )
    return 0


def predictors_show(args: argparse.Namespace) -> int:
    """``latencylab predictors show ID``."""
    _django()
    from server.predictors.models import Predictor

    row = Predictor.objects.defer("artifact").filter(pk=args.id).first()
    if row is None:
        return fail(f"there is no predictor #{args.id}")
    print_json(
        {
            "id": row.pk,
            "device": row.device_id,
            "method": row.method,
            "version": row.version,
            "state": row.state,
            "rankable": row.rankable,
            "rank_reason": row.rank_reason,
            "failure_reason": row.failure_reason,
            "scenario": row.scenario,
            "params": row.params,
            "evaluation": {k: v for k, v in row.evaluation.items() if k != "points"},
            "meta": row.meta,
        }
    )
    return 0

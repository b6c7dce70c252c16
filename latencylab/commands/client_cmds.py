"""``latencylab profile`` and ``latencylab predict``: the API client from the command line.

The server and token come from ``--url`` / ``--token`` or ``LATENCYLAB_URL`` / ``LATENCYLAB_TOKEN``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from devicelab.backends.profile_settings import ProfileSettings
from latencylab.commands.output import fail, print_json, print_table
from latencylab.commands.spec_flags import add_spec_flags, spec_values

# A refused request that names bad input (400) or an unknown id (404) exits 2 like bad usage.
_BAD_INPUT_STATUSES = (400, 404)


def _add_server_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", help="server URL (default: $LATENCYLAB_URL)")
    p.add_argument("--token", help="API token (default: $LATENCYLAB_TOKEN)")
    p.add_argument("--json", action="store_true", help="print the server's answer as JSON")


def add_parsers(sub: Any) -> None:
    """Register ``profile`` and ``predict``."""
    prof = sub.add_parser("profile", help="profile a model on a lab device through the API and print the result")
    prof.add_argument("model", metavar="MODEL", help="an .onnx, .tflite or graph .json file, or a model id")
    prof.add_argument("--device", required=True, help="device name or id (see GET /api/devices/)")
    # every setting of ProfileSettings, as its declaration says (--warmup for warmup_runs)
    add_spec_flags(
        prof,
        ProfileSettings,
        types={"cores": _cores_argument, "on_noise": _noise_argument},
        metavars={"cold_runs": "N", "cooldown_c": "C", "cooldown_max_s": "S", "on_noise": "POLICY", "cores": "CORES"},
        notes={"cores": "Here: ids as 0-3 or 0,2, or a name (big).", "on_noise": "Here also rerun:N (N reruns)."},
    )
    prof.add_argument("--timeout", type=float, help="give up waiting after this many seconds")
    prof.add_argument("--top", type=int, default=10, help="slowest operators to list (default 10)")
    _add_server_arguments(prof)
    prof.set_defaults(func=run_profile)

    pred = sub.add_parser("predict", help="predict the latency of architectures on a device")
    pred.add_argument(
        "archs", nargs="*", metavar="ARCH", help="an .onnx / graph .json / .tflite file or an NB-201 string ('|...|')"
    )
    pred.add_argument(
        "--nas",
        action="append",
        default=[],
        metavar="SPACE:N[:SEED]",
        help="also predict N architectures sampled from a NAS space (synthetic or nb201); repeatable",
    )
    pred.add_argument("--device", help="device name or id")
    pred.add_argument("--predictor", type=int, help="predictor id (instead of --device)")
    pred.add_argument("--method", choices=["lasso", "rf", "gbdt", "mlp"], help="the device's predictor of this method")
    pred.add_argument("--breakdown", action="store_true", help="also print the predicted per-kernel latencies")
    _add_server_arguments(pred)
    pred.set_defaults(func=run_predict)


def _client(args: argparse.Namespace) -> Any:
    from latencylab.client import Client

    return Client(args.url, args.token)


def _with_client_errors(run: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """Turn the client's errors into one line on stderr: exit 2 for bad input, 1 otherwise."""

    def wrapped(args: argparse.Namespace) -> int:
        from latencylab.client import ClientError, InputError

        try:
            return run(args)
        except InputError as exc:
            return fail(str(exc))
        except ClientError as exc:
            return fail(str(exc), 2 if exc.status in _BAD_INPUT_STATUSES else 1)

    wrapped.__doc__ = run.__doc__
    return wrapped


# -- profile -------------------------------------------------------------------------------------


class ProgressBar:
    """A one-line text progress bar on a stream; on a non-terminal, one line per 10% step."""

    def __init__(self, stream: IO[str], width: int = 30) -> None:
        self.stream = stream
        self.width = width
        self.tty = stream.isatty()
        self.shown = -1

    def update(self, fraction: float, message: str = "") -> None:
        """Show ``fraction`` (0..1) and what is being done."""
        fraction = min(max(fraction, 0.0), 1.0)
        filled = int(round(fraction * self.width))
        line = f"[{'#' * filled}{'.' * (self.width - filled)}] {fraction:4.0%} {message}"
        if self.tty:
            self.stream.write("\r" + line[:120].ljust(self.shown if self.shown > 0 else 0))
            self.shown = len(line[:120])
        else:
            step = int(fraction * 10)
            if step == self.shown:
                return
            self.shown = step
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End the bar's line."""
        if self.tty and self.shown > 0:
            self.stream.write("\n")
            self.stream.flush()
        self.shown = -1


def _model_argument(value: str) -> int | Path:
    """A model file, or a model id when no such file exists and the argument is a number."""
    from latencylab.client import InputError

    path = Path(value)
    if path.is_file():
        return path
    if value.isdigit():
        return int(value)
    raise InputError(f"MODEL: no such file {value!r} (nor a model id)")


def _cores_argument(value: str) -> list[int] | str:
    """``--cores``: CPU ids as '0-3,6', or the name of a core cluster ('big')."""
    text = value.replace(" ", "")
    if text.isidentifier():
        return text
    cores: set[int] = set()
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise argparse.ArgumentTypeError(f"{value!r} is neither core ids (0-3 or 0,2) nor a cluster name (big)")
        first, last = int(lo), int(hi) if sep else int(lo)
        if last < first:
            raise argparse.ArgumentTypeError(f"the range {part!r} runs backwards")
        cores.update(range(first, last + 1))
    return sorted(cores)


def _noise_argument(value: str) -> dict[str, Any]:
    """``--on-noise flag|fail|rerun|rerun:N`` as settings keys (``rerun:N`` sets noise_reruns too)."""
    policy, _, count = value.partition(":")
    if policy not in ("flag", "rerun", "fail") or (count and (policy != "rerun" or not count.isdigit())):
        raise argparse.ArgumentTypeError(f"{value!r}: expected flag, fail, rerun or rerun:N")
    return {"on_noise": policy, **({"noise_reruns": int(count)} if count else {})}


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    from latencylab.client import InputError

    try:
        return spec_values(args, ProfileSettings)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _central(op: dict[str, Any]) -> float:
    """An operator's time as ranked and summed: its median, its mean where there is none."""
    return float(op["median"] if op.get("median") is not None else op["mean"])


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def _hottest(zones: Any) -> str:
    """The hottest of ``{zone: °C}``, as '44.0 °C (cpu-1-2)'."""
    temps = {z: t for z, t in (zones or {}).items() if isinstance(t, int | float)} if isinstance(zones, dict) else {}
    if not temps:
        return "-"
    zone = max(temps, key=lambda z: temps[z])
    return f"{temps[zone]:.1f} °C ({zone})"


def _conditions(env: dict[str, Any]) -> list[str]:
    """The lines a phone's measuring conditions take (none for a result without them)."""
    lines = []
    if "temperatures_before_c" in env or "temperatures_after_c" in env:
        line = f"temperature: hottest before {_hottest(env.get('temperatures_before_c'))}, "
        line += f"after {_hottest(env.get('temperatures_after_c'))}"
        cooldown = env.get("cooldown")
        if isinstance(cooldown, dict) and cooldown.get("threshold_c") is not None:
            waited = cooldown.get("waited_s") or 0.0
            reached = "" if cooldown.get("reached", True) else ", not reached"
            line += f"; cool-down: waited {waited:.1f} s for < {cooldown['threshold_c']:g} °C{reached}"
        lines.append(line)
    governors, after = env.get("governors"), env.get("frequencies_khz_after")
    if isinstance(governors, dict) and governors:
        clocks = []
        for core in sorted(governors, key=lambda c: int(c) if str(c).isdigit() else 1 << 30):
            khz = after.get(core) if isinstance(after, dict) else None
            clocks.append(f"cpu{core} {governors[core]}" + (f" {khz / 1e6:.2f} GHz" if khz else ""))
        lines.append("cpu: " + ", ".join(clocks))
    state = []
    if "screen_on" in env:
        state.append({True: "screen on", False: "screen off"}.get(env["screen_on"], "screen unknown"))
    if env.get("charging"):
        state.append("not charging" if env["charging"] == "none" else f"charging ({env['charging']})")
    if env.get("battery_level") is not None:
        state.append(f"battery {env['battery_level']}%")
    if state:
        lines.append("phone: " + ", ".join(state))
    return lines


def _run_settings(settings: dict[str, Any], env: dict[str, Any]) -> str:
    """'tflite, xnnpack, 4 thread(s), cores 6,7 (big)' from the settings the worker used."""
    parts = [str(settings.get("backend", "?"))]
    if settings.get("delegate"):
        parts.append(str(settings["delegate"]))
    parts.append(f"{settings.get('threads', '?')} thread(s)")
    if settings.get("cores"):
        cores = "cores " + ",".join(str(c) for c in settings["cores"])
        parts.append(cores + (f" ({env['cluster']})" if env.get("cluster") else ""))
    return ", ".join(parts)


def print_result(job: dict[str, Any], top: int = 10) -> None:
    """A finished job's end-to-end statistics, its measuring conditions and flags, and its slowest
    operators. A runtime that reports aggregates only (a phone's) has no median or p90: said so."""
    result = job["result"]
    e2e, cold, settings = result["e2e"], result["cold"], result.get("settings") or {}
    env = result.get("environment") or {}
    print(
        f"job #{job['id']} {job['state']}: {job.get('model_name')} on {job.get('device_name')} "
        f"({_run_settings(settings, env)}, {e2e['n']} runs)"
    )
    noisy = "  NOISY" if e2e.get("noisy") else ""
    cv = "-" if e2e.get("cv") is None else f"{e2e['cv']:.1%}"
    if e2e.get("median") is None:
        spread = "(no median or p90: the tool reports averages only)"
        print(
            f"end-to-end ms: mean {_ms(e2e['mean'])}  std {_ms(e2e['std'])}  min {_ms(e2e['min'])}  "
            f"max {_ms(e2e['max'])}  cv {cv}{noisy}  {spread}"
        )
    else:
        print(
            f"end-to-end ms: median {_ms(e2e['median'])}  p90 {_ms(e2e['p90'])}  mean {_ms(e2e['mean'])}  "
            f"std {_ms(e2e['std'])}  min {_ms(e2e['min'])}  max {_ms(e2e['max'])}  cv {cv}{noisy}"
        )
    print(f"cold start ms: load {_ms(cold['load_ms'])}  first run {_ms(cold['first_run_ms'])}")
    starts = result.get("cold_starts") or {}
    if starts.get("source") == "fresh-process":
        total = starts["total_ms"]
        print(
            f"cold starts ({starts['n']} fresh processes), load + first run ms: median {_ms(total['median'])}  "
            f"mean {_ms(total['mean'])}  std {_ms(total['std'])}  min {_ms(total['min'])}  max {_ms(total['max'])}"
        )
    load = env.get("machine_load") or {}
    if load.get("summary"):
        print(f"machine before the runs: {load['summary']}")
    noise = env.get("noise") or {}
    if len(noise.get("attempts") or ()) > 1:
        cvs = ", ".join(f"{a['cv']:.1%}" for a in noise["attempts"])
        print(f"noisy, measured again (on_noise = {noise['policy']}): CVs {cvs}; kept attempt {noise['kept'] + 1}")
    if result.get("peak_memory_mb") is not None:
        print(f"peak memory: {result['peak_memory_mb']:.1f} MB")
    for line in _conditions(env):
        print(line)
    for flag in result.get("flags") or ():
        print(f"FLAGGED {flag}")
    timed = sorted((o for o in result["operators"] if o.get("mean") is not None), key=lambda o: -_central(o))
    if timed and top > 0:
        total = sum(_central(o) for o in timed) or 1.0
        by = "median" if any(o.get("median") is not None for o in timed) else "mean (the runtime reports no median)"
        print(f"\nslowest operators by {by} ({min(top, len(timed))} of {len(timed)} timed):")
        rows = [
            (
                o["name"],
                o["op_type"],
                o.get("kernel") or "",
                _ms(o.get("median")),
                _ms(o["mean"]),
                _ms(o.get("p90")),
                f"{_central(o) / total:.1%}",
            )
            for o in timed[:top]
        ]
        print_table(["operator", "type", "kernel", "median ms", "mean ms", "p90 ms", "share"], rows)


@_with_client_errors
def run_profile(args: argparse.Namespace) -> int:
    """``latencylab profile MODEL --device D``: queue a job, show its progress, print its result."""
    model = _model_argument(args.model)
    settings = _settings(args)
    with _client(args) as client:
        job = client.profile(model, args.device, settings)
        queued = job.data.get("settings") or {}
        print(
            f"job #{job.id} queued on {job.data.get('device_name', args.device)} ({_run_settings(queued, {})})",
            file=sys.stderr,
        )
        for warning in job.data.get("warnings") or ():
            print(f"warning: {warning}", file=sys.stderr)
        bar = ProgressBar(sys.stderr)
        try:
            job.wait(timeout=args.timeout, on_progress=lambda f: bar.update(f, job.progress_message))
        except KeyboardInterrupt:
            bar.close()
            job.cancel()
            print(f"cancelled job #{job.id}", file=sys.stderr)
            return 130
        finally:
            bar.close()
    if args.json:
        print_json(job.data)
    else:
        print_result(job.data, args.top)
    return 0


# -- predict -------------------------------------------------------------------------------------


def _nas_architectures(spec: str) -> list[Any]:
    """``SPACE:N[:SEED]`` -> sampled architectures (NB-201 as cell strings, synthetic as graphs)."""
    from latencylab.client import InputError

    parts = spec.split(":")
    if len(parts) not in (2, 3) or not all(p.strip().isdigit() for p in parts[1:]):
        raise InputError(f"--nas {spec!r}: expected SPACE:N or SPACE:N:SEED, e.g. synthetic:100:0")
    space, n, seed = parts[0], int(parts[1]), int(parts[2]) if len(parts) == 3 else 0
    if n < 1:
        raise InputError(f"--nas {spec!r}: N must be at least 1")
    if space == "nb201":
        from devicelab.graph.nas import nb201

        return [{"name": f"nb201-{seed}-{i}", "nb201": s} for i, s in enumerate(nb201.sample_strings(n, seed))]
    if space == "synthetic":
        from devicelab.graph.nas import sample

        return list(sample(space, n, seed))
    raise InputError(f"--nas {spec!r}: unknown space {space!r}; the spaces are synthetic and nb201")


WARNINGS_SHOWN = 20  # distinct warnings printed; --json has every architecture's
NAMES_SHOWN = 3  # architectures named per warning
_WHY_IT_ANSWERED = {"unranked": "the device has no rankable predictor", "named": "you named it"}


def predictor_line(p: dict[str, Any]) -> str:
    """``predictor #3 v2 (gbdt) of device #1: test MAPE 4.10 % on 67 networks``."""
    mape = p.get("e2e_mape")
    tested = "no test MAPE" if mape is None else f"test MAPE {100 * mape:.2f} % on {p.get('n_test')} networks"
    return f"predictor #{p.get('id')} v{p.get('version')} ({p.get('method')}) of device #{p.get('device')}: {tested}"


def rank_warning(p: dict[str, Any]) -> str | None:
    """What to say when an unrankable predictor answered; None when it is rankable."""
    if p.get("rankable", True):
        return None
    why = _WHY_IT_ANSWERED.get(str(p.get("chosen_as")), "it was chosen")
    return (
        f"warning: predictor #{p.get('id')} is not rankable ({p.get('rank_reason')}); it answered because {why}, "
        "so its test MAPE says little about these predictions"
    )


def print_prediction_warnings(predictions: Any, out: IO[str] | None = None) -> None:
    """The answering predictor's rank warning and the architectures' warnings on ``out`` (stderr):
    each distinct warning once, with the architectures that have it (a NAS batch repeats them) and
    the largest share of a predicted latency its kernels take; and when NB-201 cells were computed
    because the predictor's table is not built yet, that."""
    out = out if out is not None else sys.stderr
    note = rank_warning(predictions.predictor or {})
    if note:
        print(note, file=out)
    said = getattr(predictions, "answered_by", None) or {}
    if said.get("nb201_table") == "not_built":
        print(
            f"note: the predictor's NB-201 table is not built yet: {said.get('computed')} architecture(s) were "
            "computed one by one (slower; the table answers once the trainer has built it)",
            file=out,
        )
    by_message: dict[str, list[str]] = {}
    largest: dict[str, float] = {}
    for r in predictions:
        for w in r.get("warnings") or ():
            message = str(w.get("message"))
            by_message.setdefault(message, []).append(str(r.get("name")))
            if w.get("share") is not None:
                largest[message] = max(largest.get(message, 0.0), float(w["share"]))
    for message, names in list(by_message.items())[:WARNINGS_SHOWN]:
        shown = ", ".join(names[:NAMES_SHOWN])
        if len(names) > NAMES_SHOWN:
            shown += f", ... ({len(names)} architectures)"
        effect = (
            f" (those kernels: up to {100 * largest[message]:.2f} % of a predicted latency)"
            if message in largest
            else ""
        )
        print(f"warning: {message}{effect} [{shown}]", file=out)
    if len(by_message) > WARNINGS_SHOWN:
        print(f"warning: {len(by_message) - WARNINGS_SHOWN} more distinct warning(s); --json shows all", file=out)


def print_predictions(predictions: Any) -> None:
    """The answering predictor (version, test MAPE), the predicted latency and number of warnings of
    each architecture, and the kernels when they were asked for; the warnings go to stderr."""
    print(predictor_line(predictions.predictor or {}))
    rows = [
        (
            r["name"],
            _ms(r.get("latency_ms")),
            _ms(r.get("kernels_ms")),
            _ms(r.get("overhead_ms")),
            len(r.get("warnings") or ()),
        )
        for r in predictions
    ]
    print_table(["architecture", "latency ms", "kernels ms", "overhead ms", "warnings"], rows)
    for r in predictions:
        if r.get("kernels"):
            print(f"\n{r['name']}: {len(r['kernels'])} kernels")
            print_table(
                ["kernel", "type", "ops", "ms"],
                [(k["name"], k["type"], len(k.get("ops") or []), _ms(k.get("latency_ms"))) for k in r["kernels"]],
            )
    sys.stdout.flush()
    print_prediction_warnings(predictions)


@_with_client_errors
def run_predict(args: argparse.Namespace) -> int:
    """``latencylab predict ARCH... --device D``: predicted latencies from the server's predictor."""
    from latencylab.client import InputError

    archs: list[Any] = list(args.archs)
    for spec in args.nas:
        archs.extend(_nas_architectures(spec))
    if not archs:
        raise InputError("nothing to predict: give ARCH files or NB-201 strings, or --nas SPACE:N")
    if (args.device is None) == (args.predictor is None):
        raise InputError("give --device or --predictor (one of them)")
    with _client(args) as client:
        predictions = client.predict(
            archs, device=args.device, predictor=args.predictor, method=args.method, breakdown=args.breakdown
        )
    if args.json:
        print_json(
            {
                "predictor": predictions.predictor,
                "answered_by": predictions.answered_by,
                "warning_summary": predictions.warning_summary,
                "results": list(predictions),
            }
        )
        note = rank_warning(predictions.predictor or {})
        if note:
            print(note, file=sys.stderr)
    else:
        print_predictions(predictions)
    return 0


__all__ = [
    "ProgressBar",
    "add_parsers",
    "predictor_line",
    "print_prediction_warnings",
    "print_predictions",
    "print_result",
    "rank_warning",
    "run_predict",
    "run_profile",
]

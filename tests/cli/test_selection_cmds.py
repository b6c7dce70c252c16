"""``latencylab select``, ``latencylab selection simulate|show|list`` and the Python client's
model-selection methods against a live server: one request's choice printed with its
probabilities, base model, M_E and time range (the same answer as the JSON); a simulation's flags
reaching the server as its spec, ``--wait`` printing per network profile the table over SLA
targets and CNNSelect's relative improvement in attainment over greedy from the stored points;
refusals as one line on stderr with exit 2; the client waiting, timing out and raising a failed
simulation's reason.

This test stands in for the trainer: it runs the queued simulation in-process with
``run_simulation`` (tests/e2e/test_selection_simulation.py has a real trainer run one)."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from devicelab.measure.stats import summarize
from devicelab.selection import POLICIES, PRESETS, SimulationResult, compare_policies
from latencylab.cli import main
from latencylab.commands import selection_cmds
from tests.cli.live_lab import run_cli as _run
from tests.e2e.live_clients import wait_for_request_threads
from tests.server import conftest as server_fixtures
from tests.server.factories import profile_result, tiny_graph
from tests.waiting import wait_for

make_device = server_fixtures.make_device
make_network = server_fixtures.make_network
make_job = server_fixtures.make_job
media_in_tmp = server_fixtures.media_in_tmp

# Only the tests against the live server need the database (flushed after each: ~1 s).
live = pytest.mark.django_db(transaction=True)

SLAS = [80.0, 200.0, 320.0]


def test_the_cli_offers_devicelabs_policies() -> None:
    from devicelab.selection import DEFAULT_THRESHOLD_MS, SELECT_POLICIES

    assert selection_cmds.POLICIES == POLICIES
    assert selection_cmds.SELECT_POLICIES == SELECT_POLICIES
    # select's T_threshold default is simulate's (the built-in scenario's) and the server's.
    assert selection_cmds.DEFAULT_THRESHOLD_MS == DEFAULT_THRESHOLD_MS


@pytest.mark.parametrize(
    ("value", "targets"),
    [
        ("100,200,300", [100.0, 200.0, 300.0]),
        ("50,100,...,400", [50.0, 100.0, 150.0, 200.0, 250.0, 300.0, 350.0, 400.0]),
        ("10, 20, ..., 45", [10.0, 20.0, 30.0, 40.0, 45.0]),
        ("12.5", [12.5]),
    ],
)
def test_sla_targets_continue_the_step_before_the_ellipsis(value: str, targets: list[float]) -> None:
    assert selection_cmds._sla_list(value) == targets


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["selection", "simulate", "--paper", "--sla-ms", "100,...,400"], "write at least two targets"),
        (["selection", "simulate", "--paper", "--sla-ms", "100,150,175,...,400"], "give evenly increasing targets"),
        (["selection", "simulate", "--paper", "--sla-ms", "100,200,...,150"], "must be larger than 200"),
        (["selection", "simulate", "--paper", "--sla-ms", "-5"], "a positive number of milliseconds"),
        (["selection", "simulate", "--paper", "--policies", "cnnselect,coin"], "unknown policies ['coin']"),
        (["selection", "simulate", "--paper", "--device", "d"], "not allowed with argument"),
        (["select", "--device", "d", "--models", "3,x", "--sla-ms", "9", "--input-ms", "1"], "list of model ids"),
        (["select", "--device", "d", "--models", "3", "--sla-ms", "9"], "one of the arguments --input-ms"),
        (
            [
                "select",
                "--device",
                "d",
                "--models",
                "3",
                "--sla-ms",
                "9",
                "--input-ms",
                "1",
                "--network-profile",
                "lte",
            ],
            "not allowed with argument",
        ),
    ],
)
def test_bad_flags_are_bad_usage(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2 and says in capsys.readouterr().err


def _measured_model(
    member: Any, device: Any, make_network: Any, make_job: Any, name: str, top1: float, samples: list[float]
) -> Any:
    """A model of ``member``'s team with an accuracy and a succeeded profile of ``samples`` on ``device``."""
    from server.networks.services import model_graph
    from server.profiling.services import claim_job, ingest_result

    model = make_network(member.team, tiny_graph(name))
    model.top1_accuracy = top1
    model.save()
    job = make_job(member.team, model, device)
    assert claim_job(job.pk, "run-1") is not None
    result = dataclasses.replace(profile_result(model_graph(model)), samples_ms=samples, e2e=summarize(samples))
    assert ingest_result(job.pk, "run-1", result) is not None
    return model


@pytest.fixture
def lab(
    live_server: Any,
    make_member: Callable[..., Any],
    make_device: Callable[..., Any],
    make_network: Callable[..., Any],
    make_job: Callable[..., Any],
) -> Iterator[dict[str, Any]]:
    """A member, a device named serving-cpu with two measured models (fast and less accurate, slow
    and accurate), and the CLI's server arguments."""
    member = make_member()
    device = make_device("cpu", name="serving-cpu")
    fast = _measured_model(member, device, make_network, make_job, "fastnet", 60.0, [9.0, 10.0, 11.0, 10.0])
    slow = _measured_model(member, device, make_network, make_job, "slownet", 80.0, [95.0, 100.0, 105.0, 100.0])
    server = ["--url", live_server.url, "--token", member.key]
    yield {"member": member, "device": device, "fast": fast, "slow": slow, "server": server, "url": live_server.url}
    wait_for_request_threads()


@live
def test_select_prints_the_choice_its_probabilities_and_why(
    lab: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    models = f"{lab['fast'].pk},{lab['slow'].pk}"
    argv = ["select", "--device", "serving-cpu", "--models", models, "--sla-ms", "300", "--input-ms", "60"]
    argv += ["--threshold-ms", "120", "--seed", "3", *lab["server"]]
    rc, out, err = _run([*argv, "--json"], capsys)
    assert rc == 0, err
    answer = json.loads(out)
    assert answer["t_budget"] == pytest.approx(300 - 2 * 60) and answer["t_lower"] == pytest.approx(180 - 120)

    rc, out, err = _run(argv, capsys)
    assert rc == 0, err
    lines = out.splitlines()
    chosen = answer["chosen"]
    assert lines[0] == f"chosen: {chosen['name']} (model #{chosen['model']})"
    assert lines[1] == "T_input = 60 ms (given); T_sla = 300 ms"
    assert lines[2].startswith("T_budget = T_sla - 2 T_input = 180 ms; T_R = [T_L, T_U] = [60, 180] ms")
    assert f"base model m*: {answer['base']}" in out
    members = answer["exploration"]
    assert (f"M_E: {{{', '.join(members)}}}" if members else "M_E: empty") in out
    table = {line.split()[0]: line.split() for line in lines if line.startswith(("fastnet", "slownet"))}
    for c in answer["candidates"]:
        row = table[c["name"]]
        assert row[1] == str(c["model"]) and row[2] == f"{c['accuracy']:.1f}" and row[3] == f"{c['mu_ms']:.2f}"
        assert f"{answer['probabilities'][c['name']]:.3f}" in row
        assert "measured" in row and f"#{c['latency_source']['job']}," in row
    assert "chosen" in table[chosen["name"]] and "m*" in table[answer["base"]]
    assert all("M_E" in table[m] for m in members)
    assert out.rstrip().endswith(f"why: {answer['why']}")
    assert "policy: lab" in lines
    # fastnet's samples spread 8 % about their mean: the profile is flagged noisy and the CLI says so.
    assert any(line.startswith("warning: the latency profile of 'fastnet'") for line in lines)

    # T_input from a network preset: the mean transfer of the input's bytes.
    argv = ["select", "--device", str(lab["device"].pk), "--models", models, "--sla-ms", "900"]
    rc, out, err = _run([*argv, "--network-profile", "lte", "--input-bytes", "200000", *lab["server"]], capsys)
    assert rc == 0, err
    input_ms = PRESETS["lte"].transfer_ms(200_000)
    assert f"T_input = {input_ms:.4g} ms (the mean transfer of 200,000 bytes under lte)" in out


@live
def test_select_over_a_range_of_slas_prints_per_model_and_policy(
    lab: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    models = f"{lab['fast'].pk},{lab['slow'].pk}"
    argv = ["select", "--device", "serving-cpu", "--models", models, "--sla-ms", "100,200,...,400"]
    argv += ["--network-profile", "prototype_wifi", "--on-device", "serving-cpu", "--requests", "500"]
    rc, out, err = _run([*argv, "--json", *lab["server"]], capsys)
    assert rc == 0, err
    answer = json.loads(out)
    assert answer["sla_targets_ms"] == [100.0, 200.0, 300.0, 400.0] and answer["threshold_ms"] == 20.0
    rc, out, err = _run([*argv, *lab["server"]], capsys)
    assert rc == 0, err
    printed = [line.split() for line in out.splitlines() if line.split()[:1] in (["100"], ["200"], ["300"], ["400"])]
    assert len(printed) == len(answer["rows"])
    for row, r in zip(printed, answer["rows"], strict=True):
        assert row[-3:] == [
            f"{r['p_meet'] * 100:.1f}%",
            f"{r['expected_accuracy']:.1f}",
            f"{r['accuracy_within_sla']:.1f}",
        ]
    assert any(r["kind"] == "on_device" for r in answer["rows"]) and "on device" in out
    assert "warning: the latency profile of 'fastnet'" in out
    # Setting a model's accuracy from the CLI changes what selection reads.
    rc, out, err = _run(["selection", "accuracy", str(lab["fast"].pk), "--top1", "65.5", *lab["server"]], capsys)
    assert rc == 0 and "top-1 65.5%" in out, err
    rc, out, err = _run([*argv, "--json", *lab["server"]], capsys)
    fast_rows = [r for r in json.loads(out)["rows"] if r["option"] == "fastnet"]
    assert fast_rows and all(r["expected_accuracy"] == 65.5 for r in fast_rows)


@live
def test_select_refusals_are_one_line_on_stderr(lab: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    base = ["select", "--models", str(lab["fast"].pk), "--sla-ms", "100", *lab["server"]]
    cases = [
        (
            ["--device", "serving-cpu", "--input-ms", "5", "--input-bytes", "9"],
            "--input-bytes goes with --network-profile",
        ),
        (["--device", "nowhere", "--input-ms", "5"], "no device called 'nowhere'; the devices are: serving-cpu"),
        (
            ["--device", "serving-cpu", "--network-profile", "moon"],
            "HTTP 400: network_profile: no network profile 'moon'",
        ),
        (
            ["--device", "serving-cpu", "--input-ms", "5", "--models", "999999"],
            "HTTP 400: models: there is no model [999999]",
        ),
        (["--device", "serving-cpu", "--input-ms", "5", "--table"], "a range of SLAs needs --network-profile"),
        (["--device", "serving-cpu", "--input-ms", "5", "--on-device", "x"], "go with a range of SLAs"),
    ]
    for extra, says in cases:
        rc, out, err = _run([*base, *extra], capsys)
        assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, err
        assert err.startswith("latencylab: error: ") and says in err, err


def _result_tables(out: str, profile: str) -> dict[float, list[str]]:
    """The rows of ``profile``'s table in ``selection show``'s output, by SLA target."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{profile}: mean network time"))
    rows = {}
    for line in lines[start + 3 :]:
        if not line.strip() or not line.split()[0].replace(".", "").isdigit():
            break
        rows[float(line.split()[0])] = line.split()[1:]
    return rows


def _check_printed_result(out: str, stored: dict[str, Any]) -> None:
    """Every profile's table holds the stored points and the relative gains computed from them."""
    result = SimulationResult.from_dict(stored)
    for profile in ("campus_wifi", "lte"):
        rows = _result_tables(out, profile)
        assert sorted(rows) == SLAS
        for sla, cells in rows.items():
            expected = []
            for policy in result.policies:
                point = result.point(policy, sla, profile)
                expected += [f"{point.attainment * 100:.1f}%", f"{point.effective_accuracy:.1f}"]
            mine = round(result.point("cnnselect", sla, profile).attainment * result.requests)
            greedy = round(result.point("greedy", sla, profile).attainment * result.requests)
            expected.append(f"{(mine / greedy - 1) * 100:+.1f}%" if greedy else "-")
            assert cells == expected
        pooled = compare_policies(result, profiles=[profile])
        gain = pooled.attainment_improvement_pct
        assert (
            f"CNNSelect met the SLA in {pooled.met:,} of {result.requests * len(SLAS):,} requests, greedy in "
            f"{pooled.baseline_met:,}: {'-' if gain is None else f'{gain:+.1f}%'} relative improvement in SLA attainment"
        ) in out
    overall = compare_policies(result).attainment_improvement_pct
    assert overall is not None
    assert f"{overall:+.1f}% relative improvement in SLA attainment (the paper: +88.5%)" in out


@live
def test_simulate_sends_its_flags_waits_and_prints_each_profiles_table(
    lab: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    from server.selection.models import SelectionSimulation
    from server.selection.simulations import run_simulation

    argv = ["selection", "simulate", "--paper", "--sla-ms", "80,200,...,320", "--profiles", "campus_wifi,lte"]
    argv += ["--requests", "300", "--seed", "5", "--threshold-ms", "15", "--policies", "cnnselect,greedy,oracle"]
    argv += ["--title", "small paper", "--wait", "--timeout", "120"]
    outcome: dict[str, int] = {}
    cli = threading.Thread(target=lambda: outcome.update(rc=main(argv + lab["server"])))
    cli.start()
    try:
        row = wait_for(
            lambda: SelectionSimulation.objects.filter(team=lab["member"].team).first(), what="the simulation row"
        )
        spec = row.spec
        assert spec["sla_targets_ms"] == SLAS and [p["name"] for p in spec["profiles"]] == ["campus_wifi", "lte"]
        assert (spec["requests"], spec["seed"], spec["threshold_ms"]) == (300, 5, 15.0)
        assert spec["policies"] == ["cnnselect", "greedy", "oracle"] and row.title == "small paper"
        assert len(spec["models"]) == 11  # table 5
        done = run_simulation(row.pk, "test-trainer")
        assert done is not None and done.state == "succeeded", done and done.failure_reason
    finally:
        cli.join(timeout=120)
    assert outcome.get("rc") == 0
    out, err = capsys.readouterr()
    assert f"selection simulation #{row.pk} queued" in err
    assert out.startswith(f"selection simulation #{row.pk} succeeded: small paper")
    assert "3 SLA targets from 80 to 320 ms; profiles campus_wifi, lte; 300 requests per point, seed 5" in out
    assert (
        "CNNSelect (paper) met  CNNSelect (paper) acc %  greedy met  greedy acc %  oracle met  oracle acc %  vs greedy"
        in out
    )
    assert done.result is not None
    _check_printed_result(out, done.result)

    rc, shown, _ = _run(["selection", "show", str(row.pk), *lab["server"]], capsys)
    assert rc == 0 and shown == out
    rc, shown, _ = _run(["selection", "show", str(row.pk), "--json", *lab["server"]], capsys)
    assert rc == 0 and json.loads(shown)["result"] == done.result
    rc, listed, _ = _run(["selection", "list", *lab["server"]], capsys)
    assert rc == 0 and listed.splitlines()[2].split()[:4] == [str(row.pk), "succeeded", "small", "paper"]


@live
def test_simulate_measured_models_and_its_refusals(lab: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    from server.selection.models import SelectionSimulation

    models = f"{lab['fast'].pk},{lab['slow'].pk}"
    rc, out, err = _run(
        ["selection", "simulate", "--device", "serving-cpu", "--models", models, "--requests", "200", *lab["server"]],
        capsys,
    )
    assert rc == 0, err
    row = SelectionSimulation.objects.get()
    assert row.spec["scenario"] == "measured on serving-cpu"
    assert [m["samples_ms"] for m in row.spec["models"]] == [[9.0, 10.0, 11.0, 10.0], [95.0, 100.0, 105.0, 100.0]]
    assert out.startswith(f"selection simulation #{row.pk} queued: CNNSelect vs greedy: measured on serving-cpu")
    assert "models (measured on serving-cpu): fastnet (60%, 10 ms), slownet (80%, 100 ms)" in out
    assert "progress: 0%" in out

    base = ["selection", "simulate", *lab["server"]]
    cases = [
        (["--device", "serving-cpu"], 2, "--device needs --models"),
        (["--paper", "--models", models], 2, "--paper runs table 5's models"),
        (["--paper", "--requests", "0"], 2, "--requests must be at least 1, got 0"),
        (["--paper", "--requests", "50"], 2, "HTTP 400: requests: requests must be an integer in [100, 100000]"),
        (["--paper", "--profiles", "moon"], 2, "HTTP 400: network_profile: no network profile 'moon'"),
        (["--device", "serving-cpu", "--models", "999999"], 2, "HTTP 400: models: there is no model [999999]"),
    ]
    for extra, status, says in cases:
        rc, out, err = _run([*base, *extra], capsys)
        assert rc == status and out == "" and len(err.strip().splitlines()) == 1 and says in err, err
    rc, _, err = _run(["selection", "show", "999999", *lab["server"]], capsys)
    assert rc == 2 and "HTTP 404" in err
    assert SelectionSimulation.objects.count() == 1


@live
def test_the_python_client_selects_simulates_waits_and_raises(
    lab: dict[str, Any], make_member: Callable[..., Any]
) -> None:
    from latencylab.client import Client, ClientError, InputError, JobFailed, WaitTimeout
    from server.selection.simulations import fail_simulation, run_simulation

    ids = [lab["fast"].pk, lab["slow"].pk]
    with Client(lab["url"], lab["member"].key) as client:
        answer = client.select("serving-cpu", ids, 400, input_ms=20, threshold_ms=50, seed=3)
        assert answer["device"] == lab["device"].pk and sum(answer["probabilities"].values()) == pytest.approx(1.0)
        assert answer["chosen"]["model"] in ids and answer["t_budget"] == pytest.approx(360)
        again = client.select(lab["device"].pk, ids, 400, input_ms=20, threshold_ms=50, seed=3)
        assert again["chosen"] == answer["chosen"]  # the same seed, the same draw
        with pytest.raises(
            ClientError, match="HTTP 400: input_ms: give exactly one of input_ms and network_profile"
        ) as e:
            client.select("serving-cpu", ids, 400)
        assert e.value.status == 400
        with pytest.raises(InputError, match="takes model ids"):
            client.select("serving-cpu", ["fastnet"], 400, input_ms=5)  # type: ignore[list-item]

        queued = client.simulate_selection(scenario="paper", sla_targets_ms=(150, 400), profiles=["lte"], requests=200)
        assert queued["state"] == "queued" and queued["spec"]["sla_targets_ms"] == [150.0, 400.0]
        with pytest.raises(WaitTimeout, match=f"simulation #{queued['id']} is still queued after 0.2 s"):
            client.wait_for_selection_simulation(queued, timeout=0.2, poll=0.05)
        assert run_simulation(queued["id"], "test-trainer") is not None
        done = client.wait_for_selection_simulation(queued["id"], timeout=30)
        assert (
            done["state"] == "succeeded" and len(done["result"]["points"]) == 2 * 5
        )  # 2 SLA targets x the 5 default policies
        assert client.selection_simulation(queued["id"])["result"] == done["result"]

        doomed = client.simulate_selection(device="serving-cpu", models=ids, requests=100, title="doomed")
        assert fail_simulation(doomed["id"], "MemoryError: no room for the request streams")
        with pytest.raises(JobFailed, match="MemoryError: no room for the request streams") as failed:
            client.wait_for_selection_simulation(doomed["id"], timeout=30)
        assert failed.value.job["state"] == "failed"
        listed = client.selection_simulations()
        assert [s["id"] for s in listed] == [doomed["id"], queued["id"]] and "result" not in listed[0]

        with pytest.raises(ClientError, match="HTTP 400: profiles"):
            client.simulate_selection(scenario="paper", profiles=[])
        with pytest.raises(InputError, match="takes a list"):
            client.simulate_selection(scenario="paper", profiles="lte")
    stranger = make_member()
    with Client(lab["url"], stranger.key) as other:
        with pytest.raises(ClientError, match="HTTP 404") as hidden:
            other.selection_simulation(queued["id"])
        assert hidden.value.status == 404 and other.selection_simulations() == []

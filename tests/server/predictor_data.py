"""Real measurements and predictors the predictor tests share, made once per test process.

Host CPU profiles of a few small synthetic NAS samples (two timed runs each, about a second in
all), and a Lasso predictor of a qed phone trained on the real qed data with the fast search
(under a second). Nothing here is a stand-in: the profiles come from the CPU backend and the
predictor from ``train_predictor``.
"""

from __future__ import annotations

import functools
from typing import Any

from devicelab.backends.base import ProfileResult, ProfileSettings
from devicelab.graph import Graph, graph_to_json
from devicelab.predict.predictor import ScenarioPredictor

N_NETWORKS = 7
SETTINGS = ProfileSettings(threads=1, runs=2, warmup_runs=1)
QED_DEVICE = "s10"


@functools.lru_cache(maxsize=1)
def cpu_profiles() -> tuple[tuple[Graph, ProfileResult], ...]:
    """(graph, result) of small synthetic NAS samples profiled on this machine's CPU."""
    from devicelab.backends import cpu
    from devicelab.graph import nas

    device = cpu.discover()[0]
    graphs = nas.sample("synthetic", N_NETWORKS, 11)
    return tuple((g, cpu.profile(device, g, SETTINGS)) for g in graphs)


def store_profiles(team: Any, device: Any, profiles: Any = None) -> list[Any]:
    """Upload each profiled graph for ``team``, run a job for it on ``device`` through the services
    (submit, claim, ingest) and return the jobs."""
    from server.networks.services import upload_model
    from server.profiling.services import claim_job, ingest_result, submit_profiling_job

    jobs = []
    for graph, result in profiles if profiles is not None else cpu_profiles():
        model, _ = upload_model(team, None, graph_to_json(graph).encode(), f"{graph.name}.json", name=graph.name)
        job = submit_profiling_job(team, model, device, result.settings.as_dict())
        token = f"test-run-{job.pk}"
        assert claim_job(job.pk, token) is not None
        assert ingest_result(job.pk, token, result) is not None
        jobs.append(job)
    return jobs


@functools.lru_cache(maxsize=1)
def qed_predictor() -> ScenarioPredictor:
    """A Lasso predictor of the qed Mali G76 phone (fast search), as a qed device's predictor trains."""
    from devicelab.predict import qed
    from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer
    from devicelab.predict.predictor import Scenario, train_predictor
    from server.predictors.training import QED_OVERHEAD_KINDS

    scenario = Scenario("tflite_gpu", f"qed:{QED_DEVICE}", precision="fp16", gpu=qed.DEVICES[QED_DEVICE][0])
    return train_predictor(
        qed.gpu_samples(QED_DEVICE),
        TfliteGpuDeducer(qed.DEVICES[QED_DEVICE][1]),
        scenario,
        "lasso",
        search="fast",
        overhead_kinds=QED_OVERHEAD_KINDS,
    )


def ready_predictor(device: Any, team: Any = None, predictor: ScenarioPredictor | None = None, **fields: Any) -> Any:
    """A ready ``Predictor`` row holding a real artifact (the qed predictor unless given)."""
    from devicelab.predict.artifacts import predictor_to_dict
    from devicelab.predict.predictor import Scenario
    from server.predictors.models import Predictor, PredictorSource, PredictorState

    p = predictor or qed_predictor()
    artifact = predictor_to_dict(p)
    scenario = Scenario.from_dict({**p.scenario.to_dict(), "device": device.identity})
    values = {
        "team": team,
        "device": device,
        "source": PredictorSource.QED if team is None else PredictorSource.TIMINGS,
        "method": p.method,
        "scenario": scenario.to_dict(),
        "scenario_key": scenario.key,
        "version": Predictor.objects.filter(device=device, method=p.method).count() + 1,
        "state": PredictorState.READY,
        "artifact": artifact,
        "artifact_sha256": artifact["sha256"],
        "evaluation": {"e2e_mape": 0.1, "kernel_mape": {"conv2d": 0.1}, "protocol": "test", "n_test": 67},
        "meta": dict(artifact["meta"]),
        "e2e_mape": 0.1,
        "n_train": 67,
        "n_test": 67,  # every qed network once, by grouped cross-validation: rankable
    }
    values.update(fields)
    return Predictor.objects.create(**values)

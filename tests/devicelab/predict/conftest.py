"""Measured data the predictor tests share: a small host-CPU profile set, measured once per session,
and the qed measurements from real phones (read from ``../shared/data``, never copied here)."""

from __future__ import annotations

from typing import Any

import pytest

from devicelab.predict import qed
from devicelab.predict.records import ProfileRecord

N_SYNTHETIC = 40
RUNS = 3


@pytest.fixture(scope="session")
def qed_rows() -> list[qed.QedOp]:
    """Every operator row of the qed GPU file (skips when the shared data is absent)."""
    path = qed.default_data_dir() / qed.OPS_FILE
    if not path.exists():
        pytest.skip(f"qed data not found at {path}")
    return qed.read_ops(path)


@pytest.fixture(scope="session")
def qed_e2e() -> dict[str, dict[str, float]]:
    """End-to-end latencies of the qed networks."""
    path = qed.default_data_dir() / qed.E2E_FILE
    if not path.exists():
        pytest.skip(f"qed data not found at {path}")
    return qed.read_e2e(path)


@pytest.fixture(scope="session")
def cpu_records() -> dict[str, list[ProfileRecord]]:
    """40 synthetic NAS samples (3 timed runs each) and the probe graphs, profiled on the host CPU
    with one thread; about half a minute."""
    from devicelab.backends import cpu
    from devicelab.backends.base import ProfileSettings
    from devicelab.graph import nas
    from devicelab.predict.cpu_probes import probe_graphs
    from devicelab.predict.records import record_from_result

    device = cpu.discover()[0]
    timed = ProfileSettings(threads=1, runs=RUNS, warmup_runs=1)
    once = ProfileSettings(threads=1, runs=1, warmup_runs=0)
    synthetic = [record_from_result(g, cpu.profile(device, g, timed)) for g in nas.sample("synthetic", N_SYNTHETIC, 7)]
    probes = [record_from_result(g, cpu.profile(device, g, once)) for g in probe_graphs()]
    return {"synthetic": synthetic, "probes": probes}


@pytest.fixture(scope="session")
def qed_s10_gbdt() -> Any:
    """A GBDT predictor of the qed Mali G76 phone (s10), trained on its real measurements
    (``shared/data``), once for the session."""
    from devicelab.predict.deduce_tflite_gpu import TfliteGpuDeducer
    from devicelab.predict.predictor import Scenario, train_predictor

    return train_predictor(
        qed.gpu_samples("s10"),
        TfliteGpuDeducer(qed.DEVICES["s10"][1]),
        Scenario("tflite_gpu", "qed:s10", precision="fp16", gpu=qed.DEVICES["s10"][0]),
        "gbdt",
        search="fast",
        overhead_kinds=("elementwise", "reshape", "split", "pad"),
    )

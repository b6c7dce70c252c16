"""What predictors train on: a training set profiled on a device, and the qed phones' measurements."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from latencylab.client.devices import DevicesMixin
from latencylab.client.errors import InputError

# One POST /api/trainsets/ takes at most this many synthetic samples and jobs ((synthetic + zoo
# models) x rounds): the server's bounds (server/predictors/api/serializers.py, the same numbers;
# tests/cli/test_trainset_build_splits_a_big_set.py keeps them equal), which keep a request to a few
# seconds. A bigger set is sent as several requests.
TRAINING_SET_MAX_SYNTHETIC = 100
TRAINING_SET_MAX_JOBS = 200
# One request of the largest size takes seconds; this leaves room for a slow or busy server.
TRAINING_SET_TIMEOUT = 300.0


class TrainingDataMixin(DevicesMixin):
    """``Client``'s calls that make training data: ``build_training_set``, ``import_qed``."""

    def build_training_set(
        self,
        device: int | str | dict[str, Any],
        synthetic: int = 0,
        zoo: Sequence[str] | str = (),
        threads: int = 1,
        delegate: str = "",
        runs: int = 10,
        warmup_runs: int = 2,
        rounds: int = 1,
        seed: int = 0,
        probes: bool | None = None,
    ) -> dict[str, Any]:
        """Upload ``synthetic`` NAS samples (drawn with ``seed``) and the ``zoo`` models (names, or
        ``"all"``) as your team's models and queue ``rounds`` profiling jobs per network on ``device``;
        ``{"device", "device_name", "networks", "submitted": [job ids], "reused": [job ids]}``. Jobs
        your team already has of a network with these settings are reused, so a re-run fills the gaps.

        A set over one request's bounds (``TRAINING_SET_MAX_SYNTHETIC`` samples,
        ``TRAINING_SET_MAX_JOBS`` jobs) is sent as several requests, one after the other: the
        samples split by index (``first_sample``; the same networks one request would draw), the zoo
        models between them, the probe graphs with the first; the answer is their sum. A request
        that fails leaves the earlier ones' jobs queued; running it again reuses them."""
        if isinstance(zoo, str) and zoo != "all":
            raise InputError(f"zoo= takes a list of zoo model names or 'all', not {zoo!r}")
        names = ["all"] if isinstance(zoo, str) else list(zoo)
        base: dict[str, Any] = {
            "device": self._device_id(device),
            "threads": threads,
            "delegate": delegate,
            "runs": runs,
            "warmup_runs": warmup_runs,
            "rounds": rounds,
            "seed": seed,
        }
        timeout = max(self.timeout, TRAINING_SET_TIMEOUT)
        total: dict[str, Any] | None = None
        for n, part in enumerate(training_set_parts(synthetic, names, rounds)):
            # The probe graphs once, with the first request (the others would only reuse their jobs).
            body = {**base, **part, "probes": probes if n == 0 else False}
            answer = dict(self._request("POST", "trainsets/", json=body, timeout=timeout))
            if total is None:
                total = answer
            else:
                total["networks"] += answer["networks"]
                total["submitted"] += answer["submitted"]
                total["reused"] += answer["reused"]
        assert total is not None  # training_set_parts yields at least one part
        return total

    def training_set_states(self, training_set: dict[str, Any]) -> dict[str, int]:
        """How many of a training set's jobs are in each state (``{"queued": 3, "succeeded": 7}``)."""
        ids = {*training_set["submitted"], *training_set["reused"]}
        states: dict[str, int] = {}
        for job in self._list("jobs/", {"device": training_set["device"]}):
            if job["id"] in ids:
                states[job["state"]] = states.get(job["state"], 0) + 1
        return states

    def import_qed(self, data: str | os.PathLike[str] | None = None) -> dict[str, Any]:
        """Create the six phones of the public qed measurements as devices and store their GPU
        measurements (re-running changes nothing unless the files changed). ``data``: a folder on this
        machine holding the qed files (ours, or as published; a clone of the public repository works),
        sent to the server, which takes them from a lab admin (staff) only; None: the server reads
        its own copy. ``{"files", "devices": [{"device", "name", "gpu", "device_created",
        "networks", "created", "updated", "unchanged"}]}``."""
        if data is None:
            return dict(self._request("POST", "qed/import/"))
        from devicelab.predict.errors import PredictorError
        from devicelab.predict.qed import find_files

        try:
            ops, e2e = find_files(Path(data))
        except PredictorError as exc:
            raise InputError(str(exc)) from None
        with ops.open("rb") as ops_file, e2e.open("rb") as e2e_file:
            files = {"ops": (ops.name, ops_file), "e2e": (e2e.name, e2e_file)}
            answer = self._request("POST", "qed/import/", files=files, timeout=max(self.timeout, 600.0))
        return dict(answer)


def training_set_parts(synthetic: int, zoo: list[str], rounds: int) -> list[dict[str, Any]]:
    """The ``synthetic``, ``first_sample`` and ``zoo`` of each request of a training set, each
    within one request's bounds; one request when the set fits, or when no split helps (bad
    values, ``rounds`` alone over the bound: the server's 400 says why)."""
    whole = {"synthetic": synthetic, "first_sample": 0, "zoo": zoo}
    if synthetic < 0 or not 1 <= rounds <= TRAINING_SET_MAX_JOBS:
        return [whole]
    names = zoo
    if zoo == ["all"]:
        from devicelab.graph import zoo as registry

        names = sorted(registry.entries())  # as the server reads ["all"]
    networks = TRAINING_SET_MAX_JOBS // rounds  # per request
    if synthetic <= TRAINING_SET_MAX_SYNTHETIC and synthetic + len(names) <= networks:
        return [whole]
    samples = min(TRAINING_SET_MAX_SYNTHETIC, networks)
    parts = [
        {"synthetic": min(samples, synthetic - first), "first_sample": first, "zoo": []}
        for first in range(0, synthetic, samples)
    ]
    parts += [
        {"synthetic": 0, "first_sample": 0, "zoo": names[i : i + networks]} for i in range(0, len(names), networks)
    ]
    return parts


__all__ = [
    "TRAINING_SET_MAX_JOBS",
    "TRAINING_SET_MAX_SYNTHETIC",
    "TRAINING_SET_TIMEOUT",
    "TrainingDataMixin",
    "training_set_parts",
]

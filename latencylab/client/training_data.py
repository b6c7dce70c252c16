"""What predictors train on: a training set profiled on a device, and the qed phones' measurements."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from latencylab.client.devices import DevicesMixin
from latencylab.client.errors import InputError

# A training set is uploaded and queued within one request: hundreds of networks take minutes.
TRAINING_SET_TIMEOUT = 1800.0


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
        your team already has of a network with these settings are reused, so a re-run fills the gaps."""
        if isinstance(zoo, str) and zoo != "all":
            raise InputError(f"zoo= takes a list of zoo model names or 'all', not {zoo!r}")
        names = ["all"] if isinstance(zoo, str) else list(zoo)
        body: dict[str, Any] = {
            "device": self._device_id(device),
            "synthetic": synthetic,
            "zoo": names,
            "threads": threads,
            "delegate": delegate,
            "runs": runs,
            "warmup_runs": warmup_runs,
            "rounds": rounds,
            "seed": seed,
            "probes": probes,
        }
        return dict(self._request("POST", "trainsets/", json=body, timeout=max(self.timeout, TRAINING_SET_TIMEOUT)))

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


__all__ = ["TRAINING_SET_TIMEOUT", "TrainingDataMixin"]

"""Your team's models: upload a file, a graph or bytes, and wait until the server parsed it."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from latencylab.client.architectures import is_graph
from latencylab.client.errors import InputError, ModelFailed, WaitTimeout
from latencylab.client.http import HttpClient

if TYPE_CHECKING:
    from devicelab.graph import Graph


class ModelsMixin(HttpClient):
    """``Client``'s model calls."""

    def models(self) -> list[dict[str, Any]]:
        """Your team's uploaded models."""
        return self._list("models/")

    def set_accuracy(
        self, model: int, top1: float | None, top5: float | None = None, *, forget_top5: bool = False
    ) -> dict[str, Any]:
        """Set what ``model`` (an id) scores, in percent: ``top1`` (model selection trades it against
        latency) and ``top5``; ``top1=None`` forgets top-1, ``forget_top5=True`` forgets top-5.
        The server checks the range (0-100, top-5 never below top-1); the model as it is now."""
        if isinstance(model, bool) or not isinstance(model, int):
            raise InputError(f"a model is an id (an integer), not {model!r}")
        body: dict[str, Any] = {"top1_accuracy": top1}
        if top5 is not None or forget_top5:
            body["top5_accuracy"] = None if forget_top5 else top5
        return dict(self._request("PATCH", f"models/{model}/", json=body))

    def upload(
        self,
        model: str | os.PathLike[str] | bytes | Graph | dict[str, Any],
        name: str | None = None,
        timeout: float = 3600.0,
    ) -> int:
        """Upload a model (a .onnx/.tflite/.json path, a devicelab Graph, a graph JSON dict, or file bytes);
        return its id once it is parsed. The same bytes uploaded again give the existing model's id.

        A big upload is answered ``parsing`` and parsed by the server's trainer: this waits (up to
        ``timeout`` seconds, else ``WaitTimeout``) until it is ready, and raises ``ModelFailed``
        with the server's reason when it could not be read.
        """
        if isinstance(model, dict) or is_graph(model):
            if isinstance(model, dict):
                body = json.dumps(model).encode()
                name = name or model.get("name")
            else:
                from devicelab.graph import graph_to_json

                body = graph_to_json(model).encode()  # type: ignore[arg-type]
                name = name or model.name  # type: ignore[union-attr]
            answer = self._request(
                "POST",
                "models/",
                params={"name": name} if name else None,
                data=body,
                headers={"Content-Type": "application/json"},
            )
            return self._parsed(answer, timeout)
        if isinstance(model, bytes | bytearray):
            data, filename = bytes(model), "model"
        elif isinstance(model, str | os.PathLike):
            path = Path(model)
            if not path.is_file():
                raise InputError(f"no model file {str(model)!r}")
            data, filename = path.read_bytes(), path.name
            name = name or path.stem
        else:
            raise InputError(f"cannot upload a {type(model).__name__}; pass a file path, bytes or a Graph")
        answer = self._request(
            "POST", "models/", files={"file": (filename, data)}, data={"name": name} if name else None
        )
        return self._parsed(answer, timeout)

    def _parsed(self, answer: dict[str, Any], timeout: float) -> int:
        """The id of an uploaded model once the server parsed it (at once for a small upload)."""
        model_id = int(answer["id"])
        deadline = time.monotonic() + timeout
        pause = 0.5
        while answer.get("state") == "parsing":
            if time.monotonic() >= deadline:
                raise WaitTimeout(f"model #{model_id} was still being parsed after {timeout:.0f} s", answer)
            time.sleep(min(pause, max(0.0, deadline - time.monotonic())))
            pause = min(pause * 1.5, 5.0)
            answer = self._request("GET", f"models/{model_id}/")
        if answer.get("state") == "failed":
            reason = answer.get("failure_reason") or "no reason given"
            raise ModelFailed(f"model #{model_id} ({answer.get('name')}) could not be parsed: {reason}", answer)
        return model_id


__all__ = ["ModelsMixin"]

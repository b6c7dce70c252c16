"""The request body that queues a remote run, and the runs list's parameters: serializers and
filters that both validate and document (``/api/schema/``).

The body's wire format is checked here: JSON types as sent, bounds, no unknown keys, no profile
named twice. What depends on the rows is the service's answer
(``server.remote.services.submit_remote_run``): whether the model is one of the team's image
models, the device an online CPU device that can serve with these threads and cores, each profile
a preset or one of the team's, and the run within the task's time limit. Either way the answer
is a 400 whose messages name the field.
"""

from __future__ import annotations

from typing import Any, TypedDict, cast

from rest_framework import serializers
from rest_framework.fields import empty

from devicelab.backends.base import MAX_THREADS
from devicelab.remote.spec import (
    DEFAULT_PAYLOAD,
    DEFAULT_REQUESTS,
    DEFAULT_WARMUP,
    MAX_PROFILES,
    MAX_REQUESTS,
    MAX_SEED,
    MAX_WARMUP,
    PAYLOADS,
    UNSHAPED,
)
from server.api.fields import IdField, StrictCharField, StrictIntegerField
from server.api.filters import StrictFilterSet, choice_filter, id_filter
from server.api.fusion_requests import ListOfField, UniqueListField, _FlatErrors
from server.api.predict_serializers import _ObjectRequestSerializer
from server.api.serializers import existing_device
from server.devices.models import Device
from server.networks.models import NetworkModel
from server.profiling.models import JobState, ProfilingJob

PROFILE_NAME_LENGTH = 100  # a stored profile's name is at most this long
MAX_CORE_ID = 2**16 - 1  # a bound for the schema: machines have far fewer cores


class _FlatInteger(_FlatErrors, StrictIntegerField):
    """An integer of the body whose messages name it (``requests must be between 1 and 500, got 0``)."""


class RemoteRunRequest(TypedDict, total=False):
    """A validated ``POST /api/remote/runs/`` body: the model, the device, the keys the service reads."""

    model: NetworkModel
    device: Device
    profiles: list[str]
    requests: int
    warmup: int
    payload: str
    seed: int
    threads: int
    cores: list[int]


class RemoteRunCreateSerializer(_ObjectRequestSerializer):
    """What a client sends to queue a remote run of one of its image models on a CPU device."""

    model = IdField("model", help_text="Id of one of your team's image models (one N x 3 x H x W input).")
    device = IdField("device", help_text="Id of an online CPU device: the lab machine that serves the model.")
    profiles = UniqueListField(
        child=StrictCharField(allow_blank=False, max_length=PROFILE_NAME_LENGTH),
        min_length=1,
        max_length=MAX_PROFILES,
        error_messages={"null": "must be a list, got None"},
        help_text=f"1 to {MAX_PROFILES} network profiles, measured interleaved: presets (campus_wifi, lte, "
        f"cellular_hotspot, prototype_wifi), your team's stored ones (GET /api/network-profiles/), or {UNSHAPED} "
        "(loopback as it is).",
    )
    requests = _FlatInteger(
        required=False,
        min_value=1,
        max_value=MAX_REQUESTS,
        help_text=f"Timed requests per profile (default {DEFAULT_REQUESTS}).",
    )
    warmup = _FlatInteger(
        required=False,
        min_value=0,
        max_value=MAX_WARMUP,
        help_text=f"Requests per profile sent first and dropped (default {DEFAULT_WARMUP}).",
    )
    payload = serializers.ChoiceField(
        choices=list(PAYLOADS),
        required=False,
        help_text=f"What the client sends (default {DEFAULT_PAYLOAD}): jpeg or png, the lab's phone photo at "
        "1024 x 768, decoded, resized and normalized by the server; tensor, that photo preprocessed on the client "
        "to the model's input (float32).",
        error_messages={"invalid_choice": f"payload must be one of {', '.join(PAYLOADS)}, got {{input!r}}"},
    )
    seed = _FlatInteger(
        required=False,
        min_value=0,
        max_value=MAX_SEED,
        help_text="Seeds the profiles' per-request draws and the order of the rounds (default 0).",
    )
    threads = _FlatInteger(
        required=False, min_value=1, max_value=MAX_THREADS, help_text="The server's threads (default 1)."
    )
    cores = ListOfField(
        child=StrictIntegerField(min_value=0, max_value=MAX_CORE_ID),
        required=False,
        max_length=MAX_THREADS,
        error_messages={"null": "must be a list, got None"},
        help_text="Core ids to pin the server to (default []: the OS decides); the device must have them.",
    )

    def validate_device(self, value: int) -> Device:
        """A registered device (the service checks it is an online CPU device)."""
        return existing_device(value)

    def validate_model(self, value: int) -> NetworkModel:
        """One of the caller's team's models (the service checks it is a ready image model)."""
        model = NetworkModel.objects.for_team(self.context["team"]).filter(pk=value).first()
        if model is None:
            raise serializers.ValidationError(f"there is no model #{value} in your team (GET /api/models/)")
        return model

    def run_validation(self, data: Any = empty) -> RemoteRunRequest:
        """The request (keys left out stay out: the service fills in the defaults)."""
        return cast(RemoteRunRequest, super().run_validation(data))


class RemoteJobFilterSet(StrictFilterSet):
    """``GET /api/remote/runs/?state=&device=&model=``."""

    state = choice_filter("state", JobState.choices, "only runs in this state")
    device = id_filter("device", "only runs served by this device")
    model = id_filter("model", "only runs of this model")

    class Meta:
        model = ProfilingJob
        fields = ["state", "device", "model"]


__all__ = ["RemoteJobFilterSet", "RemoteRunCreateSerializer", "RemoteRunRequest"]

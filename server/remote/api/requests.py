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

from devicelab.remote.spec import MAX_PROFILES, RemoteSettings
from devicelab.spec import declared, described
from server.api.fields import IdField, StrictCharField
from server.api.filters import StrictFilterSet, choice_filter, id_filter
from server.api.requests import FlatErrors, ObjectRequestSerializer, UniqueListField
from server.api.spec_fields import DeclaredField, spec_fields
from server.devices.api.serializers import existing_device
from server.devices.models import Device
from server.networks.models import NetworkModel
from server.profiling.models import JobState, ProfilingJob
from server.remote.services import PROFILE_NAME_LENGTH


class _FlatDeclaredField(FlatErrors, DeclaredField):
    """A declared field of the body whose messages name it (``requests must be between 1 and 500, got 0``)."""


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


class RemoteRunCreateSerializer(ObjectRequestSerializer):
    """What a client sends to queue a remote run of one of its image models on a CPU device."""

    model = IdField("model", help_text="Id of one of your team's image models (one N x 3 x H x W input).")
    device = IdField("device", help_text="Id of an online CPU device: the lab machine that serves the model.")

    def get_fields(self) -> dict[str, serializers.Field]:
        """The model and the device, then ``RemoteSettings``'s fields as it declares them; its
        profiles, through the API, names of at most ``PROFILE_NAME_LENGTH`` characters."""
        profiles = UniqueListField(
            child=StrictCharField(allow_blank=False, max_length=PROFILE_NAME_LENGTH),
            min_length=1,
            max_length=MAX_PROFILES,
            error_messages={"null": "must be a list, got None"},
            help_text=described(declared(RemoteSettings, "profiles")),
        )
        return {
            **super().get_fields(),
            **spec_fields(RemoteSettings, field_class=_FlatDeclaredField, profiles=profiles),
        }

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

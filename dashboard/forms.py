"""Forms of the dashboard: uploading a model and submitting jobs (which may fan out).

They turn what a person typed into calls of the services (``upload_model``,
``submit_profiling_job``) and put the services' refusals next to the field they concern. A zoo
network chosen on the submit form becomes one of the team's models through ``upload_model`` (its
graph JSON, de-duplicated by sha256 like any upload) when the jobs are queued.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

from django import forms
from django.conf import settings as django_settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.datastructures import MultiValueDict

from dashboard.formatting import core_ranges, hardware_summary, si
from dashboard.spec_fields import spec_form_fields, spec_values
from devicelab.backends.base import (
    DELEGATES,
    MAX_COLD_RUNS,
    MAX_THREADS,
    PRECISIONS,
    Capabilities,
    ProfileSettings,
    UnsupportedSetting,
)
from devicelab.graph import graph_to_json
from devicelab.graph import zoo as model_zoo
from devicelab.spec import settings_of
from server.accounts.models import Team
from server.devices.models import Device
from server.networks.models import NetworkModel
from server.networks.services import BadModel, UploadTooLarge, receive_model, too_large_message, upload_model
from server.profiling.models import JobKind, ProfilingJob
from server.profiling.services import submit_profiling_job


class ModelUploadForm(forms.Form):
    """A model file (ONNX, TFLite or graph JSON) and an optional display name."""

    file = forms.FileField(
        label="Model file",
        help_text="ONNX, TFLite or graph JSON.",
        widget=forms.ClearableFileInput(attrs={"accept": ".onnx,.tflite,.json"}),
    )
    name = forms.CharField(
        label="Name", max_length=200, required=False, help_text="Defaults to the graph's name or the file name."
    )

    @classmethod
    def too_large(cls, declared: int) -> ModelUploadForm:
        """The form refusing a body whose declared size is over the limit (it was never read)."""
        form = cls(data={}, files=MultiValueDict())
        form.full_clean()
        form.errors["file"] = form.error_class([too_large_message(declared)])
        return form

    def save(self, team: Team, user: Any) -> tuple[NetworkModel, bool] | None:
        """Upload through ``receive_model`` (a big file is parsed by the trainer); None (with the
        reason on ``file``) when it was refused."""
        upload = self.cleaned_data["file"]
        try:
            return receive_model(team, user, upload, upload.name or "model", name=self.cleaned_data["name"])
        except (BadModel, UploadTooLarge) as exc:
            self.add_error("file", exc.messages)
            return None


def parse_cores(text: str) -> list[int]:
    """CPU ids from '0,1' or '0-3,6' (empty: the OS decides)."""
    cores: set[int] = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        m = re.fullmatch(r"(\d+)(?:-(\d+))?", part)
        if m is None:
            raise ValidationError(f"{part!r} is not a core id or a range like 0-3")
        lo, hi = int(m.group(1)), int(m.group(2) or m.group(1))
        if hi < lo:
            raise ValidationError(f"the range {part!r} runs backwards")
        cores.update(range(lo, hi + 1))
    return sorted(cores)


class _ModelChoice(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.name} (#{obj.pk}, {obj.num_operators} ops)"


def _filter_attrs(kind: str, *words: Any) -> dict[str, str]:
    """What the submit page's list filters read on a checkbox (``dashboard.js``): its kind for the
    kind select, and the words the text filter matches besides the label."""
    return {"data-kind": kind, "data-search": " ".join(str(w) for w in words if w).lower()}


class _ModelCheckboxes(forms.CheckboxSelectMultiple):
    """Model checkboxes that carry the model's format and file name for the page's filters."""

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(name, value, *args, **kwargs)
        model = getattr(value, "instance", None)
        if model is not None:
            option["attrs"].update(_filter_attrs(model.format, model.filename, model.format))
        return option


class _DeviceChoice(forms.ModelMultipleChoiceField):
    def label_from_instance(self, obj: Any) -> str:
        return f"{obj.name} (#{obj.pk}, {obj.kind}, {obj.status})"


class _DeviceCheckboxes(forms.CheckboxSelectMultiple):
    """Device checkboxes that carry what each device declared it can run (``data-*``), so the
    page offers only the settings that every chosen device supports (``dashboard.js``)."""

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(name, value, *args, **kwargs)
        device = getattr(value, "instance", None)
        if device is not None:
            option["attrs"].update(_filter_attrs(device.kind, device.kind, hardware_summary(device.hardware or {})))
        caps = device.declared_capabilities() if device is not None else None
        if caps is not None:
            option["attrs"].update(
                {
                    "data-precisions": " ".join(caps.precisions),
                    "data-max-threads": str(caps.max_threads),
                    "data-pins-cores": "true" if caps.pins_cores else "false",
                    "data-cores": ",".join(str(c) for c in caps.cores),
                    "data-delegates": " ".join(caps.delegates),
                    "data-core-clusters": " ".join(sorted(caps.core_clusters)),
                    "data-cools-down": "true" if caps.cools_down else "false",
                    "data-max-cold-runs": str(caps.max_cold_runs),
                }
            )
        return option


def zoo_label(entry: model_zoo.ZooEntry) -> str:
    """A zoo network as the submit form lists it: name, family, published parameters and MACs."""
    macs = f", {si(entry.reference_macs)} MACs" if entry.reference_macs else ""
    return f"{entry.name} (zoo: {entry.family}, {si(entry.reference_params)} params{macs})"


class _ZooCheckboxes(forms.CheckboxSelectMultiple):
    """Zoo checkboxes that carry the network's family for the page's filters."""

    def create_option(self, name: str, value: Any, *args: Any, **kwargs: Any) -> dict[str, Any]:
        option = super().create_option(name, value, *args, **kwargs)
        entry = model_zoo.entries().get(str(value))
        if entry is not None:
            option["attrs"].update(_filter_attrs(entry.family, entry.family, "table 1" if entry.table1 else ""))
        return option


def zoo_model(team: Team, user: Any, name: str) -> NetworkModel:
    """The team's model of the zoo network ``name``: uploaded as its graph JSON through
    ``upload_model`` the first time, the same row (same bytes, same sha256) after that."""
    graph = model_zoo.build(name)
    model, _ = upload_model(team, user, graph_to_json(graph).encode(), f"{name}.json", name=name)
    return model


def initial_from_job(job: ProfilingJob) -> dict[str, Any]:
    """The submit form's starting values for running ``job`` again with changes: its model,
    device and settings (a profile job's; empty for any other kind)."""
    if job.kind != JobKind.PROFILE or job.model_id is None:
        return {}
    s = job.settings or {}
    initial: dict[str, Any] = {"models": [job.model_id], "devices": [job.device_id]}
    for key in _FORM_SETTINGS:
        if s.get(key) not in (None, ""):
            initial[key] = s[key]
    if s.get("cores"):
        initial["cores"] = core_ranges(s["cores"])
    return initial


def offered_cold_runs(devices: Iterable[Device]) -> int:
    """The most cold starts any of ``devices`` measures (the universal bound when none declared)."""
    declared = [caps.max_cold_runs for caps in (d.declared_capabilities() for d in devices) if caps is not None]
    return max(declared) if declared else MAX_COLD_RUNS


def offered(devices: Iterable[Device]) -> tuple[list[str], int]:
    """The precisions any of ``devices`` runs and the most threads any takes (all precisions and
    the universal bound when none declared what it can run)."""
    precisions: set[str] = set()
    max_threads = 0
    declared = False
    for device in devices:
        caps = device.declared_capabilities()
        if caps is None:
            continue
        declared = True
        precisions.update(caps.precisions)
        max_threads = max(max_threads, caps.max_threads)
    if not declared:
        return list(PRECISIONS), MAX_THREADS
    return [p for p in PRECISIONS if p in precisions], max_threads or 1


@dataclass(frozen=True)
class RuntimeOptions:
    """What some of the devices offer beyond threads and precision (phones): delegates, named
    core clusters, a thermal cool-down."""

    delegates: list[str]
    clusters: list[str]
    cools_down: bool


def offered_runtime_options(devices: Iterable[Device]) -> RuntimeOptions:
    """The delegates and core clusters any of ``devices`` offers, and whether any cools down."""
    delegates: set[str] = set()
    clusters: set[str] = set()
    cools_down = False
    for device in devices:
        caps = device.declared_capabilities()
        if caps is None:
            continue
        delegates.update(caps.delegates)
        clusters.update(caps.core_clusters)
        cools_down = cools_down or caps.cools_down
    return RuntimeOptions([d for d in DELEGATES if d in delegates], sorted(clusters), cools_down)


# The settings the form takes as their declaration (``ProfileSettings``) says: all but the
# backend, which follows each device's kind, and the cores, typed as text (or a phone's cluster).
_NOT_DECLARED_HERE = ("backend", "cores")
_FORM_SETTINGS = tuple(s.name for s in settings_of(ProfileSettings) if s.name not in _NOT_DECLARED_HERE)
# Shown under "Phones" when an online device offers them; the others in the settings row.
PHONE_SETTINGS = ("delegate", "cooldown_c", "cooldown_max_s")


class SubmitJobsForm(forms.Form):
    """Models (the team's and zoo networks) x devices with one set of settings: one job per pair."""

    models = _ModelChoice(queryset=NetworkModel.objects.none(), widget=_ModelCheckboxes, label="Models", required=False)
    zoo = forms.MultipleChoiceField(
        required=False,
        widget=_ZooCheckboxes,
        label="Zoo networks",
        help_text="Added to your models (as graph JSON) when the jobs are queued.",
    )
    devices = _DeviceChoice(
        queryset=Device.objects.none(),
        widget=_DeviceCheckboxes,
        label="Devices",
        error_messages={"invalid_choice": "device #%(value)s is not online any more; choose one of those listed now"},
    )
    cores = forms.CharField(
        required=False,
        label="CPU cores",
        help_text="Pin to these CPU ids, e.g. 0-3 or 0,2 (empty: the OS decides).",
        widget=forms.TextInput(attrs={"placeholder": "e.g. 0-3"}),
    )
    core_cluster = forms.ChoiceField(
        required=False,
        initial="",
        label="Core cluster",
        help_text="Pin to a phone's cluster of cores, by name (instead of CPU ids).",
    )

    def __init__(self, team: Team, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields.update(spec_form_fields(ProfileSettings, exclude=_NOT_DECLARED_HERE))
        self.team = team
        # Only parsed models can be profiled (the service refuses the others too).
        ready = NetworkModel.objects.for_team(team).ready().defer("graph", "summary")
        self.fields["models"].queryset = ready  # type: ignore[attr-defined]
        # Only devices that heart-beat can take a job; the service re-checks at submission.
        online = Device.objects.online()
        self.fields["devices"].queryset = online  # type: ignore[attr-defined]
        # Offer only what some online device runs; the page narrows it to the chosen devices.
        precisions, max_threads = offered(online)
        self.fields["precision"].choices = [(p, p) for p in precisions]  # type: ignore[attr-defined]
        self.fields["threads"].widget.attrs["max"] = max_threads
        self.fields["cold_runs"].widget.attrs["max"] = offered_cold_runs(online)
        self.fields["breakdown"].initial = django_settings.LATENCYLAB_TIME_BREAKDOWN
        entries = model_zoo.entries()
        self.fields["zoo"].choices = [(n, zoo_label(entries[n])) for n in sorted(entries)]  # type: ignore[attr-defined]
        # The kinds the page's list filters offer: formats of models, families of the zoo, kinds of devices.
        self.model_formats = sorted(set(ready.values_list("format", flat=True)))
        self.zoo_families = sorted({e.family for e in entries.values()})
        self.device_kinds = sorted(set(online.values_list("kind", flat=True)))
        # Phones' options appear only when an online device offers them (the page hides the rest).
        self.runtime_options = offered_runtime_options(online)
        self.fields["delegate"].choices = [("", "device default")] + [  # type: ignore[attr-defined]
            (d, d) for d in self.runtime_options.delegates
        ]
        self.fields["core_cluster"].choices = [("", "none")] + [  # type: ignore[attr-defined]
            (c, c) for c in self.runtime_options.clusters
        ]

    def clean_cores(self) -> list[int]:
        """The cores as a list of ids."""
        return parse_cores(self.cleaned_data.get("cores") or "")

    def settings_row(self) -> list[forms.BoundField]:
        """The settings any device may take (not the phones'), in their declaration's order: the
        template's row of settings."""
        names = [s.name for s in settings_of(ProfileSettings) if s.name in self.fields]
        return [self[name] for name in names if name not in PHONE_SETTINGS]

    def clean(self) -> dict[str, Any]:
        """Check the settings against what each chosen device declared, on the field they name."""
        data = super().clean() or {}
        if not data.get("models") and not data.get("zoo") and "models" not in self.errors:
            self.add_error("models", "choose at least one of your models or a zoo network")
        if self.errors:
            return data
        if data.get("cores") and data.get("core_cluster"):
            self.add_error("core_cluster", "choose CPU cores or a core cluster, not both")
            return data
        cluster = data.get("core_cluster") or ""
        settings = self.job_settings()
        if cluster:
            del settings["cores"]  # each device resolves the name to its own core ids, below
        try:
            parsed = ProfileSettings.from_dict(settings)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        for device in data.get("devices") or ():
            caps = device.declared_capabilities()
            if caps is None:
                continue
            try:
                caps.check(self._on_device(parsed, caps, cluster))
            except UnsupportedSetting as exc:
                field = "core_cluster" if cluster and exc.setting == "cores" else exc.setting
                self.add_error(
                    field if field in self.fields else None, f"device {device.name!r} (#{device.pk}): {exc.reason}"
                )
        return data

    @staticmethod
    def _on_device(parsed: ProfileSettings, caps: Capabilities, cluster: str) -> ProfileSettings:
        """The settings as one device runs them: a cluster name becomes that device's core ids."""
        return replace(parsed, cores=caps.cluster_cores(cluster)) if cluster else parsed

    def job_settings(self) -> dict[str, Any]:
        """The ProfileSettings keys the form sets (backend follows each device's kind); a field
        left empty is left out, for the service's default."""
        d = self.cleaned_data
        settings = spec_values(ProfileSettings, d, exclude=_NOT_DECLARED_HERE)
        if d["cores"]:
            settings["cores"] = d["cores"]
        if d.get("core_cluster"):
            settings["cores"] = d["core_cluster"]  # a cluster's name: the service resolves it per device
        return settings

    def save(self, user: Any) -> list[ProfilingJob]:
        """Queue one job per (model, device) through ``submit_profiling_job``, all or none.

        Zoo networks become the team's models first (``zoo_model``; they stay among its models
        even if the jobs are refused). A refusal (device offline, bad settings) rolls the whole
        submission back and lands on the field it names; nothing is enqueued, since enqueueing
        waits for the commit.
        """
        settings = self.job_settings()
        models = list(self.cleaned_data["models"])
        try:
            chosen = {m.pk for m in models}
            for name in self.cleaned_data.get("zoo") or ():
                model = zoo_model(self.team, user, name)
                if model.pk not in chosen:
                    chosen.add(model.pk)
                    models.append(model)
            with transaction.atomic():
                return [
                    submit_profiling_job(self.team, model, device, settings, user=user)
                    for model in models
                    for device in self.cleaned_data["devices"]
                ]
        except ValidationError as exc:
            field_for = {"model": "models", "device": "devices", "settings": None, "zoo": "zoo"}
            if hasattr(exc, "error_dict"):
                for key, errors in exc.error_dict.items():
                    self.add_error(field_for.get(key), [m for e in errors for m in e.messages])
            else:
                self.add_error(None, exc.messages)
            return []

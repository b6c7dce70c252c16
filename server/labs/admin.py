"""Admin pages for lab machines: add one (its token is shown once), list them, revoke them."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.http import HttpRequest

from server.labs.models import LabMachine, LabMachineQuerySet
from server.labs.services import devices_by_machine, revoke_lab_machine


@admin.register(LabMachine)
class LabMachineAdmin(admin.ModelAdmin):
    """Lab machines: the token is never stored, so it is shown once, in the message after adding."""

    list_display = ["name", "created_at", "last_seen_at", "last_address", "revoked", "device_names"]
    list_filter = ["revoked_at", "created_at"]
    search_fields = ["name", "last_address"]
    readonly_fields = [
        "created_at",
        "created_by",
        "last_seen_at",
        "last_address",
        "revoked_at",
        "revoked_reason",
        "device_names",
    ]
    actions = ["revoke"]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        """The name is set when the machine is added; its devices carry it afterwards."""
        if obj is None:
            return []
        return ["name", *self.readonly_fields]

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        """Adding asks for the name alone."""
        if obj is None:
            return ["name"]
        return ["name", *self.readonly_fields]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Revoke instead: a revoked machine's next call is told why, and its devices go offline."""
        return False

    def get_changelist_instance(self, request: HttpRequest) -> Any:
        """The list's devices come from one query for the whole page."""
        self._devices = devices_by_machine()
        return super().get_changelist_instance(request)

    @admin.display(boolean=True, description="revoked", ordering="revoked_at")
    def revoked(self, lab: LabMachine) -> bool:
        """Whether its token was revoked."""
        return lab.is_revoked

    @admin.display(description="devices")
    def device_names(self, lab: LabMachine) -> str:
        """Its devices with their state."""
        devices = getattr(self, "_devices", None)
        if devices is None:
            devices = devices_by_machine()
        return ", ".join(f"{d.name} ({d.status})" for d in devices.get(lab.name, [])) or "—"

    def save_model(self, request: HttpRequest, obj: LabMachine, form: Any, change: bool) -> None:
        """On adding, issue the token and show it once; only its hash is saved."""
        if not change:
            key = obj.issue_key()
            obj.created_by_id = request.user.pk
            super().save_model(request, obj, form, change)
            messages.success(
                request,
                f"Lab machine '{obj.name}' added. Its lab token, shown only now: {key}  — on the lab machine run: "
                f"latencylab worker --server {request.build_absolute_uri('/').rstrip('/')} --token {key}",
            )
            return
        super().save_model(request, obj, form, change)

    @admin.action(description="Revoke the selected machines' tokens (their devices go offline)")
    def revoke(self, request: HttpRequest, queryset: LabMachineQuerySet) -> None:
        """Revoke each selected active machine and take its devices offline."""
        names = []
        for lab in queryset.active():
            revoke_lab_machine(lab, reason=f"revoked in the admin by {request.user}", by=request.user)
            names.append(lab.name)
        if names:
            messages.success(request, f"Revoked: {', '.join(names)}.")
        else:
            messages.info(request, "The selected machines were revoked already.")

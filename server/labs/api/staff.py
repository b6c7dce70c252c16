"""The staff's API of lab machines: ``/api/labs/`` lists and adds them, ``/api/labs/{id}/revoke/``
revokes one. Staff only, with the user API's authentication (a lab token gets nothing here).

Its routes are this module's ``urlpatterns`` (included by ``server/api/urls.py``); the lab
machines' own API (``/api/lab/...``) lives beside it.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_field, extend_schema_view
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.permissions import IsAdminUser
from rest_framework.request import Request
from rest_framework.response import Response

from server.api.parsers import FastJSONParser
from server.api.requests import ObjectRequestSerializer
from server.api.routers import AppRouter
from server.labs.models import NAME_MAX_LENGTH, LabMachine
from server.labs.services import LabDevice, add_lab_machine, devices_by_machine, revoke_lab_machine

TAGS = ["labs"]


class LabDeviceSerializer(serializers.Serializer):
    """A device a lab machine's agent registered."""

    id = serializers.IntegerField(source="pk")
    name = serializers.CharField()
    kind = serializers.CharField()
    status = serializers.CharField()
    worker = serializers.CharField(help_text="`NAME` or `NAME#instance`: which of the machine's agents holds it")
    offline_reason = serializers.CharField()


class LabMachineSerializer(serializers.ModelSerializer):
    """A lab machine: when its token was issued, its last call, whether it is revoked, its devices."""

    created_by = serializers.SerializerMethodField(help_text="who issued its token ('' : the server host's CLI)")
    revoked = serializers.SerializerMethodField()
    devices = serializers.SerializerMethodField()

    class Meta:
        model = LabMachine
        fields = [
            "id",
            "name",
            "created_at",
            "created_by",
            "last_seen_at",
            "last_address",
            "revoked",
            "revoked_at",
            "revoked_reason",
            "devices",
        ]
        read_only_fields = fields

    def get_created_by(self, lab: LabMachine) -> str:
        """The user name of whoever issued its current token."""
        return lab.created_by.get_username() if lab.created_by else ""

    def get_revoked(self, lab: LabMachine) -> bool:
        """Whether its token was revoked."""
        return lab.is_revoked

    @extend_schema_field(LabDeviceSerializer(many=True))
    def get_devices(self, lab: LabMachine) -> list[dict[str, Any]]:
        """Its devices (one query per list: the view passes them all in the context)."""
        by_machine: dict[str, list[LabDevice]] | None = self.context.get("devices_by_machine")
        if by_machine is None:
            by_machine = devices_by_machine()
            self.context["devices_by_machine"] = by_machine
        return list(LabDeviceSerializer(by_machine.get(lab.name, []), many=True).data)


class LabMachineCreatedSerializer(LabMachineSerializer):
    """A lab machine just added, with its token: shown this once, only its hash is kept."""

    token = serializers.SerializerMethodField(
        help_text="the lab token, shown only now: the lab machine sends it as `Authorization: Lab <token>`"
    )

    class Meta(LabMachineSerializer.Meta):
        fields = [*LabMachineSerializer.Meta.fields, "token"]
        read_only_fields = fields

    def get_token(self, lab: LabMachine) -> str:
        """The plain token, handed over in the context by the view that issued it."""
        return str(self.context["token"])


class LabMachineRequest(ObjectRequestSerializer):
    """``POST /api/labs/``: the machine's name."""

    name = serializers.CharField(
        max_length=NAME_MAX_LENGTH, help_text="its worker name (its host name, say): letters, digits and . - _ only"
    )


class RevokeRequest(ObjectRequestSerializer):
    """``POST /api/labs/{id}/revoke/``: why, optionally."""

    reason = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")


@extend_schema_view(
    list=extend_schema(summary="List the lab machines (staff)", tags=TAGS),
    retrieve=extend_schema(summary="A lab machine (staff)", tags=TAGS),
)
class LabMachineViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """The lab machines that join the server with a lab token; staff only."""

    permission_classes = [IsAdminUser]
    serializer_class = LabMachineSerializer
    parser_classes = [FastJSONParser]  # JSON bodies only, as the schema says (no form bodies)

    def get_queryset(self) -> QuerySet[LabMachine]:
        """Every machine, revoked ones too, by name."""
        return LabMachine.objects.select_related("created_by").order_by("name")

    @extend_schema(
        summary="Add a lab machine and get its token (staff)",
        tags=TAGS,
        request=LabMachineRequest,
        responses={
            201: LabMachineCreatedSerializer,
            400: OpenApiResponse(description="the name is not valid, or an active machine has it"),
        },
    )
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """Add a machine (or give a revoked one a new token); the token is in this answer only."""
        incoming = LabMachineRequest(data=request.data)
        incoming.is_valid(raise_exception=True)
        lab, token = add_lab_machine(incoming.validated_data["name"], by=request.user)
        context = {**self.get_serializer_context(), "token": token}
        return Response(LabMachineCreatedSerializer(lab, context=context).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        summary="Revoke a lab machine's token (staff)",
        description="Its next call is refused with the reason, and its online devices go offline at once: their "
        "running jobs are retried, their queued jobs move to an equivalent device or wait.",
        tags=TAGS,
        request=RevokeRequest,
        responses={200: LabMachineSerializer},
    )
    @action(detail=True, methods=["post"])
    def revoke(self, request: Request, pk: str | None = None) -> Response:
        """Revoke; revoking a revoked machine keeps its first date and reason."""
        lab = self.get_object()
        incoming = RevokeRequest(data=request.data)
        incoming.is_valid(raise_exception=True)
        revoke_lab_machine(lab, reason=incoming.validated_data["reason"], by=request.user)
        return Response(LabMachineSerializer(lab, context=self.get_serializer_context()).data)


router = AppRouter()
router.register("labs", LabMachineViewSet, basename="lab-machine")

urlpatterns = router.urls

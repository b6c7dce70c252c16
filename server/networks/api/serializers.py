"""How networks look in the API: a model as listed and with its operator table, the graph JSON
document a client may send instead of a file, and the bodies that upload a model or set its accuracy.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers
from rest_framework.settings import api_settings

from devicelab.graph import Graph, GraphError, graph_from_dict
from devicelab.graph.jsonio import SCHEMA_VERSION
from devicelab.graph.ops import DTYPES
from server.api.fields import StrictFloatField
from server.networks.models import NetworkModel
from server.networks.services import operator_table, operator_table_shown


class GraphInputSerializer(serializers.Serializer):
    """One graph input of a graph JSON document."""

    name = serializers.CharField(allow_blank=True)
    shape = serializers.ListField(
        child=serializers.IntegerField(min_value=1),
        min_length=1,
        help_text="Static NCHW shape with the batch dimension.",
    )
    dtype = serializers.ChoiceField(choices=list(DTYPES), required=False, default="float32")


class GraphOperatorSerializer(serializers.Serializer):
    """One operator of a graph JSON document, in topological order."""

    name = serializers.CharField(
        required=False, allow_blank=True, allow_null=True, help_text="Unique; op_<index> when left out or null."
    )
    type = serializers.CharField(help_text="An operator type of docs/graph-format.md (conv2d, relu, add, ...).")
    inputs = serializers.ListField(
        child=serializers.CharField(allow_blank=True), help_text="Tensors it reads, written before it."
    )
    outputs = serializers.ListField(
        child=serializers.CharField(allow_blank=True), min_length=1, help_text="Tensors it writes, each written once."
    )
    attrs = serializers.DictField(required=False, help_text="Its attributes; those with a default may be left out.")
    output_shapes = serializers.ListField(
        child=serializers.ListField(child=serializers.IntegerField()),
        required=False,
        allow_null=True,
        help_text="Optional (null: not given); when given they must equal the inferred ones.",
    )


# A small graph JSON document, the docs' example of one (and a request schemathesis sends as it is).
GRAPH_EXAMPLE: dict[str, Any] = {
    "schema_version": 1,
    "name": "tiny",
    "inputs": [{"name": "x", "shape": [1, 3, 32, 32]}],
    "operators": [
        {"type": "conv2d", "inputs": ["x"], "outputs": ["conv"], "attrs": {"out_channels": 8, "kernel": [3, 3]}},
        {"type": "relu", "inputs": ["conv"], "outputs": ["y"]},
    ],
}


class GraphDocumentSerializer(serializers.Serializer):
    """A graph JSON document (docs/graph-format.md): graph inputs, then operators in topological order."""

    # The fields document the format; validating runs devicelab's one reader (``graph_from_dict``,
    # which model uploads and predictions run too), so this declaration cannot accept what they
    # refuse, and checks the operators' attributes and shapes that fields could not express.

    schema_version = serializers.IntegerField(
        min_value=SCHEMA_VERSION, max_value=SCHEMA_VERSION, help_text=f"Always {SCHEMA_VERSION}."
    )
    name = serializers.CharField(required=False, allow_blank=True, default="graph")
    # ListFields, not ``many=True``: drf-spectacular documents a ListField's minimum length (minItems).
    inputs = serializers.ListField(child=GraphInputSerializer(), min_length=1)
    outputs = serializers.ListField(
        child=serializers.CharField(allow_blank=True),
        required=False,
        allow_null=True,
        help_text="Default (left out or null): the last operator's last output.",
    )
    operators = serializers.ListField(child=GraphOperatorSerializer(), min_length=1)

    def to_internal_value(self, data: Any) -> Graph:
        """The ``Graph``, or a ``ValidationError`` with the reader's reason (operator and what is wrong)."""
        try:
            return graph_from_dict(data)
        except GraphError as exc:
            raise serializers.ValidationError(
                {api_settings.NON_FIELD_ERRORS_KEY: [str(exc)]}, code="bad_graph"
            ) from None


class ModelUploadSerializer(serializers.Serializer):
    """A multipart upload: the model file and an optional display name."""

    file = serializers.FileField(help_text="ONNX, TFLite or graph JSON file.")
    name = serializers.CharField(required=False, help_text="Display name; its first 200 characters are kept.")


class OperatorRowSerializer(serializers.Serializer):
    """One row of a network's operator table (devicelab's Graph.op_table())."""

    index = serializers.IntegerField()
    name = serializers.CharField()
    type = serializers.CharField()
    category = serializers.CharField()
    inputs = serializers.ListField(child=serializers.CharField())
    outputs = serializers.ListField(child=serializers.CharField())
    input_shapes = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()))
    output_shapes = serializers.ListField(child=serializers.ListField(child=serializers.IntegerField()))
    attrs = serializers.DictField()
    macs = serializers.IntegerField()
    flops = serializers.IntegerField()
    params = serializers.IntegerField()
    dtype = serializers.CharField(
        help_text="The number format the operator computes in (int8 for a quantized model's convolutions)."
    )


class NetworkModelSerializer(serializers.ModelSerializer):
    """A network as listed: name, format, hash, state and costs (null while it is parsing)."""

    # null: a model uploaded by a service without a user, or by a user since deleted.
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True, allow_null=True)

    class Meta:
        model = NetworkModel
        fields = [
            "id",
            "name",
            "format",
            "size_bytes",
            "sha256",
            "state",
            "failure_reason",
            "num_operators",
            "macs",
            "flops",
            "params",
            "summary",
            "top1_accuracy",
            "top5_accuracy",
            "created_by",
            "created_at",
        ]
        read_only_fields = fields


class ModelAccuracySerializer(serializers.Serializer[Any]):
    """PATCH /api/models/{id}/: what the team says the network scores (null forgets it)."""

    top1_accuracy = StrictFloatField(min_value=0.0, max_value=100.0, allow_null=True, required=False)
    top5_accuracy = StrictFloatField(min_value=0.0, max_value=100.0, allow_null=True, required=False)

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Top-5 is never below top-1."""
        top1, top5 = attrs.get("top1_accuracy"), attrs.get("top5_accuracy")
        if top1 is not None and top5 is not None and top5 < top1:
            raise serializers.ValidationError({"top5_accuracy": f"top-5 ({top5}) cannot be below top-1 ({top1})"})
        return attrs


class NetworkModelDetailSerializer(NetworkModelSerializer):
    """A network with its operator table (empty until it is parsed)."""

    operators = serializers.SerializerMethodField()
    operators_omitted = serializers.SerializerMethodField(
        help_text="True when the model has more operators than LATENCYLAB_OPERATOR_TABLE_MAX: the table is "
        "left out (summary.op_types has the counts per type)."
    )

    class Meta(NetworkModelSerializer.Meta):
        fields = [*NetworkModelSerializer.Meta.fields, "operators", "operators_omitted"]
        read_only_fields = fields

    @extend_schema_field(OperatorRowSerializer(many=True))
    def get_operators(self, obj: NetworkModel) -> list[dict[str, Any]]:
        """The operator table, computed from the stored graph (empty while parsing or when omitted)."""
        return operator_table(obj)

    @extend_schema_field(OpenApiTypes.BOOL)
    def get_operators_omitted(self, obj: NetworkModel) -> bool:
        """Whether a parsed model's table is left out for its size."""
        return obj.is_ready and not operator_table_shown(obj)

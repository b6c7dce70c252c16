# Networks get a state: a big upload is stored `parsing` and parsed by the trainer (issue 18, finding 7).
# Rows that exist are parsed already: they are `ready`.

from django.db import migrations, models

import server.networks.models


class Migration(migrations.Migration):
    dependencies = [
        ("networks", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="networkmodel",
            name="failure_reason",
            field=models.TextField(blank=True, default=""),
        ),
        migrations.AddField(
            model_name="networkmodel",
            name="filename",
            field=models.CharField(
                blank=True, default="", help_text="The name the file was uploaded under.", max_length=255
            ),
        ),
        migrations.AddField(
            model_name="networkmodel",
            name="parsed_at",
            field=models.DateTimeField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name="networkmodel",
            name="state",
            field=models.CharField(
                choices=[("parsing", "Parsing"), ("ready", "Ready"), ("failed", "Failed")],
                default="ready",
                max_length=16,
            ),
        ),
        migrations.AlterField(
            model_name="networkmodel",
            name="file",
            field=models.FileField(blank=True, max_length=300, upload_to=server.networks.models.model_upload_path),
        ),
        migrations.AlterField(
            model_name="networkmodel",
            name="flops",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="networkmodel",
            name="graph",
            field=models.JSONField(
                blank=True, help_text="The parsed graph, as devicelab.graph.graph_to_dict writes it.", null=True
            ),
        ),
        migrations.AlterField(
            model_name="networkmodel",
            name="macs",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="networkmodel",
            name="num_operators",
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="networkmodel",
            name="params",
            field=models.BigIntegerField(blank=True, null=True),
        ),
        migrations.AlterField(
            model_name="networkmodel",
            name="summary",
            field=models.JSONField(
                blank=True, help_text="devicelab's Graph.summary(): totals and operator-type counts.", null=True
            ),
        ),
        migrations.AddIndex(
            model_name="networkmodel",
            index=models.Index(
                condition=models.Q(("state", "parsing")), fields=["created_at"], name="networkmodel_parsing_idx"
            ),
        ),
        migrations.AddConstraint(
            model_name="networkmodel",
            constraint=models.CheckConstraint(
                condition=models.Q(("state__in", ["parsing", "ready", "failed"])), name="networkmodel_state_valid"
            ),
        ),
        migrations.AddConstraint(
            model_name="networkmodel",
            constraint=models.CheckConstraint(
                condition=models.Q(
                    models.Q(("state", "ready"), _negated=True),
                    models.Q(("graph__isnull", False), ("num_operators__isnull", False), ("summary__isnull", False)),
                    _connector="OR",
                ),
                name="networkmodel_ready_has_graph",
                violation_error_message="A ready network has its graph, summary and costs.",
            ),
        ),
    ]

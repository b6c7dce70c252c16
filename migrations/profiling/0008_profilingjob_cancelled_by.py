import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("profiling", "0007_remote_scenario_kind"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="profilingjob",
            name="cancelled_by",
            field=models.ForeignKey(
                blank=True,
                help_text="Who cancelled the job (empty when nobody did, or it was cancelled by a script without a user); finished_at says when.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
    ]

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("profiling", "0008_profilingjob_cancelled_by"),
    ]

    operations = [
        migrations.AddField(
            model_name="operatortiming",
            name="p90",
            field=models.FloatField(blank=True, null=True),
        ),
    ]

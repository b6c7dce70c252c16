from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("profiling", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="profilingjob",
            name="sent_at",
            field=models.DateTimeField(
                blank=True,
                null=True,
                help_text="When a message last woke the device's worker for this job; the reconciler re-sends a queued job whose message seems lost.",
            ),
        ),
    ]

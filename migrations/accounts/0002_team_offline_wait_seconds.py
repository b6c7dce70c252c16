from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("accounts", "0001_initial"),
    ]

    operations = [
        migrations.AddField(
            model_name="team",
            name="offline_wait_seconds",
            field=models.PositiveIntegerField(
                default=3600,
                help_text="How long a queued job waits for its offline device (or an equivalent) to come back before it fails with the reason.",
            ),
        ),
    ]

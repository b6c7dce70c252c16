"""A deleted network takes its stored file with it (a team deleted, a row removed in the admin, a
failed upload replaced by the same bytes again): nothing else would ever remove the file."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete
from django.dispatch import receiver

from server.networks.models import NetworkModel
from server.networks.services import delete_stored_file


@receiver(post_delete, sender=NetworkModel, dispatch_uid="networks.delete_model_file")
def delete_model_file(sender: type[NetworkModel], instance: NetworkModel, **kwargs: Any) -> None:
    """Remove the deleted row's file once the deletion committed (a rollback keeps both)."""
    delete_stored_file(instance.file.name or "")

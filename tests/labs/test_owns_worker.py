"""A lab machine owns the devices of its worker name and of its agent instances (``NAME#i``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from server.labs.models import LabMachine


@pytest.mark.parametrize(
    ("worker", "owned"),
    [
        ("rack", True),
        ("rack#1", True),
        ("rack#gpu-2", True),
        ("rack2", False),
        ("rack.lab", False),
        ("rac", False),
        ("other#rack", False),
        ("", False),
    ],
)
def test_owns_worker(worker: str, owned: bool) -> None:
    assert LabMachine(name="rack").owns_worker(worker) is owned


@pytest.mark.django_db
def test_its_devices_are_those_of_its_name_and_instances(
    add_lab: Callable[..., Any], make_device: Callable[..., Any]
) -> None:
    lab, _ = add_lab("rack")
    mine = {make_device(worker="rack").pk, make_device(worker="rack#2").pk}
    make_device(worker="rack2")
    make_device(worker="other")
    assert set(lab.devices().values_list("pk", flat=True)) == mine
    # '_' and '.' are wildcards in LIKE and regular expressions: they match themselves only.
    wild, _ = add_lab("r_c.k")
    make_device(worker="rxcyk#1")
    assert not wild.devices().exists()

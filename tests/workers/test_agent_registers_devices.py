"""The agent registers the devices it found under its worker name (its lab machine's), and an agent
instance registers them as distinct rows that the server sees as equivalent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from devicelab.backends import cpu
from tests.workers.conftest import fake_cpu
from workers.agent import as_instance


def test_agent_registers_the_host_cpu(make_agent: Callable[..., Any]) -> None:
    from server.devices.models import Device

    agent = make_agent("bench-7", kinds=["cpu"])
    context = agent.start()

    row = Device.objects.get(worker="bench-7")
    assert row.identity == cpu.host_identity() and row.status == "online"
    assert context.name == "bench-7" and context.token == agent.token
    assert context.devices == {row.pk: agent.devices[0].found}
    assert context.devices[row.pk].identity == cpu.host_identity()
    assert agent.devices[0].queue.endswith(f"device.{row.pk}")


def test_each_run_has_a_fresh_token(make_agent: Callable[..., Any]) -> None:
    first, second = make_agent("w", kinds=["cpu"]), make_agent("w", kinds=["cpu"])
    assert first.token != second.token and len(first.token) == 32


def test_instances_get_their_own_equivalent_rows(make_agent: Callable[..., Any]) -> None:
    found = [fake_cpu(1)]
    a, b = make_agent("host#a", instance="a"), make_agent("host#b", instance="b")
    a.start(found)
    b.start(found)

    row_a, row_b = a.devices[0], b.devices[0]
    assert row_a.pk != row_b.pk
    assert row_a.row.identity == "cpu:machine-1#a" and row_b.row.identity == "cpu:machine-1#b"
    # The device processes hand the backend what it found, not the instance's row identity.
    assert a.context().devices[row_a.pk].identity == "cpu:machine-1"

    from server.devices.models import Device

    assert Device.objects.get(pk=row_a.pk).equivalent_to(Device.objects.get(pk=row_b.pk))
    assert as_instance(found[0], None) is found[0]

"""A lab worker in a network namespace that reaches only the server's HTTP port and the broker
(forwarded to it over a veth pair), as a machine in another building would: it cannot open a
connection to the host's PostgreSQL, and it profiles a model uploaded to the server all the same.
Runs where the machine allows network namespaces (root)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

import pytest

from tests.e2e import network_namespace
from tests.e2e.helpers import QUICK, submit, tiny_graph, upload, wait_finished

pytestmark = pytest.mark.skipif(
    not network_namespace.available(), reason="network namespaces need root and iproute2 (ip netns)"
)


@pytest.mark.django_db(transaction=True)
def test_a_lab_worker_that_reaches_only_http_and_the_broker_profiles_a_model(
    start_worker: Any, e2e_api: Any, live_server: Any, settings: Any
) -> None:
    from django.db import connection

    broker = urlsplit(str(settings.CELERY_BROKER_URL))
    if broker.scheme != "redis":
        pytest.skip("the namespace forwards a Redis broker; this run uses " + broker.scheme)
    server = urlsplit(live_server.url)
    with network_namespace.lab_network() as ns:
        http_port = ns.forward((server.hostname or "127.0.0.1", int(server.port or 80)))
        broker_port = ns.forward((broker.hostname or "127.0.0.1", int(broker.port or 6379)))
        settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, ns.host_ip]
        # Nothing of the database is reachable from inside: not the host's PostgreSQL, not a local one.
        db_host, db_port = (
            connection.settings_dict.get("HOST") or "127.0.0.1",
            int(connection.settings_dict.get("PORT") or 5432),
        )
        assert not ns.can_connect(ns.host_ip, db_port) and not ns.can_connect(db_host, db_port)
        assert ns.can_connect(ns.host_ip, http_port) and ns.can_connect(ns.host_ip, broker_port)

        auth = f"{broker.username or ''}:{broker.password}@" if broker.password else ""
        worker = start_worker(
            server_url=f"http://{ns.host_ip}:{http_port}",
            broker_url=f"redis://{auth}{ns.host_ip}:{broker_port}{broker.path or '/0'}",
            prefix=ns.prefix(),
        )
        device = worker.device(timeout=120)
        graph = tiny_graph("in-a-namespace")
        job = wait_finished(submit(e2e_api, upload(e2e_api, graph), device.pk, QUICK), timeout=120)
        assert job.state == "succeeded", job.failure_reason
        ops = job.result.operators.exclude(index=None)
        assert {o.name for o in ops} == {op.name for op in graph.operators}
        worker.kill()

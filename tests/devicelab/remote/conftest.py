"""The tiny classifier and a running endpoint that serves it, for the remote tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devicelab.graph.ir import Graph
from devicelab.remote.endpoint import InferenceEndpoint, serve_model
from tests.devicelab.remote.tiny import tiny_classifier


@pytest.fixture(scope="module")
def graph() -> Graph:
    """The tiny classifier, ending with a softmax."""
    return tiny_classifier()


@pytest.fixture(scope="module")
def endpoint(graph: Graph) -> Iterator[InferenceEndpoint]:
    """The tiny classifier served on loopback for the module's tests."""
    with serve_model(graph) as running:
        yield running

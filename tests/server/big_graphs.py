"""Graph JSON documents of many operators, written as text (building a ``Graph`` of 10^6
operators first would take longer than the upload under test): a chain of ReLUs on a small input.

``benchmarks/api_under_load.py`` sends one of these as its slow upload.
"""

from __future__ import annotations


def relu_chain_json(num_ops: int, name: str = "chain", bad_at: int | None = None) -> bytes:
    """A graph JSON of ``num_ops`` ReLUs in a chain (about 75 bytes each); operator ``r<bad_at>``
    has a type outside the vocabulary (``frobnicate``) when ``bad_at`` is given."""
    ops = [
        f'{{"name": "r{i}", "type": "{"frobnicate" if i == bad_at else "relu"}", '
        f'"inputs": ["t{i - 1}"], "outputs": ["t{i}"]}}'
        for i in range(1, num_ops + 1)
    ]
    head = (
        f'{{"schema_version": 1, "name": "{name}", "inputs": [{{"name": "t0", "shape": [1, 8], "dtype": "float32"}}], '
        f'"outputs": ["t{num_ops}"], "operators": ['
    )
    return (head + ", ".join(ops) + "]}").encode()

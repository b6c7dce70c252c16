"""The one error type that every graph reader, checker and builder raises."""

from __future__ import annotations


class GraphError(ValueError):
    """A model or graph that LatencyLab cannot use, with where and why.

    ``node`` names the operator (or tensor, or ``None`` for the whole file), ``op`` its
    operator type as the source format spells it, and ``reason`` what was wrong, in words a
    person can act on. ``str(err)`` joins the three.
    """

    def __init__(self, reason: str, *, node: str | None = None, op: str | None = None) -> None:
        self.reason = reason
        self.node = node
        self.op = op
        where = []
        if node is not None:
            where.append(f"node {node!r}")
        if op is not None:
            where.append(f"operator {op!r}")
        prefix = (", ".join(where) + ": ") if where else ""
        super().__init__(prefix + reason)

    def as_dict(self) -> dict[str, str | None]:
        """The error as plain data, for an API answer."""
        return {"node": self.node, "op": self.op, "reason": self.reason}

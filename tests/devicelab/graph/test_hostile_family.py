"""Issue 32, item 1: no small ONNX file makes an import allocate what it describes, whatever follows.

``hostile_models.FAMILY`` puts each operator that can grow a tensor to 2**28 elements (Range,
ConstantOfShape, Expand, Tile, Pad, Resize, Upsample, a shape computed by folding) before each
cheap one (Cast, Add, Mul, Relu, Identity, Concat, Cast -> Add). The whole family is imported in
one fresh interpreter with its address space capped at 2 GB: before the change, ``Range -> Cast
-> Add`` ran onnx's data propagation out of memory (10.7 GB uncapped) before any limit was
checked, and this test failed with the child's MemoryError. Now every member is refused at its
grower, naming the limit, in milliseconds, and the interpreter's peak RSS stays small.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from devicelab.graph import DEFAULT_LIMITS
from tests.devicelab.graph import hostile_models as hostile

MAX_RSS_KB = 400 * 1024
LONG_RESHAPE = "Reshape to a run-time target of 2**26 values"


@pytest.fixture(scope="module")
def family_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Every member of the family, and the long Reshape, imported in one capped interpreter."""
    files = {case: hostile.family_member(grower, follower) for case, grower, follower in hostile.FAMILY}
    files[LONG_RESHAPE] = hostile.reshape_to_a_long_runtime_target()
    assert all(len(data) < 1024 for data in files.values())  # each is a small file
    tmp: Path = tmp_path_factory.mktemp("family")
    return hostile.import_many_in_subprocess(files, tmp)


def test_the_family_covers_every_grower_and_follower() -> None:
    assert len(hostile.FAMILY) == len(hostile.GROWERS) * len(hostile.FOLLOWERS) >= 60
    assert set(hostile.GROWER_REFUSALS) == set(hostile.GROWERS)


@pytest.mark.parametrize("case,grower,follower", hostile.FAMILY, ids=[c[0] for c in hostile.FAMILY])
def test_each_member_is_refused_at_its_grower_naming_the_limit(
    family_run: dict[str, Any], case: str, grower: str, follower: str
) -> None:
    result = family_run["cases"][case]
    op, limit, words = hostile.GROWER_REFUSALS[grower]
    assert result["refused"], result
    assert (result["node"], result["op"], result["limit"]) == ("grow", op, limit)
    assert words in result["message"]
    if limit is not None:
        assert f"the limit is {getattr(DEFAULT_LIMITS, limit)}" in result["message"]


def test_every_refusal_is_quick(family_run: dict[str, Any]) -> None:
    # the first import in the interpreter pays for importing numpy and onnx's modules
    seconds = sorted(r["seconds"] for r in family_run["cases"].values())
    assert seconds[-2] < 0.5, seconds[-5:]


def test_a_reshape_to_a_long_runtime_target_is_refused_without_materializing_it(family_run: dict[str, Any]) -> None:
    result = family_run["cases"][LONG_RESHAPE]
    assert (result["refused"], result["node"], result["op"]) == (True, "reshape", "Reshape")
    assert "the target shape is computed at run time" in result["message"]


def test_the_whole_family_stays_under_400_mb(family_run: dict[str, Any]) -> None:
    assert family_run["maxrss_kb"] < MAX_RSS_KB, family_run["maxrss_kb"]

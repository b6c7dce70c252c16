"""The wire codec by itself: each type rule of ``from_json``, the key path its errors name, unknown
keys refused, and ``to_json`` writing what ``from_json`` reads."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, Required, TypedDict

import pytest

from devicelab.wire import JsonDict, JsonRecord, OwnJson, PayloadError, from_json, to_json


class Shape(TypedDict, total=False):
    """A declared JSON object: ``name`` must be there, the others may."""

    name: Required[str]
    cores: list[int]
    pinned: bool


@dataclass(frozen=True)
class Part(JsonRecord):
    """A nested record."""

    label: str
    value: float


@dataclass(frozen=True)
class Spec:
    """A type that reads its own JSON (as a spec does), refusing a negative ``runs``."""

    runs: int

    def as_dict(self) -> dict[str, Any]:
        return {"runs": self.runs}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Spec:
        if data.get("runs", 0) < 1:
            raise ValueError("runs must be at least 1")
        return cls(runs=data["runs"])


@dataclass(frozen=True)
class Whole(JsonRecord):
    """A record with a field of every kind the codec reads."""

    count: int
    ratio: float
    name: str
    flag: bool
    nothing: None
    maybe: int | None
    mode: Literal["fast", "slow"]
    sizes: list[int]
    dims: tuple[int, ...]
    triple: tuple[int, int, int]
    by_name: dict[str, float]
    parts: tuple[Part, ...]
    part: Part | None
    shape: Shape
    detail: JsonDict
    anything: Any
    spec: Annotated[Spec, OwnJson("a test spec")]
    either: int | str = 0
    later: tuple[str, ...] = field(default_factory=tuple)

    json_name = "whole"


def _plain() -> dict[str, Any]:
    return {
        "count": 3,
        "ratio": 1.5,
        "name": "x",
        "flag": True,
        "nothing": None,
        "maybe": None,
        "mode": "fast",
        "sizes": [1, 2],
        "dims": [4, 5, 6],
        "triple": [1, 2, 3],
        "by_name": {"a": 1.0},
        "parts": [{"label": "p", "value": 2.0}, {"label": "q", "value": 3.5}],
        "part": {"label": "r", "value": 0.5},
        "shape": {"name": "cpu", "cores": [0, 1]},
        "detail": {"nested": [1, {"deep": None}]},
        "anything": [1, "two"],
        "spec": {"runs": 2},
        "either": "a",
        "later": ["z"],
    }


def _with(**changes: Any) -> dict[str, Any]:
    plain = _plain()
    for key, value in changes.items():
        if value is _DROP:
            del plain[key]
        else:
            plain[key] = value
    return plain


_DROP = object()


def test_a_record_is_read_and_written_back_exactly() -> None:
    plain = _plain()
    whole = Whole.from_dict(json.loads(json.dumps(plain)))
    assert whole.dims == (4, 5, 6) and whole.triple == (1, 2, 3) and whole.parts[1] == Part("q", 3.5)
    assert whole.spec == Spec(2)
    assert whole.as_dict() == plain
    assert list(whole.as_dict()) == list(plain)  # keys in the fields' order
    assert to_json(whole) == plain


def test_to_json_writes_tuples_as_lists_and_nested_dataclasses_as_objects() -> None:
    assert to_json({"a": (1, (2, 3)), "b": [Part("p", 1.0)]}) == {"a": [1, [2, 3]], "b": [{"label": "p", "value": 1.0}]}


def test_an_integer_is_a_number_and_becomes_a_float() -> None:
    whole = Whole.from_dict(_with(ratio=2, by_name={"a": 3}))
    assert isinstance(whole.ratio, float) and whole.ratio == 2.0
    assert isinstance(whole.by_name["a"], float)


def test_fields_with_defaults_may_be_left_out() -> None:
    whole = Whole.from_dict(_with(either=_DROP, later=_DROP))
    assert whole.either == 0 and whole.later == ()


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("count", True, "whole.count must be an integer, got bool True"),
        ("count", 1.5, "whole.count must be an integer, got float 1.5"),
        ("ratio", False, "whole.ratio must be a number, got bool False"),
        ("ratio", "fast", "whole.ratio must be a number, got str 'fast'"),
        ("name", 3, "whole.name must be a string, got int 3"),
        ("flag", 1, "whole.flag must be true or false, got int 1"),
        ("nothing", 0, "whole.nothing must be null, got int 0"),
        ("maybe", "1", "whole.maybe must be an integer, got str '1'"),
        ("mode", "medium", "whole.mode must be one of ['fast', 'slow'], got str 'medium'"),
        ("sizes", {"a": 1}, "whole.sizes must be a list, got dict"),
        ("sizes", [1, "2"], "whole.sizes[1] must be an integer, got str '2'"),
        ("dims", [1, None], "whole.dims[1] must be an integer, got null"),
        ("triple", [1, 2], "whole.triple must be a list of 3 items"),
        ("by_name", [], "whole.by_name must be a JSON object, got list"),
        ("by_name", {"a": "x"}, "whole.by_name.a must be a number, got str 'x'"),
        ("parts", [{"label": "p", "value": 1}, {"label": "q", "value": "x"}], "whole.parts[1].value must be a number"),
        ("parts", [{"label": "p"}], "whole.parts[0].value is missing"),
        ("part", {"label": "p", "value": 1, "extra": 2}, "whole.part has unknown key(s) ['extra']"),
        ("part", "p", "whole.part must be a JSON object, got str"),
        ("shape", {"cores": [0]}, "whole.shape.name is missing"),
        ("shape", {"name": "cpu", "cores": [0, "1"]}, "whole.shape.cores[1] must be an integer"),
        ("shape", {"name": "cpu", "speed": 3}, "whole.shape has unknown key(s) ['speed']"),
        ("detail", [1], "whole.detail must be a JSON object, got list"),
        ("spec", {"runs": 0}, "whole.spec is not a test spec: runs must be at least 1"),
        ("spec", [], "whole.spec must be a JSON object, got list"),
        ("either", 1.5, "whole.either must be an integer or a string, got float 1.5"),
        ("count", _DROP, "whole.count is missing"),
        ("surplus", 1, "whole has unknown key(s) ['surplus']"),
    ],
)
def test_a_bad_value_is_refused_naming_its_path(key: str, value: Any, message: str) -> None:
    with pytest.raises(PayloadError) as refused:
        Whole.from_dict(_with(**{key: value}))
    assert message in str(refused.value)


def test_any_and_json_objects_pass_through_as_they_came() -> None:
    whole = Whole.from_dict(_with(anything={"x": [True]}, detail={"k": {"deep": [1.5]}}))
    assert whole.anything == {"x": [True]} and whole.detail == {"k": {"deep": [1.5]}}


def test_a_payload_that_is_not_an_object_is_refused_with_its_name() -> None:
    with pytest.raises(PayloadError, match="^whole must be a JSON object, got list"):
        Whole.from_dict([])
    with pytest.raises(PayloadError, match="^part must be a JSON object, got str"):
        from_json(Part, "p", "part")


def test_a_record_without_a_name_is_named_by_its_class() -> None:
    with pytest.raises(PayloadError, match="^Part.value is missing"):
        Part.from_dict({"label": "p"})


@dataclass(frozen=True)
class Checked(JsonRecord):
    """A record with a rule its types cannot say."""

    low: int
    high: int

    def _check_json(self, where: str) -> None:
        if self.low > self.high:
            raise PayloadError(f"{where}.low must not exceed high")


def test_a_record_checks_what_its_types_cannot_say() -> None:
    assert Checked.from_dict({"low": 1, "high": 2}) == Checked(1, 2)
    with pytest.raises(PayloadError, match="^Checked.low must not exceed high"):
        Checked.from_dict({"low": 3, "high": 2})
    with pytest.raises(PayloadError, match=r"^outer\[0\].low must not exceed high"):
        from_json(tuple[Checked, ...], [{"low": 3, "high": 2}], "outer")  # type: ignore[arg-type]


@dataclass(frozen=True)
class Node(JsonRecord):
    """A record that names its own type (a tree): its readers are made at their first use."""

    label: str
    children: tuple[Node, ...] = ()
    parent_label: str | None = None


def test_a_record_may_contain_its_own_type() -> None:
    tree = Node.from_dict({"label": "a", "children": [{"label": "b", "children": [{"label": "c"}]}]})
    assert tree == Node("a", (Node("b", (Node("c"),)),))
    with pytest.raises(PayloadError, match=r"^Node.children\[0\].children\[0\].label must be a string, got int 1"):
        Node.from_dict({"label": "a", "children": [{"label": "b", "children": [{"label": 1}]}]})


@dataclass
class Counted:
    """A record whose ``__post_init__`` must run when it is read (it is built by its ``__init__``)."""

    n: int
    twice: int = 0

    def __post_init__(self) -> None:
        self.twice = 2 * self.n


def test_a_record_with_its_own_initialisation_is_built_by_it() -> None:
    assert from_json(Counted, {"n": 3}, "counted").twice == 6


def test_a_mapping_that_is_not_a_dict_reads_as_a_dict_does() -> None:
    from types import MappingProxyType

    assert Part.from_dict(MappingProxyType({"label": "p", "value": 1})) == Part("p", 1.0)
    with pytest.raises(PayloadError, match="^Part has unknown key"):
        Part.from_dict(MappingProxyType({"label": "p", "value": 1, "extra": 0}))


def test_the_refusals_name_the_same_key_whichever_way_the_record_is_read() -> None:
    # the compiled reader hands anything unexpected to the field-by-field one: a missing key
    # after good ones, an unknown key, a bad value after a missing one's place
    with pytest.raises(PayloadError, match="^Part.value is missing"):
        Part.from_dict({"label": "p"})
    with pytest.raises(PayloadError, match=r"^Part has unknown key\(s\) \['x'\]"):
        Part.from_dict({"label": "p", "value": 1.0, "x": 1})
    with pytest.raises(PayloadError, match="^Part.label must be a string, got int 3"):
        Part.from_dict({"label": 3})


@dataclass(frozen=True)
class Shaped(JsonRecord):
    """A record with rows of integers (shapes) and an optional record, read without the
    general list and union readers."""

    shapes: list[list[int]]
    part: Part | None = None


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"shapes": [[1, "x"]]}, r"^Shaped.shapes\[0\]\[1\] must be an integer, got str 'x'"),
        ({"shapes": [[1, True]]}, r"^Shaped.shapes\[0\]\[1\] must be an integer, got bool True"),
        ({"shapes": [5]}, r"^Shaped.shapes\[0\] must be a list, got int 5"),
        ({"shapes": "no"}, "^Shaped.shapes must be a list, got str 'no'"),
        ({"shapes": [], "part": 5}, "^Shaped.part must be a JSON object, got int 5"),
        ({"shapes": [], "part": {"label": 1, "value": 1}}, "^Shaped.part.label must be a string, got int 1"),
    ],
)
def test_shapes_and_optional_records_are_checked_as_every_field_is(data: dict[str, Any], message: str) -> None:
    with pytest.raises(PayloadError, match=message):
        Shaped.from_dict(data)


def test_shapes_and_optional_records_read_back_as_written() -> None:
    shaped = Shaped([[1, 3, 224, 224], []], Part("p", 2.0))
    again = Shaped.from_dict(shaped.as_dict())
    assert again == shaped and again.shapes is not shaped.shapes
    assert Shaped.from_dict({"shapes": [[1]], "part": None}) == Shaped([[1]])

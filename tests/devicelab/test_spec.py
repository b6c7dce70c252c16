"""devicelab.spec: a spec dataclass declares each field once (type, bounds, choices, help) and
``check`` refuses what the declaration refuses, with a message that names the field and the value."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from devicelab import spec
from devicelab.spec import Items, SpecError, setting


@dataclass(frozen=True)
class Toy:
    """A spec of every kind of field."""

    runs: int = setting(3, ge=1, le=10, help="Runs.")
    ratio: float | None = setting(None, ge=0, le=1, unit="s", help="A ratio.")
    mode: str = setting("a", choices=("a", "b"), help="A mode.")
    pick: str = setting("", choices=("x",), blank=True, help="A pick.")
    on: bool = setting(True, help="On.")
    sizes: tuple[int, ...] = setting((1,), items=Items(ge=1, le=8), min_items=1, max_items=3, unique=True, help="S.")
    shapes: tuple[tuple[int, int, int], ...] = setting((), items=Items(items=Items(ge=1)), help="Shapes.")

    def __post_init__(self) -> None:
        spec.check(self)


@pytest.mark.parametrize(
    "kwargs,message",
    [
        ({"runs": 0}, "runs must be between 1 and 10, got 0"),
        ({"runs": True}, "runs must be an integer, got True"),
        ({"runs": 2.0}, "runs must be an integer, got 2.0"),
        ({"runs": None}, "runs must be an integer, got None"),
        ({"ratio": 2}, "ratio must be between 0 and 1 s, got 2"),
        ({"ratio": float("nan")}, "ratio must be a number or null, got nan"),
        ({"ratio": False}, "ratio must be a number or null, got False"),
        ({"mode": "c"}, "mode 'c' is not one of a, b"),
        ({"pick": "y"}, "pick 'y' is not one of x (or empty)"),
        ({"on": 1}, "on must be true or false, got 1"),
        ({"sizes": [1, 9]}, "sizes[1] must be between 1 and 8, got 9"),
        ({"sizes": []}, "sizes must have at least 1 item(s), got 0"),
        ({"sizes": [1, 2, 3, 4]}, "sizes must have at most 3 items, got 4"),
        ({"sizes": [2, 2]}, "sizes lists 2 twice"),
        ({"sizes": "1,2"}, "sizes must be a list, got '1,2'"),
        ({"shapes": [[1, 2]]}, "shapes[0] must have 3 items, got 2"),
        ({"shapes": [[1, 2, 0]]}, "shapes[0][2] must be at least 1, got 0"),
    ],
)
def test_a_refused_value_is_named_with_its_field(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(SpecError) as refused:
        Toy(**kwargs)  # type: ignore[arg-type]
    assert str(refused.value) == message


def test_what_is_accepted_is_kept_as_the_dataclass_holds_it() -> None:
    toy = Toy(ratio=1, pick="", sizes=[2, 1], shapes=[[1, 2, 3]])  # type: ignore[arg-type]
    assert (toy.ratio, toy.sizes, toy.shapes) == (1.0, (2, 1), ((1, 2, 3),))
    assert isinstance(toy.ratio, float) and hash(toy)
    assert spec.as_dict(toy)["shapes"] == [[1, 2, 3]]
    assert spec.from_dict(Toy, {"runs": 4}).runs == 4
    with pytest.raises(ValueError, match=r"unknown toy key\(s\) \['turbo'\]; known keys: \['mode', 'on'"):
        spec.from_dict(Toy, {"turbo": 1}, "toy")


def test_every_field_of_a_spec_is_declared() -> None:
    @dataclass(frozen=True)
    class Half:
        declared: int = setting(1, help="Declared.")
        plain: int = field(default=2)

    with pytest.raises(TypeError, match="Half.plain is not declared with devicelab.spec.setting"):
        spec.settings_of(Half)


def test_the_declaration_says_the_flag_and_the_label() -> None:
    from devicelab.backends.profile_settings import ProfileSettings

    warmup = spec.declared(ProfileSettings, "warmup_runs")
    assert (warmup.flag, warmup.label, warmup.rule.ge, warmup.default) == ("--warmup", "Warm-up runs", 0, 5)
    assert spec.declared(ProfileSettings, "cold_runs").flag == "--cold-runs"

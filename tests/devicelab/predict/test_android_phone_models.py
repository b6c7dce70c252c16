"""Phone model keys: a phone measured here and a qed phone of the same model share one."""

from __future__ import annotations

import pytest

from devicelab.predict import qed
from devicelab.predict.phone_models import QED_NAMES, phone_model_key


@pytest.mark.parametrize(
    ("model", "manufacturer", "key"),
    [
        ("Pixel 4", "Google", "pixel4"),
        ("SM-G973F", "samsung", "s10"),
        ("SM-G973U1", "samsung", "s10"),
        ("Galaxy S10", "Samsung", "s10"),
        ("MI 8 SE", "Xiaomi", "mi8se"),
        ("SM-A037F", "samsung", "a03s"),
    ],
)
def test_a_phone_measured_here_finds_its_qed_name(model: str, manufacturer: str, key: str) -> None:
    assert phone_model_key(model, manufacturer) == key


@pytest.mark.parametrize(
    ("model", "manufacturer", "key"),
    [
        ("Pixel 4 XL", "Google", "pixel4xl"),  # another phone than the Pixel 4
        ("SM-G975F", "samsung", "smg975f"),  # the S10+, not the S10
        ("Pixel 7", "Google", "pixel7"),
        ("Google Pixel 7", "Google", "pixel7"),  # the maker's name is not part of the model
        ("", "", ""),
    ],
)
def test_other_phones_keep_their_own_model(model: str, manufacturer: str, key: str) -> None:
    assert phone_model_key(model, manufacturer) == key


def test_every_qed_phone_is_its_own_key() -> None:
    assert set(QED_NAMES) == set(qed.DEVICES)
    assert all(phone_model_key(name) == name for name in qed.DEVICES)

"""Which phone model a device is, so that measured phones (kind ``android``) and phones known only
from imported measurements (kind ``imported``, the qed phones) of one model sit side by side.

A measured phone reports its model as Android does (``ro.product.model``: "Pixel 4", "SM-G973F");
an imported qed phone has only its short name in the data ("pixel4", "s10"). Both become one key:
the model name in lower-case letters and digits, with the qed phones' names and the model codes
their makers ship under mapped to one phone (Samsung sells the Galaxy S10 as SM-G973F, -U, -N...).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from server.devices.models import Device, DeviceKind


@dataclass(frozen=True)
class KnownPhone:
    """A phone of the imported data: its full name, and every model name it reports on Android."""

    name: str
    model_keys: frozenset[str]


# The qed data's phones (server/predictors/qed_import.py), with the ``ro.product.model`` values of
# their retail variants, so a measured phone of the same model joins them.
QED_PHONES: dict[str, KnownPhone] = {
    "pixel4": KnownPhone("Google Pixel 4", frozenset({"pixel4"})),
    "s10": KnownPhone(
        "Samsung Galaxy S10",
        frozenset({"galaxys10", "smg973f", "smg973u", "smg973u1", "smg973n", "smg9730", "smg973w"}),
    ),
    "mi8se": KnownPhone("Xiaomi Mi 8 SE", frozenset({"mi8se"})),
    "a03s": KnownPhone("Samsung Galaxy A03s", frozenset({"galaxya03s", "sma037f", "sma037g", "sma037m", "sma037u"})),
    "iphone7": KnownPhone("Apple iPhone 7", frozenset({"iphone7"})),
    "iphonexs": KnownPhone("Apple iPhone XS", frozenset({"iphonexs"})),
}

_BY_MODEL_KEY = {key: qed for qed, phone in QED_PHONES.items() for key in phone.model_keys}


def model_key(text: str) -> str:
    """A model name reduced to lower-case letters and digits: 'Pixel 4' and 'pixel-4' -> 'pixel4'."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


@dataclass(frozen=True)
class PhoneModel:
    """The model a phone device is: the key devices of one model share, and a name to show."""

    key: str
    name: str


def _measured_name(hardware: dict[str, Any], known: KnownPhone | None) -> str:
    model = str(hardware.get("model") or "").strip()
    maker = str(hardware.get("manufacturer") or "").strip()
    if known is not None:
        return known.name
    if maker and not model.lower().startswith(maker.lower()):
        return f"{maker} {model}"
    return model


def phone_model(device: Device) -> PhoneModel | None:
    """The phone model of an ``android`` device or of an imported phone; None for other devices
    (and for a phone that reported no model)."""
    hardware = device.hardware or {}
    if device.kind == DeviceKind.IMPORTED and hardware.get("qed_device") in QED_PHONES:
        qed = str(hardware["qed_device"])
        return PhoneModel(f"qed:{qed}", QED_PHONES[qed].name)
    if device.kind not in (DeviceKind.ANDROID, DeviceKind.IMPORTED):
        return None
    key = model_key(str(hardware.get("model") or ""))
    if not key:
        return None
    qed_name = _BY_MODEL_KEY.get(key)
    known = QED_PHONES[qed_name] if qed_name is not None else None
    return PhoneModel(f"qed:{qed_name}" if qed_name is not None else key, _measured_name(hardware, known))

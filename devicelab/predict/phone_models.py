"""Which phone model a device is, so that measured phones and imported qed phones of one model
can be put side by side.

A phone registers with ``ro.product.model`` as its model (``Pixel 4``, ``SM-G973F``, ``MI 8
SE``); the qed data names its phones ``pixel4``, ``s10``, ``mi8se``, ``a03s``. ``phone_model_key``
makes one key of both: the model's letters and digits in lower case, and for the qed phones the
names their makers ship them under, including Samsung's model codes (a Galaxy S10 reports
``SM-G973F``, ``SM-G973U``, ...: the code's prefix names the phone, the last letter the region).
"""

from __future__ import annotations

import re

# qed phone -> normalized names it goes by, and model-code prefixes (``smg973`` for ``SM-G973F``)
QED_NAMES: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "pixel4": (("pixel4", "googlepixel4"), ()),
    "s10": (("s10", "galaxys10", "samsunggalaxys10"), ("smg973",)),
    "mi8se": (("mi8se", "xiaomimi8se"), ()),
    "a03s": (("a03s", "galaxya03s", "samsunggalaxya03s"), ("sma037",)),
    "iphone7": (("iphone7", "appleiphone7"), ()),
    "iphonexs": (("iphonexs", "appleiphonexs"), ()),
}


def normalized(text: str) -> str:
    """Letters and digits of a model name, in lower case (``MI 8 SE`` -> ``mi8se``)."""
    return re.sub(r"[^a-z0-9]", "", text.lower())


def phone_model_key(model: str, manufacturer: str = "") -> str:
    """The key phones of one model share: a qed phone's name when the model is one of them
    (``SM-G973F`` -> ``s10``), else the normalized model without its maker's name; "" if none."""
    name = normalized(model)
    maker = normalized(manufacturer)
    if maker and name.startswith(maker) and len(name) > len(maker):
        name = name[len(maker) :]
    for qed_name, (names, codes) in QED_NAMES.items():
        if name in names or any(name.startswith(code) for code in codes):
            return qed_name
    return name


__all__ = ["QED_NAMES", "normalized", "phone_model_key"]

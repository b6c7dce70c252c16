"""Form fields derived from a devicelab spec's declaration (``devicelab.spec``).

``spec_form_fields(ProfileSettings)`` gives one Django form field per field of the dataclass, with
its bounds, choices, label and help, so the submit form offers what the worker accepts and says
it in the same words. Every field may be left empty: its key is then left out, and the service
fills in the default.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms

from devicelab.spec import Setting, settings_of


def spec_form_field(setting: Setting) -> forms.Field:
    """The form field of one declared field (a list field has none: its text is the form's to parse)."""
    rule = setting.rule
    common: dict[str, Any] = {
        "required": False,
        "label": setting.label,
        "help_text": setting.help,
        "initial": setting.default,
    }
    if rule.type is bool:
        return forms.BooleanField(**common)
    if rule.type is int:
        low, high = (None if b is None else int(b) for b in (rule.ge, rule.le))
        return forms.IntegerField(min_value=low, max_value=high, **common)
    if rule.type is float:
        return forms.FloatField(
            min_value=rule.ge, max_value=rule.le, widget=forms.NumberInput(attrs={"step": "any"}), **common
        )
    if rule.type is str and rule.choices:
        labels = dict(setting.choice_labels)
        blank = [("", labels.get("", "-"))] if rule.blank else []
        return forms.ChoiceField(choices=blank + [(c, labels.get(c, c)) for c in rule.choices], **common)
    if rule.type is str:
        return forms.CharField(**common)
    raise TypeError(f"{setting.name}: a list field needs a form field of its own")


def spec_form_fields(spec: type, exclude: Iterable[str] = ()) -> dict[str, forms.Field]:
    """A form field per field of the spec dataclass ``spec``, in its order, but those in ``exclude``."""
    skip = set(exclude)
    return {s.name: spec_form_field(s) for s in settings_of(spec) if s.name not in skip}


def spec_values(spec: type, cleaned: dict[str, Any], exclude: Iterable[str] = ()) -> dict[str, Any]:
    """The spec's keys a form was given (``cleaned_data``); an empty one is left out."""
    skip = set(exclude)
    return {
        s.name: cleaned[s.name]
        for s in settings_of(spec)
        if s.name not in skip and s.name in cleaned and cleaned[s.name] not in (None, "")
    }

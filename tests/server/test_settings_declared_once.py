"""One declaration per spec: ``ProfileSettings`` says each setting's type, bounds, choices and help
once, and the API's serializer and schema, the dashboard's submit form and ``latencylab profile``'s
flags are derived from it. A setting added to the dataclass appears in all three with no other edit.
The experiments' specs (``SweepSpec``, ``PlanOptions``, ``SharingSpec``, ``RemoteSettings``) are
declared the same way, and their request bodies and ``latencylab fusion|sharing|remote`` flags
derived from them; building the command line's parser imports no numpy."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest
from django import forms

from dashboard.forms import SubmitJobsForm
from dashboard.spec_fields import spec_form_fields
from devicelab import spec
from devicelab.backends import registry
from devicelab.backends.profile_settings import DEVICE_KINDS, ProfileSettings
from devicelab.fusion.spec import PlanOptions, SweepSpec
from devicelab.remote.spec import RemoteSettings
from devicelab.spec import setting, settings_of
from devicelab.tenancy.spec import SharingSpec
from latencylab.cli import build_parser
from latencylab.commands.spec_flags import add_spec_flags, spec_values
from server.api.spec_fields import DeclaredField, rule_schema, spec_fields
from server.fusion.api.requests import FusionPlanOptionsSerializer, FusionSpecSerializer
from server.profiling.api.serializers import JobSettingsSerializer
from server.remote.api.requests import RemoteRunCreateSerializer
from server.tenancy.api.requests import SharingSpecSerializer


def _parser(*names: str) -> argparse.ArgumentParser:
    """The parser of ``latencylab NAME SUBNAME ...``."""
    parser = build_parser()
    for name in names:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


def _profile_parser() -> argparse.ArgumentParser:
    return _parser("profile")


def _flag_actions(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    return {a.dest: a for a in parser._actions}


def test_every_setting_is_in_the_serializer_with_its_declared_schema() -> None:
    fields = JobSettingsSerializer().fields
    assert list(fields) == [s.name for s in settings_of(ProfileSettings)]
    for s in settings_of(ProfileSettings):
        if s.name == "cores":  # a list of core ids, or a cluster's name: the service resolves it
            continue
        assert isinstance(fields[s.name], DeclaredField) and fields[s.name].setting == s
        assert s.help in str(fields[s.name].help_text)
    threads = rule_schema(spec.declared(ProfileSettings, "threads").rule)
    assert threads == {"type": "integer", "minimum": 1, "maximum": 1024}
    delegate = rule_schema(spec.declared(ProfileSettings, "delegate").rule)
    assert delegate == {"type": "string", "enum": ["cpu", "xnnpack", "gpu", "nnapi", ""]}


@pytest.mark.django_db
def test_every_setting_but_the_backend_is_on_the_form_with_its_bounds(make_member: Callable[..., Any]) -> None:
    form = SubmitJobsForm(make_member().team)
    for s in settings_of(ProfileSettings):
        if s.name == "backend":  # each device's own kind
            assert s.name not in form.fields
            continue
        field = form.fields[s.name]
        if s.name == "cores":  # typed as text (0-3), or a phone's cluster beside it
            assert isinstance(field, forms.CharField)
            continue
        assert (field.label, field.help_text) == (s.label, s.help)
        if s.rule.type in (int, float):
            assert (field.min_value, field.max_value) == (s.rule.ge, s.rule.le)  # type: ignore[attr-defined]
        if s.rule.choices and s.name not in ("precision", "delegate"):  # those two narrow to the online devices'
            assert [c for c, _ in field.choices] == list(s.rule.choices)  # type: ignore[attr-defined]


def test_every_setting_is_a_flag_with_its_choices() -> None:
    actions = _flag_actions(_profile_parser())
    for s in settings_of(ProfileSettings):
        action = actions[s.name]
        assert s.flag in action.option_strings and str(action.help).replace("%%", "%").startswith(s.help)
        if s.rule.choices and s.name != "on_noise":  # rerun:N is read by its own parser
            assert tuple(action.choices or ()) == s.rule.choices
    assert actions["warmup_runs"].option_strings == ["--warmup"]
    assert set(DEVICE_KINDS) == set(registry.BACKEND_MODULES)  # --backend offers every backend


def test_a_flag_is_checked_by_the_declaration() -> None:
    args = _profile_parser().parse_args(["m", "--device", "d", "--runs", "0"])
    with pytest.raises(ValueError, match="--runs must be between 1 and 10000, got 0"):
        spec_values(args, ProfileSettings)
    args = _profile_parser().parse_args(["m", "--device", "d", "--warmup", "3", "--on-noise", "rerun:4"])
    assert spec_values(args, ProfileSettings) == {"warmup_runs": 3, "on_noise": "rerun", "noise_reruns": 4}


@dataclass(frozen=True)
class WithAnotherSetting:
    """A spec with a setting added: one line."""

    threads: int = setting(1, ge=1, le=64, help="Threads.")
    batch: int = setting(1, ge=1, le=256, label="Batch size", help="Images per inference.")

    def __post_init__(self) -> None:
        spec.check(self)


def test_a_new_setting_needs_no_other_edit() -> None:
    serializer = type("S", (JobSettingsSerializer,), {"get_fields": lambda self: spec_fields(WithAnotherSetting)})
    assert not serializer(data={"batch": 300}).is_valid()
    checked = serializer(data={"batch": 300})
    checked.is_valid()
    assert checked.errors["batch"] == ["must be between 1 and 256, got 300"]
    assert rule_schema(spec.declared(WithAnotherSetting, "batch").rule)["maximum"] == 256

    field = spec_form_fields(WithAnotherSetting)["batch"]
    assert (field.label, field.max_value, field.initial) == ("Batch size", 256, 1)  # type: ignore[attr-defined]

    parser = argparse.ArgumentParser()
    add_spec_flags(parser, WithAnotherSetting)
    assert spec_values(parser.parse_args(["--batch", "8"]), WithAnotherSetting) == {"batch": 8}
    with pytest.raises(ValueError, match="--batch must be between 1 and 256, got 0"):
        spec_values(parser.parse_args(["--batch", "0"]), WithAnotherSetting)


# The experiments' specs: what each serializer derives from (its overrides: fields whose wire format
# is more than the declaration), and the command that offers its flags.
EXPERIMENTS = [
    (SweepSpec, FusionSpecSerializer, {"time_budget_s"}, ("fusion", "sweep")),
    (PlanOptions, FusionPlanOptionsSerializer, set(), ("fusion", "plan")),
    (SharingSpec, SharingSpecSerializer, {"networks"}, ("sharing", "sweep")),
    (RemoteSettings, RemoteRunCreateSerializer, {"profiles"}, ("remote", "run")),
]


@pytest.mark.parametrize("spec_class,serializer,overridden,command", EXPERIMENTS)
def test_an_experiments_request_and_flags_are_derived_from_its_declaration(
    spec_class: type, serializer: Any, overridden: set[str], command: tuple[str, ...]
) -> None:
    fields = serializer().fields
    assert set(fields) >= {s.name for s in settings_of(spec_class)}
    for s in settings_of(spec_class):
        if s.name not in overridden:
            assert isinstance(fields[s.name], DeclaredField) and fields[s.name].setting == s
        assert s.help in str(fields[s.name].help_text)
    actions = _flag_actions(_parser(*command))
    for s in settings_of(spec_class):
        if not s.flag:
            continue
        action = actions[s.name]
        assert s.flag in action.option_strings and str(action.help).replace("%%", "%").startswith(s.help)
        if s.rule.choices:
            assert tuple(action.choices or ()) == s.rule.choices


def test_the_experiments_flags_keep_their_names() -> None:
    assert _flag_actions(_parser("fusion", "sweep"))["time_budget_s"].option_strings == ["--time-budget"]
    assert _flag_actions(_parser("fusion", "plan"))["round_to_wave"].option_strings == ["--round", "--no-round"]
    assert _flag_actions(_parser("sharing", "sweep"))["shapes"].option_strings == ["--shape"]
    assert _flag_actions(_parser("sharing", "sweep"))["memory_cap_bytes"].option_strings == ["--memory-cap-mb"]


def test_a_flag_of_an_experiment_is_checked_by_its_declaration() -> None:
    args = _parser("fusion", "plan").parse_args(["--device", "d", "--max-group", "9", "--no-round"])
    with pytest.raises(ValueError, match="--max-group must be between 2 and 8, got 9"):
        spec_values(args, PlanOptions)
    args = _parser("sharing", "sweep").parse_args(["--device", "d", "--shape", "8x8x8", "--memory-cap-mb", "1.5"])
    assert spec_values(args, SharingSpec) == {"shapes": [[8, 8, 8]], "memory_cap_bytes": 1_500_000}
    with pytest.raises(SystemExit):
        _parser("fusion", "sweep").parse_args(["--device", "d", "--sizes", "2,9"])


def test_the_experiments_commands_and_specs_import_no_numpy() -> None:
    modules = [f"latencylab.commands.{m}_cmds" for m in ("fusion", "sharing", "remote")]
    modules += [f"devicelab.{m}.spec" for m in ("fusion", "tenancy", "remote")]
    code = f"import sys, {', '.join(modules)}; print([m for m in ('numpy', 'pyopencl', 'django') if m in sys.modules])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"

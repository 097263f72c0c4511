"""The README documents every command, setting and policy key (ARCHITECTURE convention 8)."""

from dataclasses import fields
from pathlib import Path

import typer.main

from memfold.cli.main import app
from memfold.config import SECTIONS
from memfold.policy import policy_keys

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def _commands(group, prefix=""):
    for name, cmd in group.commands.items():
        full = f"{prefix}{name}"
        sub = getattr(cmd, "commands", None)
        if sub:
            yield from _commands(cmd, full + " ")
        else:
            yield full


def test_every_cli_command_is_documented():
    click_app = typer.main.get_command(app)
    missing = [c for c in _commands(click_app) if f"memfold {c}" not in README]
    assert not missing, f"README lacks: {missing}"


def test_every_setting_and_policy_key_is_documented():
    missing = [k for k in policy_keys() if f"`{k}`" not in README]
    for section, cls in SECTIONS.items():
        assert f"[{section}]" in README
        missing += [f"{section}.{f.name}" for f in fields(cls) if f"{f.name} =" not in README]
    assert not missing, f"README lacks: {missing}"

"""scripts/quickstart.py, the README's first command: it makes ``.venv`` where Python
has no ensurepip (Debian and Ubuntu without python3-venv) by making it without pip and
installing into it with the system's pip."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "quickstart.py"


def quickstart():
    spec = importlib.util.spec_from_file_location("quickstart", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_without_ensurepip_the_environment_is_made_without_pip(tmp_path, monkeypatch):
    script = quickstart()
    monkeypatch.setattr(script, "VENV", tmp_path / ".venv")
    monkeypatch.setattr(script, "PYTHON", tmp_path / ".venv" / "bin" / "python")
    made = []

    def create(path, with_pip=False, clear=False):
        made.append(with_pip)
        if with_pip:  # what venv does where ensurepip is missing
            raise subprocess.CalledProcessError(1, ["python", "-m", "ensurepip"])
        (path / "bin").mkdir(parents=True)
        (path / "bin" / "python").symlink_to(sys.executable)

    monkeypatch.setattr(script.venv, "create", create)
    pip = script.make_environment()
    assert made == [True, False]
    assert pip == [sys.executable, "-m", "pip", "--python", str(tmp_path / ".venv" / "bin" / "python")]


def test_an_existing_environment_is_reused(tmp_path, monkeypatch):
    script = quickstart()
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").symlink_to(sys.executable)
    monkeypatch.setattr(script, "VENV", tmp_path / ".venv")
    monkeypatch.setattr(script, "PYTHON", tmp_path / ".venv" / "bin" / "python")
    monkeypatch.setattr(script.venv, "create", lambda *a, **k: pytest.fail("made again"))
    assert script.make_environment() == [str(tmp_path / ".venv" / "bin" / "python"), "-m", "pip"]

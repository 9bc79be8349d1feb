"""The README works as written: every ``console`` block runs, command by command, in an
empty folder with ``dcmap`` on the ``PATH``, and prints what the block shows; every
``python`` block runs too (one that starts with ``# NAME.py`` is written to that file
first, for the commands that use it).

Shown output is matched line by line: ``...`` alone stands for any number of lines, a
line ending in ``...`` for any line that starts with what comes before, and durations
(``1.4 s``) match any duration. Standard output and standard error are read together,
in the order they were written.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DURATION = re.compile(r"\d+(\.\d+)? s\b")


def blocks(text: str) -> list[tuple[str, list[str]]]:
    """The fenced blocks of a Markdown text: (language, lines)."""
    found = []
    for match in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.S | re.M):
        found.append((match.group(1), match.group(2).splitlines()))
    return found


def commands(lines: list[str]) -> list[tuple[str, list[str]]]:
    """A console block's commands with the output shown after each."""
    found: list[tuple[str, list[str]]] = []
    for line in lines:
        if line.startswith("$ "):
            found.append((line[2:], []))
        else:
            assert found, f"output before any command: {line!r}"
            found[-1][1].append(line)
    return found


def matches(shown: list[str], actual: list[str]) -> bool:
    """Whether ``actual`` lines fit the ``shown`` ones (see the module docstring)."""
    shown = [DURATION.sub("T s", line.rstrip()) for line in shown]
    actual = [DURATION.sub("T s", line.rstrip()) for line in actual]
    fits = [[False] * (len(actual) + 1) for _ in range(len(shown) + 1)]
    fits[len(shown)][len(actual)] = True
    for i in range(len(shown) - 1, -1, -1):
        for j in range(len(actual), -1, -1):
            if shown[i] == "...":
                fits[i][j] = fits[i + 1][j] or (j < len(actual) and fits[i][j + 1])
            elif j < len(actual):
                line = shown[i]
                same = actual[j].startswith(line[:-3]) if line.endswith("...") else actual[j] == line
                fits[i][j] = same and fits[i + 1][j + 1]
    return fits[0][0]


def test_the_matcher_by_hand():
    assert matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert matches(["took 1.4 s", "x..."], ["took 12.0 s", "xyz"])
    assert not matches(["a", "d"], ["a", "b", "d"])
    assert not matches(["a", "..."], ["b"])


@pytest.mark.slow
@pytest.mark.ray
def test_every_example_of_the_readme_runs_as_written(tmp_path):
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
           "PYTHONUNBUFFERED": "1", "PYTHONPATH": str(tmp_path)}
    ran = 0
    for language, lines in blocks(README.read_text()):
        if language == "python":
            if lines and re.fullmatch(r"# [\w.]+\.py", lines[0]):
                (tmp_path / lines[0][2:]).write_text("\n".join(lines[1:]) + "\n")
                continue
            done = subprocess.run([sys.executable, "-c", "\n".join(lines)], cwd=tmp_path, env=env, text=True,
                                  capture_output=True, stdin=subprocess.DEVNULL, timeout=900)
            assert done.returncode == 0, f"README python block failed:\n{done.stderr[-3000:]}"
            ran += 1
        if language != "console":
            continue
        status = 0
        for command, shown in commands(lines):
            done = subprocess.run(["bash", "-c", f"(exit {status}); {command}"], cwd=tmp_path, env=env, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                  timeout=900)
            status = done.returncode
            assert matches(shown, done.stdout.splitlines()), (
                f"$ {command}\nshown:\n" + "\n".join(shown) + f"\nprinted (exit {status}):\n{done.stdout[-4000:]}")
            ran += 1
    assert ran >= 12

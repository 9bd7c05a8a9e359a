"""Every README and docs/*.md code block runs as written, in a fresh folder, so the documentation cannot rot.

A block runs when its fence says ``python`` (executed) or ``bash``/``sh``/``shell`` (every ``agentcore ...``
command run through the CLI; any other command is an error, so a page cannot hide one). Other fences (toml,
json, policy, plain text) are data. Two HTML comments placed on the line before a fence change that:

- ``<!-- not-run: reason -->``: an illustrative block (it needs a remote service or a model client); the
  reason is required.
- ``<!-- file: relative/path -->``: the block's text is written to that file before the blocks after it run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
SHELLS = {"bash", "sh", "shell"}
_FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
_MARKER = re.compile(r"<!--\s*(not-run|file):\s*(.*?)\s*-->\s*\Z")


class SnippetError(ValueError):
    """A page's blocks break the rules above (a bare command, a marker without a reason)."""


@dataclass(frozen=True)
class Step:
    kind: Literal["python", "shell", "file"]
    code: str  # python source, one shell command line, or a file's text
    origin: str  # page:line of the block
    path: str = ""  # for kind "file"


def _commands(body: str, origin: str) -> list[str]:
    """The block's command lines (continuations joined, comments dropped); each must call agentcore."""
    commands = []
    for line in body.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[0] != "agentcore":
            raise SnippetError(f"{origin}: `{line.strip()}` is not an agentcore command; mark the block not-run")
        commands.append(shlex.join(words).replace("'$GITHUB_STEP_SUMMARY'", '"$GITHUB_STEP_SUMMARY"'))
    return commands


def page_steps(page: Path) -> tuple[list[Step], list[str]]:
    """The page's steps in order, and the origins of its not-run blocks."""
    text = page.read_text(encoding="utf-8")
    steps: list[Step] = []
    skipped: list[str] = []
    for match in _FENCE.finditer(text):
        language, body = match.group(1), match.group(2)
        shown = page.relative_to(REPO) if page.is_relative_to(REPO) else page
        origin = f"{shown}:{text.count(chr(10), 0, match.start()) + 1}"
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = _MARKER.search(before)
        if marker and marker.group(1) == "not-run":
            if not marker.group(2):
                raise SnippetError(f"{origin}: not-run needs a reason")
            skipped.append(origin)
        elif marker:
            steps.append(Step("file", body, origin, marker.group(2)))
        elif language == "python":
            steps.append(Step("python", body, origin))
        elif language in SHELLS:
            steps += [Step("shell", command, origin) for command in _commands(body, origin)]
    return steps, skipped


RUNNER = Path(__file__).with_name("run_snippets.py")


def _run(page: Path, folder: Path) -> subprocess.CompletedProcess[str]:
    steps, _ = page_steps(page)
    shutil.copytree(REPO / "examples", folder / "examples")  # what a clone has; the repository stays untouched
    steps_file = folder.parent / f"{page.stem}.steps.json"
    steps_file.write_text(json.dumps([dataclasses.asdict(step) for step in steps]))
    env = {key: value for key, value in os.environ.items() if not key.startswith("AGENTCORE_DATABASE")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["GITHUB_STEP_SUMMARY"] = str(folder.parent / "summary.md")
    return subprocess.run(
        [sys.executable, str(RUNNER), str(steps_file)], cwd=folder, env=env, capture_output=True, text=True, timeout=600
    )


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=[page.name for page in PAGES])
def test_page_runs_as_written(page: Path, tmp_path: Path) -> None:
    folder = tmp_path / "fresh"
    folder.mkdir()
    result = _run(page, folder)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-6000:]


def test_not_run_markers_are_few_and_explained() -> None:
    skipped = [origin for page in PAGES for origin in page_steps(page)[1]]
    ran = [step for page in PAGES for step in page_steps(page)[0] if step.kind != "file"]
    assert len(skipped) < len(ran) / 2, f"most blocks must run; not-run: {skipped}"


def test_a_bare_shell_command_or_a_silent_marker_is_an_error(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("```bash\nmake demo\n```\n")
    with pytest.raises(SnippetError, match="not an agentcore command"):
        page_steps(page)
    page.write_text("<!-- not-run: -->\n```python\nx\n```\n")
    with pytest.raises(SnippetError, match="needs a reason"):
        page_steps(page)

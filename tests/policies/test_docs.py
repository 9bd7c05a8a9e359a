"""The reference's examples run: the example bundle compiles and the Python example's assertions hold."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from agentcore import PolicyEngine

DOC = Path(__file__).resolve().parents[2] / "docs" / "policy-language.md"
BLOCKS = re.findall(r"```(\w*)\n(.*?)```", DOC.read_text(), re.S)


def test_example_bundle_and_python_snippet_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (policy,) = [body for lang, body in BLOCKS if not lang and body.startswith("# refunds.policy")]
    (snippet,) = [body for lang, body in BLOCKS if lang == "python"]
    (tmp_path / "policies").mkdir()
    (tmp_path / "policies" / "refunds.policy").write_text(policy)
    assert len(PolicyEngine.from_paths([tmp_path / "policies"]).files[0].rules) == 15
    monkeypatch.chdir(tmp_path)
    exec(compile(snippet, str(DOC), "exec"), {})

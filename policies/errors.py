"""Errors of the policy language: one class per phase, each carrying every problem found with its location.

A ``PolicySyntaxError`` means the text does not parse; a ``PolicyCheckError`` means it parses but cannot be
compiled or contradicts the tool schemas. Both hold a non-empty list of :class:`Problem` so one run reports
all of them, each rendered as ``file:line:col``, the source line, a caret and a help line.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentcore.errors import AgentCoreError


@dataclass(frozen=True)
class Problem:
    """One located problem: what is wrong (``message``) and what to do about it (``help``)."""

    message: str
    file: str = "<policy>"
    line: int = 0
    column: int = 0
    source_line: str = ""
    help: str = ""

    def render(self) -> str:
        where = f"{self.file}:{self.line}:{self.column}" if self.line else self.file  # a file-level problem
        head = f"{where}: {self.message}"
        parts = [head]
        if self.source_line:
            parts.append(f"    {self.source_line}")
            parts.append("    " + " " * max(self.column - 1, 0) + "^")
        if self.help:
            parts.append(f"  help: {self.help}")
        return "\n".join(parts)


class PolicyError(AgentCoreError, ValueError):
    """Base of policy errors; ``problems`` lists every located problem found."""

    def __init__(self, problems: list[Problem]) -> None:
        if not problems:
            raise ValueError("a PolicyError needs at least one problem")
        self.problems = tuple(problems)
        super().__init__("\n".join(problem.render() for problem in self.problems))


class PolicySyntaxError(PolicyError):
    """The policy text does not follow the grammar."""


class PolicyCheckError(PolicyError):
    """The policy parses but is invalid: unknown time zone, bad regex, conflicting defaults, schema mismatch."""


class PolicyRequestError(AgentCoreError, ValueError):
    """A policy test or request file is malformed (not a policy error: the input around it is)."""

"""Named conditions across a bundle: ``define "large expense" as ...`` and the uses of the name.

Names are global to the bundle (a definition in one file serves rules in every file). The compiler and the
checker both ask :func:`named_problems` for names defined twice, uses of unknown names and definitions that
refer to themselves through others.
"""

from __future__ import annotations

import difflib
import functools
import typing
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from agentcore.policies import ast


@dataclass(frozen=True)
class NamedProblem:
    code: str  # duplicate-condition, unknown-condition, condition-cycle
    message: str
    span: ast.Span | None
    help: str


def definitions_of(files: Sequence[ast.PolicyFile]) -> dict[str, ast.Definition]:
    """Name -> definition (the first one when a name is defined twice)."""
    found: dict[str, ast.Definition] = {}
    for file in files:
        for definition in file.definitions:
            found.setdefault(definition.name, definition)
    return found


def uses(node: object) -> list[ast.Named]:
    """Every named condition used in a node, depth first (a list filled by one walk: a chain of generators
    costs a third of compiling a large bundle)."""
    found: list[ast.Named] = []
    _collect(node, found)
    return found


def _collect(node: object, found: list[ast.Named]) -> None:
    if type(node) is tuple:
        for item in node:
            if type(item) is tuple or isinstance(item, ast.Node):
                _collect(item, found)
    elif isinstance(node, ast.Named):
        found.append(node)
    elif isinstance(node, ast.Node):
        for name in _node_fields(type(node)):
            _collect(getattr(node, name), found)


@functools.cache
def _node_fields(kind: type[ast.Node]) -> tuple[str, ...]:
    """The fields of a node class that can hold nodes (read from its annotations, so new fields are walked)."""
    return tuple(name for name, field in kind.model_fields.items() if name != "span" and _holds_nodes(field.annotation))


def _holds_nodes(annotation: object) -> bool:
    if isinstance(annotation, type) and issubclass(annotation, ast.Node):
        return True
    return any(_holds_nodes(argument) for argument in typing.get_args(annotation))


def named_problems(files: Sequence[ast.PolicyFile]) -> list[NamedProblem]:
    definitions = definitions_of(files)
    problems = [
        NamedProblem(
            "duplicate-condition",
            f'the condition "{definition.name}" is defined twice',
            definition.span,
            "give each definition its own name",
        )
        for file in files
        for definition in file.definitions
        if definitions[definition.name] is not definition
    ]
    sources = [*(rule.clauses for f in files for rule in f.rules), *(d.cond for d in definitions.values())]
    for use in (use for source in sources for use in uses(source)):
        if use.name not in definitions:
            close = difflib.get_close_matches(use.name, list(definitions), n=1, cutoff=0.6)
            hint = f'did you mean "{close[0]}"?' if close else 'define it: `define "name" as CONDITION.`'
            problems.append(NamedProblem("unknown-condition", f'no condition is named "{use.name}"', use.span, hint))
    problems.extend(_cycles(definitions))
    return problems


def _cycle_from(name: str, definitions: dict[str, ast.Definition], path: list[str]) -> list[str] | None:
    """The first cycle reachable from ``name`` (``path`` is the chain of names that led here)."""
    if name in path:
        return [*path[path.index(name) :], name]
    if name not in definitions:
        return None
    for use in uses(definitions[name].cond):
        cycle = _cycle_from(use.name, definitions, [*path, name])
        if cycle is not None:
            return cycle
    return None


def _cycles(definitions: dict[str, ast.Definition]) -> Iterator[NamedProblem]:
    reported: set[str] = set()
    for start in definitions:
        cycle = _cycle_from(start, definitions, [])
        if cycle is not None and not reported & set(cycle):
            reported.update(cycle)
            yield NamedProblem(
                "condition-cycle",
                "named conditions refer to each other in a cycle: " + " -> ".join(f'"{name}"' for name in cycle),
                definitions[cycle[0]].span,
                "a named condition may use others, but never itself",
            )

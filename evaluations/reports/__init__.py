"""Report writers for an evaluation :class:`~agentcore.evaluations.outcome.Outcome`: JSON, JUnit XML, Markdown, HTML."""

from agentcore.evaluations.reports.html import render_html
from agentcore.evaluations.reports.json import render_json
from agentcore.evaluations.reports.junit import render_junit
from agentcore.evaluations.reports.markdown import render_markdown

__all__ = ["render_html", "render_json", "render_junit", "render_markdown"]

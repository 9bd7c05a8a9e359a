"""The console's Starlette application: routes, sign-in, and the pages of :mod:`agentcore.console.pages`.

Server-rendered Jinja2 templates; htmx (vendored under ``static/``) only refreshes the audit table as filters
change, and every page works without it. Every page but sign-in needs a signed-in approver; every POST checks its
CSRF token.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agentcore.accel import charts, units
from agentcore.accel.ledger import Ledger
from agentcore.console.auth import LOGIN_COOKIE, SESSION_COOKIE, Approver, Authenticator, new_login_token
from agentcore.console.pages import approvals, audit, evals, spend
from agentcore.console.settings import ConsoleSettings
from agentcore.errors import AgentCoreError
from agentcore.gateway.anchors import open_sink
from agentcore.gateway.approvals import Approval, ApprovalStore
from agentcore.gateway.audit import AuditLog
from agentcore.gateway.audit_keys import load_chain_keys
from agentcore.gateway.db import Database, resolve_url
from agentcore.gateway.mcp.auth import AuthError

log = logging.getLogger(__name__)
HERE = Path(__file__).resolve().parent

# Every response: scripts only from this origin (no inline script, no eval: htmx's hx-on and js: values stay
# inert), never framed (an approve button clickjacked from a same-site page), no referrer, never cached.
SECURITY_HEADERS = {
    "content-security-policy": (
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        "form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "x-frame-options": "DENY",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "cache-control": "no-store",
}


class SecurityHeaders:
    """ASGI middleware that puts :data:`SECURITY_HEADERS` on every response, error pages and static files too."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", [])}
                extra = [(k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items() if k.encode() not in present]
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        await self.app(scope, receive, with_headers)


_APPROVED = ("approved", "executing", "executed")  # by the time the page is shown, the call may be running or done


def _set_cookie(request: Request, response: Response, name: str, value: str) -> None:
    """A cookie only this site's requests carry, no script reads, and (served over HTTPS) never sent in clear."""
    response.set_cookie(name, value, httponly=True, samesite="strict", secure=request.url.scheme == "https")


def _decided_message(approval: Approval, approver: Approver) -> str | None:
    """The banner after ``approver``'s decision, from the request's state: never from the URL, where anyone who
    sends an approver a link could write "verified, safe to approve" on the real console."""
    me = approver.principal.id
    if approval.decided_by != me and all(s.by != me for s in approval.signoffs):
        return None
    if approval.status == "pending":
        return f"signed off; still needs role {' and '.join(approval.missing_roles)}"
    if approval.status in _APPROVED:
        return "approved: the gateway runs the call (once) when its caller waits or retries"
    return approval.status


def _when(ts: float | None) -> str:
    if ts is None:
        return ""
    return datetime.datetime.fromtimestamp(ts, datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def _duration(seconds: float) -> str:
    seconds = max(seconds, 0.0)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.0f} s"


def _environment() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
    env.filters["when"] = _when
    env.filters["duration"] = _duration
    env.filters["pretty"] = lambda value: json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False, default=str)
    env.filters["usd"] = units.usd
    env.filters["seconds"] = units.seconds
    env.filters["number"] = units.number
    env.filters["svg"] = Markup  # charts are built from escaped parts by agentcore.accel.charts
    return env


class Console:
    """The state behind the routes: one database, its audit log and approval store, the ledger, the reports."""

    def __init__(self, settings: ConsoleSettings) -> None:
        self.settings = settings
        self.db = Database(settings.database)
        self.audit = AuditLog(self.db, keys=load_chain_keys(settings.audit_key_file))
        self.store = ApprovalStore(self.db, self.audit)
        self.anchors = open_sink(settings.anchors)
        self.ledger = Ledger(settings.ledger or resolve_url(settings.database))
        self.auth = Authenticator(settings.auth)
        self.templates = _environment()

    def close(self) -> None:
        self.db.close()

    # ---- rendering -------------------------------------------------------------------------------------------
    def page(
        self, request: Request, template: str, approver: Approver | None, status: int = 200, **context: Any
    ) -> Response:
        html = self.templates.get_template(template).render(
            request=request, approver=approver, gateway=self.settings.name, **context
        )
        return HTMLResponse(html, status_code=status)

    def signed_in(self, request: Request) -> Approver:
        approver = self.auth.approver(request)
        if approver is None:
            raise HTTPException(303, headers={"Location": f"/login?next={request.url.path}"})
        return approver

    # ---- sign-in ------------------------------------------------------------------------------------------------
    async def login(self, request: Request) -> Response:
        if request.method == "GET":
            token = new_login_token()
            response = self.page(
                request, "login.html", None, login_csrf=token, next=request.query_params.get("next", "/")
            )
            _set_cookie(request, response, LOGIN_COOKIE, token)
            return response
        form = await self.auth.login_form(request)
        try:
            approver = self.auth.sign_in(form.get("token", ""))
        except AuthError as error:
            token = new_login_token()
            response = self.page(request, "login.html", None, 401, login_csrf=token, error=str(error), next="/")
            _set_cookie(request, response, LOGIN_COOKIE, token)
            return response
        log.info("console: %s signed in", approver.principal.id)
        target = form.get("next", "/")
        response = RedirectResponse(target if target.startswith("/") and not target.startswith("//") else "/", 303)
        _set_cookie(request, response, SESSION_COOKIE, form["token"].strip())
        response.delete_cookie(LOGIN_COOKIE)
        return response

    async def logout(self, request: Request) -> Response:
        await self.auth.checked_form(request)
        response = RedirectResponse("/login", 303)
        response.delete_cookie(SESSION_COOKIE)
        return response

    # ---- approvals --------------------------------------------------------------------------------------------
    def inbox(self, request: Request) -> Response:
        approver = self.signed_in(request)
        pending = approvals.rows(self.store, self.audit, "pending", approver.tenant)
        history = approvals.rows(self.store, self.audit, "history", approver.tenant)
        return self.page(request, "approvals.html", approver, pending=pending, history=history)

    def approval(self, request: Request) -> Response:
        approver = self.signed_in(request)
        try:
            row = approvals.one(self.store, self.audit, request.path_params["approval_id"], approver.tenant)
        except AgentCoreError as error:
            return self.page(request, "error.html", approver, 404, message=str(error))
        message = _decided_message(row.approval, approver) if "decided" in request.query_params else None
        return self.page(request, "approval.html", approver, row=row, message=message)

    async def decide(self, request: Request) -> Response:
        approver, form = await self.auth.checked_form(request)
        approval_id, verb = request.path_params["approval_id"], request.path_params["verb"]
        if verb not in ("approve", "reject"):
            raise HTTPException(404, f"no action {verb!r}: approve or reject")
        note = form.get("note") or None
        try:
            decided = await run_in_threadpool(
                self.store.decide, approval_id, by=approver.principal, tenant=approver.tenant,
                approve=verb == "approve", note=note,
            )  # fmt: skip
        except AgentCoreError as error:
            try:
                row = await run_in_threadpool(approvals.one, self.store, self.audit, approval_id, approver.tenant)
            except AgentCoreError:  # no request of this approver's tenant: nothing of it is shown
                return self.page(request, "error.html", approver, 409, message=str(error))
            return self.page(request, "approval.html", approver, 409, row=row, error=str(error))
        log.info("console: %s %sd %s (now %s)", approver.principal.id, verb, approval_id, decided.status)
        return RedirectResponse(f"/approvals/{approval_id}?decided", 303)

    # ---- audit ---------------------------------------------------------------------------------------------------
    def audit_list(self, request: Request) -> Response:
        approver = self.signed_in(request)
        query = audit.Query({k: v.strip() for k in audit.FILTERS if (v := request.query_params.get(k, ""))})
        problems = query.problems()
        records, total = ([], 0) if problems else audit.search(self.audit, query, approver.tenant)
        chain = audit.verify(self.audit, self.anchors)
        template = "audit_table.html" if request.headers.get("HX-Request") else "audit.html"
        return self.page(
            request, template, approver, records=records, total=total, query=query.values, chain=chain,
            problems=problems, limit=audit.LIMIT,
        )  # fmt: skip

    def audit_record(self, request: Request) -> Response:
        approver = self.signed_in(request)
        record, related = audit.call_records(self.audit, int(request.path_params["seq"]), approver.tenant)
        if record is None:
            return self.page(
                request, "error.html", approver, 404, message=f"no audit record {request.path_params['seq']}"
            )
        chain = audit.verify(self.audit, self.anchors)
        return self.page(request, "record.html", approver, record=record, related=related, chain=chain)

    # ---- evaluations ----------------------------------------------------------------------------------------------
    def eval_runs(self, request: Request) -> Response:
        approver = self.signed_in(request)
        runs, unreadable = evals.load(self.settings.reports)
        trend_charts = {
            suite: charts.line_chart(
                series, title=f"{suite}: mean score per run", x_label="run time (UTC)", y_label="mean score",
                x_format=evals.day, y_range=(0.0, 1.0), time_axis=True,
            )
            for suite, series in evals.trends(runs).items()
        }  # fmt: skip
        return self.page(
            request, "evals.html", approver, runs=list(reversed(runs)), unreadable=unreadable, charts=trend_charts,
            folder=self.settings.reports,
        )  # fmt: skip

    def eval_run(self, request: Request) -> Response:
        approver = self.signed_in(request)
        runs, _ = evals.load(self.settings.reports)
        run = next((r for r in runs if r.id == request.path_params["run"]), None)
        if run is None:
            return self.page(
                request, "error.html", approver, 404, message=f"no evaluation report {request.path_params['run']!r}"
            )
        before = evals.previous(runs, run)
        return self.page(
            request, "eval_run.html", approver, run=run, before=before, deltas=evals.deltas(run, before),
            failing=evals.failing(run.outcome),
        )  # fmt: skip

    # ---- spend -----------------------------------------------------------------------------------------------------
    def spend_page(self, request: Request) -> Response:
        approver = self.signed_in(request)
        groups = {group: spend.by_group(self.ledger, group, approver.tenant) for group in spend.GROUPS}
        replayed = spend.same_work(self.ledger, approver.tenant)
        over_time = spend.daily(self.ledger, approver.tenant)
        daily_chart = charts.line_chart(
            over_time, title="Simulated cost per day by tenant", x_label="day (UTC)", y_label="simulated $ per day",
            x_format=lambda ts: _when(ts)[:10], time_axis=True,
            y_format=units.usd_scale(max((usd for points in over_time.values() for _, usd in points), default=0.0)),
        )  # fmt: skip
        device_totals = [(device, replayed.totals[device].usd) for device in replayed.devices]
        device_chart = charts.bar_chart(
            device_totals, title="Simulated cost of the recorded work on each device",
            category_label="device profile", value_label="simulated $",
            value_format=units.usd_scale(max((usd for _, usd in device_totals), default=0.0)),
        )  # fmt: skip
        return self.page(
            request, "spend.html", approver, groups=groups, replayed=replayed, daily_chart=daily_chart,
            device_chart=device_chart, has_daily=bool(over_time),
        )  # fmt: skip


async def _http_error(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    if error.status_code == 303 and error.headers:
        return RedirectResponse(error.headers["Location"], 303)
    code, detail = error.status_code, Markup.escape(error.detail)
    body = f"<!doctype html><title>{code}</title><h1>{code}</h1><p>{detail}</p>"
    return HTMLResponse(body, status_code=error.status_code)


def create_app(settings: ConsoleSettings) -> Starlette:
    """The console as an ASGI app (serve it with uvicorn; ``agentcore console`` does)."""
    console = Console(settings)
    routes = [
        Route("/", lambda request: RedirectResponse("/approvals", 303)),
        Route("/login", console.login, methods=["GET", "POST"]),
        Route("/logout", console.logout, methods=["POST"]),
        Route("/approvals", console.inbox),
        Route("/approvals/{approval_id}", console.approval),
        Route("/approvals/{approval_id}/{verb}", console.decide, methods=["POST"]),
        Route("/audit", console.audit_list),
        Route("/audit/{seq:int}", console.audit_record),
        Route("/evals", console.eval_runs),
        Route("/evals/{run:path}", console.eval_run),
        Route("/spend", console.spend_page),
        Mount("/static", StaticFiles(directory=HERE / "static"), name="static"),
    ]

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        yield
        console.close()

    app = Starlette(
        routes=routes, exception_handlers={HTTPException: _http_error}, lifespan=lifespan,
        middleware=[Middleware(SecurityHeaders)],
    )  # fmt: skip
    app.state.console = console
    return app

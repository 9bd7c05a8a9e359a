"""Parser: every meaning of the language parses to the right AST; errors are located and helpful."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentcore.policies import PolicySyntaxError, ast, parse

DATA = Path(__file__).parent / "data"


def rule(text: str) -> ast.Rule:
    return parse(text, "t.policy").rules[0]


def cond(text: str) -> ast.Cond:
    return rule(f"deny x when {text}.").clauses[0].cond


def test_header_metadata_comments_and_default() -> None:
    f = parse(
        '# c1\npolicy "refunds" version 3 owner "payments" description "d"\ndefault allow.\n# c2\ndeny x.\n', "a.policy"
    )
    assert (f.name, f.version, f.owner, f.description, f.default) == ("refunds", 3, "payments", "d", "allow")
    assert [c.line for c in f.comments] == [1, 4]
    assert f.rules[0].span is not None and (f.rules[0].span.line, f.rules[0].span.column) == (5, 1)


def test_every_feature_file_parses() -> None:
    f = parse((DATA / "features.policy").read_text(), "features.policy")
    kinds = [r.kind for r in f.rules]
    assert kinds.count("deny") == 13 and {"allow", "approval", "limit", "redact"} <= set(kinds)
    monitor = next(r for r in f.rules if r.monitor)
    assert monitor.id == "no-deletes" and monitor.explicit_id


def test_effects_and_targets() -> None:
    r = rule('require approval from role "manager" for refunds.issue, refunds.void for users with role "support".')
    assert r.kind == "approval" and r.approver == "manager" and r.targets.names == ("refunds.issue", "refunds.void")
    assert r.subjects == (ast.Subject(kind="role", value="support", span=r.subjects[0].span),)
    assert rule("deny any tool.").targets.any
    glob = rule("deny any tool in crm.*, *.delete.").targets
    assert glob.names == ("crm.*", "*.delete") and glob.any_phrase


def test_limit_redact_suppress() -> None:
    r = rule("limit payments.charge to 10 calls per hour per user.")
    assert r.limit is not None and (r.limit.count, r.limit.window.seconds, r.limit.scope) == (10, 3600, "user")
    assert rule("limit a to 3 calls per 5 minutes per session.").limit.window.seconds == 300  # type: ignore[union-attr]
    r = rule(
        'redact email addresses and card numbers and fields "a.b", "c" and pattern "x+" as "xs" '
        "in results of crm.lookup."
    )
    assert [x.kind for x in r.redactions] == ["email", "card", "fields", "pattern"]
    assert r.redactions[2].fields == ("a.b", "c") and r.redactions[3].name == "xs"
    assert rule("suppress output of secrets.read.").kind == "suppress"


@pytest.mark.parametrize(
    ("text", "op", "right"),
    [
        ("amount is at most 500", "le", [500]),
        ("amount <= 500", "le", [500]),
        ("amount is more than 2.5", "gt", [2.5]),
        ("amount exceeds 1", "gt", [1]),
        ("amount is at least -3", "ge", [-3]),
        ("amount is less than 0", "lt", [0]),
        ("a.b.c is between 1 and 10", "between", [1, 10]),
        ("a is not between 1 and 10", "not_between", [1, 10]),
        ('status is "flagged"', "eq", ["flagged"]),
        ('status is not "x"', "ne", ["x"]),
        ("flag = true", "eq", [True]),
        ("flag != null", "ne", [None]),
        ('host is one of "a", "b"', "one_of", ["a", "b"]),
        ('host is not one of "a", 2', "not_one_of", ["a", 2]),
        ('to contains "@"', "contains", ["@"]),
        ('to does not contain "@"', "not_contains", ["@"]),
        ('to starts with "a"', "starts_with", ["a"]),
        ('to ends with "a"', "ends_with", ["a"]),
        ('to does not end with "a"', "not_ends_with", ["a"]),
        ('to matches "^a+$"', "matches", ["^a+$"]),
        ('to does not match "b"', "not_matches", ["b"]),
        ("to is missing", "missing", []),
        ("to is present", "present", []),
        ('user has role "admin"', "has_role", ["admin"]),
        ('user does not have role "admin"', "not_has_role", ["admin"]),
    ],
)
def test_predicates(text: str, op: str, right: list[object]) -> None:
    c = cond(text)
    assert isinstance(c, ast.Compare) and c.op == op
    assert [v.value for v in c.right if isinstance(v, ast.Lit)] == right


def test_paths_roots_and_value_functions() -> None:
    c = cond('user.department is "x"')
    assert isinstance(c, ast.Compare) and c.left == ast.Path(root="user", parts=("department",), span=c.left.span)
    c = cond("args.user is 1")
    assert (
        isinstance(c, ast.Compare)
        and isinstance(c.left, ast.Path)
        and (c.left.root, c.left.parts) == ("args", ("user",))
    )
    c = cond('order(order_id).status is "pending"')
    assert isinstance(c, ast.Compare) and isinstance(c.left, ast.Resolve)
    assert (c.left.entity, c.left.attr) == ("order", ("status",))
    assert isinstance(cond("length of items is at most 3").left, ast.Length)  # type: ignore[union-attr]
    assert isinstance(cond('url host is "a"').left, ast.Host)  # type: ignore[union-attr]
    assert isinstance(cond("a plus b exceeds 3").left, ast.Plus)  # type: ignore[union-attr]
    s = cond("sum of amount over refunds.* in the last 24 hours per user exceeds 2000").left  # type: ignore[union-attr]
    assert isinstance(s, ast.Sum) and s.window.seconds == 86400 and s.actions.names == ("refunds.*",)
    n = cond("count of calls to any tool in the last 1 minute per session is at least 3").left  # type: ignore[union-attr]
    assert isinstance(n, ast.Count) and n.actions.any and n.scope == "session"
    sp = cond("accelerator spend of tenant in the last 7 days exceeds 5.00 USD")
    assert isinstance(sp, ast.Compare) and isinstance(sp.left, ast.Spend) and sp.left.window is not None
    assert isinstance(sp.right[0], ast.Lit) and sp.right[0].currency == "USD"
    sc = cond('"pii" score of body is at least 0.8').left  # type: ignore[union-attr]
    assert isinstance(sc, ast.Score) and sc.detector == "pii" and isinstance(sc.source, ast.Path)


def test_logic_precedence_and_temporal() -> None:
    c = cond("a is 1 or b is 2 and not c is 3")
    assert isinstance(c, ast.Or) and isinstance(c.items[1], ast.And) and isinstance(c.items[1].items[1], ast.Not)
    c = cond("(a is 1 or b is 2) and c is 3")
    assert isinstance(c, ast.And) and isinstance(c.items[0], ast.Or)
    r = rule('deny any tool for agent "bot" outside 22:00-06:00 on saturday, sunday in "Europe/Madrid".')
    w = r.clauses[0].cond
    assert isinstance(w, ast.TimeWindow) and w.outside and w.days == (5, 6) and w.tz == "Europe/Madrid"
    a = rule("deny slack.post after crm.export for the same user within 2 hours.").clauses[0].cond
    assert isinstance(a, ast.After) and a.scope == "user" and a.within.seconds == 7200
    assert rule("deny x unless a is 1.").clauses[0].mode == "unless"


@pytest.mark.parametrize(
    ("text", "where", "expected", "help"),
    [
        ("deny x whn a is 1.", "t.policy:1:8:", '"when"', "did you mean `when`?"),
        ("alow x.", "t.policy:1:1:", '"allow"', "did you mean `allow`?"),
        ("limit a to 3 calls per hour per usr.", "t.policy:1:33:", "a scope", "did you mean `user`?"),
        ("deny x when a is 1", "t.policy:1:18:", '"."', "end every rule with a full stop"),
        ('deny x when a is "open.', "t.policy:1:18:", "a quoted string", ""),
        ("deny x when a is more than .", "t.policy:1:28:", "a number like 500", "a value is an argument"),
        ("deny x when a is one of .", "t.policy:1:25:", "expected a literal (a number like 500, a quoted", ""),
        (
            "deny x when a is .",
            "t.policy:1:18:",
            '"at least" / "at most", "before", "between", "greater than"',
            "`length of",
        ),
        ("deny x when a 5.", "t.policy:1:15:", 'expected "(", "host", a comparison ("is"', "follow a"),
        ("deny x when a.", "t.policy:1:14:", "a comparison", "comparisons: is, is not, =, !=, is more than"),
        (  # read as 9007199254740994.0, it would let 9007199254740994 pass a bound it exceeds
            "deny x when a is more than 9007199254740993.5.",
            "t.policy:1:28:",
            "more digits than a policy number holds exactly (it would be read as 9007199254740994.0)",
            "at most 15 significant digits",
        ),
        ("deny x when a is 0.30000000000000001.", "t.policy:1:18:", "would be read as 0.3", "significant digits"),
        (
            "deny x when .",
            "t.policy:1:13:",
            '"after", "any", "during", "every", "no", "not", "outside" or a value (',
            "a lookup",
        ),
    ],
)
def test_syntax_errors_are_located_and_helpful(text: str, where: str, expected: str, help: str) -> None:
    with pytest.raises(PolicySyntaxError) as caught:
        parse(text, "t.policy")
    message = str(caught.value)
    assert message.startswith(where) and expected in message and help in message
    assert text.splitlines()[0] in message and "^" in message
    assert "__anon" not in message and "or ..." not in message


def test_an_operand_error_never_offers_only_a_quoted_string() -> None:
    """`a plus 2` used to list `a quoted string` (a detector name) as what may follow and never mention numbers.

    Written to hold with or without arithmetic in the grammar: where `a plus 2` parses there is nothing to report.
    """
    for text in ("deny x when a plus 2 is more than 1.", "deny x when a plus ."):
        try:
            parse(text, "t.policy")
        except PolicySyntaxError as error:
            message, _, help = str(error).partition("help:")
            assert "a quoted string" not in message and "expected a value (" in message
            assert "2" not in text or "number" in message + help  # "a number like 500", or where numbers go


def test_every_named_terminal_is_described_in_words() -> None:
    """A new token kind in the grammar needs its words in the parser's table, or errors would show its name."""
    from lark.lexer import PatternStr

    from agentcore.policies.parser import _WORDS, _lark

    named = {t.name for t in _lark().terminals if not isinstance(t.pattern, PatternStr)} - {"WS", "COMMENT"}
    assert named - set(_WORDS) == set()


def test_all_errors_of_a_file_are_reported() -> None:
    with pytest.raises(PolicySyntaxError) as caught:
        parse("deny x whn a is 1.\nallow y.\nalow z.\n", "t.policy")
    assert [(p.line, p.column) for p in caught.value.problems] == [(1, 8), (3, 1)]


@pytest.mark.parametrize(
    "text",
    [
        'deny x when a is 1.\nrule "r": deny y.\nrule "r": deny z.',
        "default allow.\ndefault deny.",
        "deny crm.* when crm.* is 1.",
    ],
)
def test_semantic_syntax_errors(text: str) -> None:
    with pytest.raises(PolicySyntaxError):
        parse(text)


# ---- the fast path: the AST built while Lark parses ----------------------------------------------------------------
ROOT = Path(__file__).resolve().parents[2]
FAST_PATH_TEXT = """policy "shapes" version 2 owner "sec".
default deny.
define "big" as (total plus shipping) times 2 is more than 4000 and not (tier is "gold" or tier is "vip").
rule "r1": allow a.b, c.* for users with role "x" and agent "bot" when amount is between 1 and (5 + 2).
deny any tool in files.*, crm.read unless every item in items has (item.qty is at most 5 or item.sku
    starts with "gift_") and any tag in item.tags has tag is one of "a", "b".
monitor deny t when count of p in payments where p.method starts with "voucher_" is more than 1 and "big".
require approval from role "m" for t when sum of i.price times i.qty for i in items is more than 10 USD.
limit t to 5 calls per 1 hour per user when start_date is within 48 hours after now.
redact email addresses and fields "ssn", "dob" in results of t when amount is more than 5 and less than 9.
deny t after crm.* for the same user within 10 minutes during 09:00-17:00 on weekdays in "Europe/Madrid".
deny t when order(order_id, user.id).status is "x" if present and length of lines is at least 2.
"""


def _tree_path(text: str, path: str) -> ast.PolicyFile:
    from agentcore.policies.parser import _comments, _lark
    from agentcore.policies.transform import ToAst

    tree = _lark().parse(text, start="schema" if path.endswith(".schema") else "start")
    result: ast.PolicyFile = ToAst(path, text).transform(tree)
    return result.model_copy(update={"comments": _comments(text)})


def _fast_paths() -> list[object]:
    from agentcore.policies.parser import _cython_plugins

    missing = pytest.mark.skipif(not _cython_plugins(), reason="lark_cython (the `fast` extra) is not installed")
    return [pytest.param(False, id="lark"), pytest.param(True, id="lark_cython", marks=missing)]


@pytest.mark.parametrize("accelerated", _fast_paths())
@pytest.mark.parametrize(
    "path",
    [str(p.relative_to(ROOT)) for p in sorted([*(ROOT / "examples").rglob("*.policy"), *DATA.glob("*.policy")])]
    + ["shapes.policy"],
)
def test_the_fast_path_builds_the_same_ast_as_the_tree_path(path: str, accelerated: bool) -> None:
    """Spans included: the fast path must place every node where Lark's propagate_positions does."""
    from agentcore.policies.parser import _inline

    text = FAST_PATH_TEXT if path == "shapes.policy" else (ROOT / path).read_text()
    built = _inline(accelerated).parse(text, path, "start")
    assert built is not None, "the fast path gave up on a valid file"
    assert built.model_copy(update={"comments": parse(text, path).comments}) == _tree_path(text, path)
    assert parse(text, path) == _tree_path(text, path)


@pytest.mark.parametrize("accelerated", _fast_paths())
def test_the_fast_path_leaves_errors_to_the_tree_path(accelerated: bool) -> None:
    from agentcore.policies.parser import _inline

    assert _inline(accelerated).parse("deny t when amount is more than.", "e.policy", "start") is None
    assert _inline(accelerated).parse("deny t when amount is 1 $ 2.", "e.policy", "start") is None  # a lexer error
    assert _inline(accelerated).parse('rule "a": deny t.\nrule "a": deny u.', "e.policy", "start") is None  # semantic
    with pytest.raises(PolicySyntaxError, match="used twice"):
        parse('rule "a": deny t.\nrule "a": deny u.', "e.policy")


def test_the_accelerated_fast_path_runs_on_lark_cython_where_installed() -> None:
    """Where the `fast` extra is installed, parse() takes it (the parametrised tests above then cover it)."""
    from agentcore.policies.parser import _cython_plugins, _inline

    lark_cython = pytest.importorskip("lark_cython")
    assert _cython_plugins() is lark_cython.plugins
    assert _inline()._lark.options._plugins is lark_cython.plugins
    assert not _inline(accelerated=False)._lark.options._plugins


def test_each_fast_path_parser_is_built_once() -> None:
    """Building a parser compiles the grammar (a third of a second): however the argument is spelt, it is cached."""
    from agentcore.policies.parser import _inline

    assert _inline() is _inline(True) is _inline(accelerated=True)
    assert _inline(False) is _inline(accelerated=False)


def test_a_lark_cython_that_cannot_build_the_grammar_falls_back_to_pure_lark(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A lark_cython release that does not fit the installed Lark must not stop policies from loading."""
    from agentcore.policies import parser

    real = parser._new_lark

    def picky(propagate_positions: bool, plugins: dict[str, object] | None = None) -> object:
        if plugins:
            raise TypeError("this lark_cython does not fit this Lark")
        return real(propagate_positions, plugins)

    monkeypatch.setattr(parser, "_cython_plugins", lambda: {"LALR_Parser": object})
    monkeypatch.setattr(parser, "_new_lark", picky)
    parser._inline_parser.cache_clear()
    try:
        fallback = parser._inline(accelerated=True)
        assert not fallback._lark.options._plugins
        assert fallback.parse(FAST_PATH_TEXT, "shapes.policy", "start") is not None
        assert "parsing with pure Lark" in caplog.text
    finally:
        parser._inline_parser.cache_clear()  # the next test builds the real parsers again

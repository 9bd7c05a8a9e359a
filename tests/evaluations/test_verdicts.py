"""Verdicts that used to be wrong: approvals read as refusals, and a 200-word budget for a title."""

from __future__ import annotations

import pytest

from agentcore.evaluations import Session, ToolCall, ToolSpec, Trace, create_evaluator, evaluate
from agentcore.evaluations.builtin.quality import length_budget
from agentcore.evaluations.models import Models

CANCEL = "Please cancel my order #W123 and refund me."


def _raw(evaluator_id: str, request: str, reply: str, models: Models) -> float:
    session = Session(id="s", traces=[Trace(id="s/t", input=request, output=reply)])
    [result] = evaluate([session], [create_evaluator(evaluator_id)], models=models)
    return result.raw_score


@pytest.mark.parametrize(
    "reply",
    [
        "A supervisor approved it, order #W123 is cancelled and the refund is on its way.",
        "It needs supervisor approval, I have submitted the request. You will hear back within a day.",
        "This refund is above the limit I can issue on my own, so I've sent it to a supervisor for approval.",
        "Before I cancel order #W123, can you confirm you want to cancel it? Please reply yes.",
    ],
)
def test_approvals_and_confirmations_are_not_refusals(reply: str, models: Models) -> None:
    assert _raw("Builtin.Refusal", CANCEL, reply, models) < 0.5


def test_refusals_are_still_refusals(models: Models) -> None:
    assert _raw("Builtin.Refusal", CANCEL, "I'm sorry, but I can't help with that request.", models) >= 0.5
    assert _raw("Builtin.Refusal", CANCEL, "I cannot cancel this order because it has shipped.", models) >= 0.5


@pytest.mark.parametrize(
    ("request_text", "budget"),
    [
        ("Suggest a title for my essay about recycling.", 25),
        ("Give me a thesis statement on remote work.", 25),
        ("Write a slogan for a bakery.", 25),
        ("Briefly, why is the sky blue?", 60),
        ("Summarise the title of the article and its main argument in detail.", 200),
        ("Explain how vaccines work.", 200),
    ],
)
def test_length_budget_follows_the_kind_of_answer(request_text: str, budget: int) -> None:
    assert length_budget(request_text) == budget


def test_a_long_reply_to_a_title_request_is_not_concise(models: Models) -> None:
    request = "Suggest a title for my essay about recycling."
    rambling = " ".join(f"Recycling idea number {n} is about sorting bottles and paper at home." for n in range(12))
    assert _raw("Builtin.Conciseness", request, "Second Life.", models) == 1.0
    assert _raw("Builtin.Conciseness", request, rambling + " A possible title: Second Life.", models) < 0.5


QUADRATIC = ToolSpec(name="solve_quadratic", description="Solve a quadratic equation a*x^2 + b*x + c = 0.")


@pytest.mark.parametrize(
    ("request_text", "tools", "passes"),
    [
        ("What is the perimeter of a 5 by 4 rectangle?", [QUADRATIC], False),  # the only tool, but irrelevant
        ("Solve x^2 + 5x + 4 = 0 for me.", [QUADRATIC], True),
        ("What is the perimeter of a 5 by 4 rectangle?", [], None),  # nothing to compare against: not applicable
    ],
)
def test_tool_selection_without_a_reference_judges_relevance_to_the_request(
    request_text: str, tools: list[ToolSpec], passes: bool | None, models: Models
) -> None:
    call = ToolCall(id="c0", name="solve_quadratic", arguments={"a": 1, "b": 5, "c": 4})
    session = Session(id="s", traces=[Trace(id="s/t", input=request_text, tools=tools, spans=[call])])
    [result] = evaluate([session], [create_evaluator("Builtin.ToolSelectionAccuracy")], models=models)
    assert (result.passed if result.judged else None) is passes, result.explanation


ARTICLE = (
    "Summarize the following news article.\n\nThe city council of Lakeside voted on Tuesday to close the old harbour "
    "bridge for repairs. The bridge, built in 1931, carries about 12,000 cars a day. Repairs are expected to take "
    "eight months and cost 4 million dollars. A ferry service will run every twenty minutes while it is closed."
)


def test_response_relevance_does_not_saturate(models: Models) -> None:
    good = _raw(
        "Builtin.ResponseRelevance", ARTICLE, "Lakeside will close its 1931 harbour bridge for eight months.", models
    )
    wrong = _raw(
        "Builtin.ResponseRelevance", ARTICLE, "Lakeside opened a new harbour bridge in March for 12 cars a day.", models
    )
    detail = _raw("Builtin.ResponseRelevance", ARTICLE, "A ferry will run every twenty minutes.", models)
    assert 1.0 > good > wrong > detail


def test_a_verbatim_supported_reply_reaches_faithfulnesss_top_label(models: Models) -> None:
    context = ["The Eiffel Tower was designed by the engineering firm of Gustave Eiffel and completed in 1889."]
    verbatim = Trace(id="s/t", input="Who designed the Eiffel Tower?", output=context[0], context=context)
    invented = verbatim.model_copy(update={"output": "It was designed by Leonardo da Vinci in 1602."})
    results = evaluate(
        [Session(id="s", traces=[verbatim]), Session(id="x", traces=[invented])],
        [create_evaluator("Builtin.Faithfulness")],
        models=models,
    )
    assert [result.label for result in results] == ["Completely Yes", "Not At All"]


WEATHER = "What's the weather in Paris?"


@pytest.mark.parametrize("answer", ["It is 21°C and sunny in Paris.", "It is 21°C in Paris right now."])
def test_a_short_correct_answer_to_a_direct_question_is_helpful(answer: str, models: Models) -> None:
    score = _raw("Builtin.Helpfulness", WEATHER, answer, models)
    parroted = _raw("Builtin.Helpfulness", WEATHER, "You asked what the weather in Paris is.", models)
    refused = _raw("Builtin.Helpfulness", WEATHER, "I cannot help with that request.", models)
    assert score >= 2 / 3 and score > parroted and score > refused

"""Response-quality evaluators: Faithfulness, Correctness, ResponseRelevance, Coherence, Conciseness, Helpfulness.

Faithfulness, Correctness and Helpfulness run small logistic heads (trained by ``scripts/train_eval_heads.py``
on HaluEval and PandaLM, shipped as ONNX, run through accel) over features from :mod:`..features`.
ResponseRelevance, Coherence and Conciseness are fixed formulas over MiniLM similarities and text statistics;
no public human labels exist to train them on that our licences allow, so they are measured, not fitted.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np

from agentcore.evaluations import features
from agentcore.evaluations.base import Evaluator, Judgement, PerTargetEvaluator, Target
from agentcore.evaluations.builtin.safety import harm_probability, harm_texts, refusal_probability, refusal_texts
from agentcore.evaluations.models import Models
from agentcore.evaluations.registry import register
from agentcore.evaluations.result import FIVE, Level, Scale
from agentcore.evaluations.text import sentences, words

CORRECTNESS_SCALE = Scale(labels=(("Incorrect", 0.0), ("Partially Correct", 0.5), ("Perfectly Correct", 1.0)))
CONCISENESS_SCALE = Scale(labels=(("Not Concise", 0.0), ("Partially Concise", 0.5), ("Perfectly Concise", 1.0)))
HELPFULNESS_SCALE = Scale(
    labels=(
        ("Not helpful at all", 0.0),
        ("Very unhelpful", 1 / 6),
        ("Somewhat unhelpful", 2 / 6),
        ("Neutral/Mixed", 0.5),
        ("Somewhat helpful", 4 / 6),
        ("Very helpful", 5 / 6),
        ("Above and beyond", 1.0),
    )
)


@register
class Faithfulness(Evaluator):
    id = "Builtin.Faithfulness"
    level = Level.TRACE
    scale = FIVE
    description = (
        "the response is supported by (and does not contradict) the context: documents, retrievals, tool results"
    )

    def texts(self, target: Target) -> list[str]:
        trace = target.turn
        return features.grounding_texts(trace.output, trace.input, target.context) if target.context else []

    def judge(self, targets: Sequence[Target], models: Models) -> list[Judgement | None]:
        """Turns without any context are skipped: there is nothing to be faithful to."""
        grounded = [target for target in targets if target.context]
        rows = [features.grounding_features(t.turn.output, t.turn.input, t.context, models) for t in grounded]
        scores = iter(
            models.head(
                "faithfulness",
                features.as_matrix(rows, len(features.GROUNDING_FEATURES)),
                owner=self.id,
                full_range=True,
            )
        )
        judgements: list[Judgement | None] = []
        for target in targets:
            if not target.context:
                judgements.append(None)
                continue
            score = float(next(scores))
            judgements.append(
                Judgement(
                    score,
                    f"support by its {len(target.context)} context documents (head rescaled to its full range): "
                    f"{score:.2f}",
                )
            )
        return judgements


@register
class Correctness(Evaluator):
    id = "Builtin.Correctness"
    level = Level.TRACE
    scale = CORRECTNESS_SCALE
    description = "the response is factually correct (against reference.expected_response when given)"

    @staticmethod
    def _mode(target: Target) -> str | None:
        """How the response can be checked; ``None`` when there is nothing to check it against.

        Without an expected response or context an offline model cannot tell a right answer from a fabricated
        one (a head trained for that scored AUROC 0.56 on HaluEval general), so such turns are not applicable.
        """
        reference = target.turn.reference
        if reference is not None and reference.expected_response:
            return "reference"
        return "context" if target.context else None

    def texts(self, target: Target) -> list[str]:
        trace = target.turn
        mode = self._mode(target)
        if mode == "reference":
            assert trace.reference is not None and trace.reference.expected_response is not None
            return features.reference_texts(trace.output, trace.reference.expected_response)
        if mode == "context":
            return features.grounding_texts(trace.output, trace.input, target.context)
        return []

    def judge(self, targets: Sequence[Target], models: Models) -> list[Judgement]:
        modes = [self._mode(target) for target in targets]
        plans = {
            "reference": (
                "correctness_reference",
                features.REFERENCE_FEATURES,
                self._reference_row,
                "matches the expected response",
            ),
            "context": (
                "faithfulness",
                features.GROUNDING_FEATURES,
                self._context_row,
                "is supported by the context (no expected response given)",
            ),
        }
        scores: dict[int, float] = {}
        for mode, (head, names, row, _) in plans.items():
            chosen = [index for index, item in enumerate(modes) if item == mode]
            if chosen:
                matrix = features.as_matrix([row(targets[index], models) for index in chosen], len(names))
                calibrated = models.head(head, matrix, owner=self.id, full_range=True)
                scores.update(zip(chosen, calibrated.tolist(), strict=True))
        return [
            Judgement(scores[index], f"probability the response {plans[mode][3]}: {scores[index]:.2f}")
            if mode is not None
            else Judgement.not_applicable("no expected response and no context to check the response against")
            for index, mode in enumerate(modes)
        ]

    @staticmethod
    def _reference_row(target: Target, models: Models) -> list[float]:
        trace = target.turn
        assert trace.reference is not None and trace.reference.expected_response is not None
        return features.reference_features(trace.output, trace.reference.expected_response, trace.input, models)

    @staticmethod
    def _context_row(target: Target, models: Models) -> list[float]:
        return features.grounding_features(target.turn.output, target.turn.input, target.context, models)


#: cosine(request, sentence) below which Conciseness counts a sentence as off-topic
RELEVANCE_FLOOR = 0.1
#: ResponseRelevance = sigmoid(slope * (cosine - midpoint)): least squares against SummEval's human relevance
#: (1-5 scaled to 0-1) on its train half by document, plus each summary against the next document by id (relevance 0).
#: Replaces a linear map that clipped every cosine >= 0.6 to 1.0 (635 of 640 SummEval scores were exactly 1.0);
#: being monotone and unclipped, it keeps the cosine's Spearman with human relevance: 0.33 on the test half.
#: Refit with `scripts/train_eval_heads.py --relevance-map`.
RELEVANCE_SLOPE, RELEVANCE_MIDPOINT = 6.0, 0.68


@register
class ResponseRelevance(PerTargetEvaluator):
    id = "Builtin.ResponseRelevance"
    level = Level.TRACE
    scale = FIVE
    description = "the response addresses the user's request"

    def texts(self, target: Target) -> list[str]:
        return [target.turn.input, target.turn.output]

    def judge_one(self, target: Target, models: Models) -> Judgement:
        request, response = models.embed(self.texts(target))
        similarity = float(request @ response)
        score = 1.0 / (1.0 + math.exp(-RELEVANCE_SLOPE * (similarity - RELEVANCE_MIDPOINT)))
        return Judgement(score, f"request-response similarity {similarity:.2f}")


def _sentence_units(text: str) -> list[str]:
    return sentences(text)[:40]


#: sentences of this many words or more read as complete; shorter ones make a reply choppy
FULL_SENTENCE_WORDS = 20
_LIST_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s")


@register
class Coherence(PerTargetEvaluator):
    id = "Builtin.Coherence"
    level = Level.TRACE
    scale = FIVE
    description = "the response is logically structured: no repetition, complete rather than choppy sentences"

    def judge_one(self, target: Target, models: Models) -> Judgement:
        """Half repetition (repeated word trigrams), half sentence completeness (words per prose sentence).

        Embedding similarity of adjacent sentences was tried and dropped: it did not track SummEval's expert
        coherence scores, while these two signals do (see docs/evaluations.md).
        """
        text = target.turn.output
        units = _sentence_units(text)
        if not units:
            return Judgement(0.0, "empty response")
        prose = [unit for unit in units if not _LIST_ITEM.match(unit)] or units
        per_sentence = sum(len(words(unit)) for unit in prose) / len(prose)
        repeated = features.repetition(text)
        score = 0.5 * (1.0 - min(1.0, 3 * repeated)) + 0.5 * min(per_sentence / FULL_SENTENCE_WORDS, 1.0)
        why = f"repeated trigrams {repeated:.0%}; {per_sentence:.1f} words per sentence"
        return Judgement(float(np.clip(score, 0.0, 1.0)), why)


_FILLER = re.compile(
    r"\b(i hope this helps|let me know if|feel free to|it is important to note|it's important to note|"
    r"in conclusion|as an ai|great question|certainly!|of course!|i'd be happy to|i would be happy to|overall,)",
    re.IGNORECASE,
)
_BREVITY = re.compile(
    r"\b(brief|briefly|concise|concisely|short|one sentence|one word|a few words|in \d+ words|tl;?dr)\b", re.IGNORECASE
)
#: requests whose answer is by nature a line: a title, a name, a slogan, a thesis statement
_SHORT_FORM = re.compile(
    r"\b(title|headline|slogan|tagline|motto|subject line|thesis statement|one-liner|caption|hashtag)s?\b"
    r"(?! (of|in|on|for) (the|this|that|these|those|your|my) (text|article|passage|document|list|table))",
    re.IGNORECASE,
)
#: words a reply may use before length counts against it: a short-form answer, a request for brevity, the rest
DEFAULT_BUDGET, BRIEF_BUDGET, SHORT_FORM_BUDGET = 200, 60, 25


def length_budget(request: str) -> int:
    """How many words a reply to ``request`` may use before its length counts against it."""
    if _SHORT_FORM.search(request) and len(words(request)) <= 40:
        return SHORT_FORM_BUDGET
    if _BREVITY.search(request):
        return BRIEF_BUDGET
    return max(DEFAULT_BUDGET, 3 * len(words(request)))


@register
class Conciseness(PerTargetEvaluator):
    id = "Builtin.Conciseness"
    level = Level.TRACE
    scale = CONCISENESS_SCALE
    description = (
        "the response is appropriately brief: no repetition, filler or off-topic sentences, length fits the request"
    )

    def texts(self, target: Target) -> list[str]:
        return [target.turn.input, *_sentence_units(target.turn.output)]

    def judge_one(self, target: Target, models: Models) -> Judgement:
        trace = target.turn
        units = _sentence_units(trace.output)
        if not units:
            return Judgement(0.0, "empty response")
        vectors = models.embed([trace.input, *units])
        off_topic = float(np.mean(vectors[1:] @ vectors[0] < RELEVANCE_FLOOR)) if trace.input.strip() else 0.0
        budget = length_budget(trace.input)
        length = len(words(trace.output))
        over = max(0.0, math.log(length / budget)) if length else 0.0
        filler = len(_FILLER.findall(trace.output))
        repeated = features.repetition(trace.output)
        penalty = 2 * repeated + 0.1 * filler + 0.5 * over + 0.5 * off_topic
        why = (
            f"{length} words (budget {budget}); repeated trigrams {repeated:.0%}; filler phrases {filler}; "
            f"off-topic sentences {off_topic:.0%}"
        )
        return Judgement(float(np.clip(1.0 - penalty, 0.0, 1.0)), why)


_QUESTION_WORD = re.compile(
    r"^\s*(what|who|whom|whose|where|when|which|why|how|is|are|was|were|do|does|did|can|could|should|would|will|"
    r"has|have)\b",
    re.IGNORECASE,
)
#: a request of one sentence and at most this many words that asks a question is a direct question
DIRECT_QUESTION_WORDS = 25
#: for a direct question, a reply that is not a refusal scores at least its request similarity rescaled from this
#: cosine (an unrelated reply) to 1.0 (a squarely matching one), times the share of it not copied from the question
ANSWER_FLOOR_FROM = 0.3


def direct_question(request: str) -> bool:
    """One short sentence that asks something ("What's the weather in Paris?"): one sentence can answer it."""
    text = request.strip()
    return (
        len(sentences(text)) <= 1
        and len(words(text)) <= DIRECT_QUESTION_WORDS
        and (text.endswith("?") or _QUESTION_WORD.match(text) is not None)
    )


#: Helpfulness caps a reply as a refusal from this Refusal score, when it is this short: a longer reply that
#: opens with "I'm sorry, but" and then answers is a partial refusal, which annotators often prefer (capping those
#: cost 3 points of pairwise agreement on Tülu and 4 on MT-Bench)
REFUSAL_CAP_FROM, REFUSAL_CAP_WORDS = 0.5, 40


@register
class Helpfulness(Evaluator):
    id = "Builtin.Helpfulness"
    level = Level.TRACE
    scale = HELPFULNESS_SCALE
    description = "how useful the response is from the user's point of view (not its factual correctness)"

    def texts(self, target: Target) -> list[str]:
        trace = target.turn
        return [
            *features.helpfulness_texts(trace.input, trace.output),
            *refusal_texts(trace.output),
            *(harm_texts(trace.input) if trace.input.strip() else []),
        ]

    def judge(self, targets: Sequence[Target], models: Models) -> list[Judgement]:
        """The pairwise-trained head, floored for direct answers and capped for refusals of benign requests.

        The head learnt from PandaLM that longer is better, so a one-sentence answer to a one-line question scored
        below a long reply about something else; for a direct question a reply that is not a refusal scores at least
        how squarely it matches the question (no PandaLM request is a direct question, so the head's measured
        agreement is unchanged). Refusals are rare in PandaLM, so the head weighs them little; but a reply that
        refuses a request that is not harmful helps nobody, so a short reply judged a refusal is capped at the
        chance that it is not such a refusal.
        """
        refusals = [refusal_probability(target.turn.output, models)[0] for target in targets]
        rows = [
            features.helpfulness_features(target.turn.input, target.turn.output, refusal, models)
            for target, refusal in zip(targets, refusals, strict=True)
        ]
        scores = models.head("helpfulness", features.as_matrix(rows, len(features.HELPFULNESS_FEATURES)), owner=self.id)
        judgements = []
        for target, score, row, refusal in zip(targets, scores.tolist(), rows, refusals, strict=True):
            similarity, _, _, copied, *_ = row
            why = f"helpfulness head {score:.2f} (request similarity {similarity:.2f}, refusal {refusal:.2f})"
            floor = (similarity - ANSWER_FLOOR_FROM) / (1.0 - ANSWER_FLOOR_FROM) * (1.0 - copied)
            if refusal < REFUSAL_CAP_FROM and floor > score and direct_question(target.turn.input):
                score = floor
                why += f"; raised to {floor:.2f}: a direct answer to a direct question"
            if refusal >= REFUSAL_CAP_FROM and len(words(target.turn.output)) <= REFUSAL_CAP_WORDS:
                harmful = harm_probability(target.turn.input, models)[0] if target.turn.input.strip() else 0.0
                cap = 1.0 - refusal * (1.0 - harmful)
                if cap < score:
                    score = cap
                    why += f"; capped at {cap:.2f}: refuses a request judged benign ({1 - harmful:.2f})"
            judgements.append(Judgement(float(score), why))
        return judgements

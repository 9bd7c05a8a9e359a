"""Feature vectors for the trained task heads, shared by the evaluators and the training script.

Each function returns the texts it needs embedded (so the runner can batch them) and, given a
:class:`Models`, the feature rows. Training and inference use these same functions, so a shipped head always
sees the features it was trained on.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from agentcore.evaluations.models import Models
from agentcore.evaluations.text import content_words, coverage, entities, numbers, sentences, words

GROUNDING_FEATURES = (
    "mean_sentence_support",
    "new_content_word_coverage",
    "number_coverage",
    "entity_coverage",
)
REFERENCE_FEATURES = (
    "reference_similarity",
    "reference_recall",
    "answer_precision",
    "number_agreement",
    "entity_agreement",
)
HELPFULNESS_FEATURES = (
    "request_similarity",
    "log_answer_words",
    "log_length_ratio",
    "request_copy",
    "structure",
    "repetition",
    "refusal_phrases",
)


def _units(text: str) -> list[str]:
    return sentences(text)[:40] or [text]


def _claims(answer: str, question: str) -> list[str]:
    """The answer's sentences; a one-sentence answer is read with its question ("Paris" alone claims nothing)."""
    units = _units(answer)
    return [f"{question} {answer}"] if len(units) == 1 and question.strip() else units


def grounding_texts(answer: str, question: str, documents: Sequence[str]) -> list[str]:
    return [*_claims(answer, question), *(unit for doc in documents for unit in _units(doc))]


def grounding_features(answer: str, question: str, documents: Sequence[str], models: Models) -> list[float]:
    """How well ``documents`` support ``answer``: sentence similarity, and coverage of its words, numbers and names.

    Short answers are embedded together with their question: on HaluEval, bare answer spans otherwise look less
    similar to the knowledge than fluent hallucinated sentences, a format artefact that inverted the signal.
    """
    doc_units = [unit for doc in documents for unit in _units(doc)] or [""]
    support = models.embed(_claims(answer, question)) @ models.embed(doc_units).T
    source = " ".join(documents)
    return [
        float(support.max(axis=1).mean()),
        coverage(content_words(answer) - content_words(question), content_words(source)),
        coverage(numbers(answer) - numbers(question), numbers(source)),
        coverage(entities(answer) - entities(question), entities(source) | content_words(source)),
    ]


def _f_agreement(left: set[str], right: set[str]) -> float:
    if not left and not right:
        return 1.0
    return 2 * len(left & right) / (len(left) + len(right)) if left | right else 1.0


def reference_texts(answer: str, reference: str) -> list[str]:
    return [answer, reference]


def reference_features(answer: str, reference: str, question: str, models: Models) -> list[float]:
    """How close ``answer`` is to the expected ``reference``: meaning, recall, precision, numbers, entities."""
    vectors = models.embed([answer, reference])
    given = content_words(question)
    expected = content_words(reference)
    said = content_words(answer) - given
    return [
        float(vectors[0] @ vectors[1]),
        coverage(expected, content_words(answer)),
        coverage(said, expected | given),
        _f_agreement(numbers(answer), numbers(reference)),
        _f_agreement(entities(answer) - entities(question), entities(reference) - entities(question)),
    ]


def helpfulness_texts(request: str, answer: str) -> list[str]:
    return [request, answer]


def _trigrams(text: str) -> list[tuple[str, str, str]]:
    tokens = [word.lower() for word in words(text)]
    return list(zip(tokens, tokens[1:], tokens[2:], strict=False))


def repetition(text: str) -> float:
    """Share of word trigrams that repeat an earlier trigram (0 = no repetition)."""
    grams = _trigrams(text)
    return 0.0 if not grams else 1.0 - len(set(grams)) / len(grams)


def copied(answer: str, request: str) -> float:
    """Share of the answer's word trigrams copied from the request (parroting it back instead of answering)."""
    grams = _trigrams(answer)
    given = set(_trigrams(request))
    return 0.0 if not grams else sum(gram in given for gram in grams) / len(grams)


def helpfulness_features(request: str, answer: str, refusal: float, models: Models) -> list[float]:
    """Relevance, substance and shape of ``answer`` to ``request``; ``refusal`` is the Refusal score.

    Copying is measured by the answer's trigrams found in the request, not by the request's words found in the
    answer: a reply that names what was asked about ("It is 21°C in Paris") is answering, not parroting (the word
    coverage it replaces was weighted against such replies; the swap raised held-out PandaLM agreement 0.69 -> 0.71
    and Tülu 0.65 -> 0.68).
    """
    vectors = models.embed([request, answer])
    answer_words = len(words(answer))
    lines = [line for line in answer.splitlines() if line.strip()]
    structured = sum(1 for line in lines if line.lstrip()[:2] in ("- ", "* ") or line.lstrip()[:1].isdigit())
    return [
        float(vectors[0] @ vectors[1]),
        math.log1p(answer_words),
        math.log((1 + answer_words) / (1 + len(words(request)))),
        copied(answer, request),
        min(structured, 10) / 10,
        repetition(answer),
        refusal,
    ]


def as_matrix(rows: Sequence[Sequence[float]], width: int) -> np.ndarray:
    return np.asarray(rows, dtype=np.float32).reshape(len(rows), width)

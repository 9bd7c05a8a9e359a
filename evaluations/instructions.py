"""Checkers for verifiable instructions, following the semantics of Google's IFEval rule checker.

Each checker takes the response, the instruction's parameters and the prompt, and says whether the response
follows the instruction. Ids are IFEval's (``punctuation:no_comma``, ``length_constraints:number_words``...).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from agentcore.evaluations.errors import EvaluationError

Checker = Callable[[str, dict[str, Any], str], bool]
CHECKERS: dict[str, Checker] = {}


def _checker(instruction_id: str) -> Callable[[Checker], Checker]:
    def add(function: Checker) -> Checker:
        CHECKERS[instruction_id] = function
        return function

    return add


def _relation(count: int, relation: str, target: int) -> bool:
    if relation == "less than":
        return count < target
    if relation == "at least":
        return count >= target
    raise EvaluationError(f"unknown relation {relation!r}; use 'less than' or 'at least'")


_ALPHA = "([A-Za-z])"
_STARTERS = (
    r"(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He\s|She\s|It\s|They\s|Their\s|Our\s|We\s|But\s|However\s|That\s|This\s|Wherever)"
)
_ACRONYMS = "([A-Z][.][A-Z][.](?:[A-Z][.])?)"
_SUFFIXES = "(Inc|Ltd|Jr|Sr|Co)"
_SENTENCE_FIXES: tuple[tuple[str, str], ...] = (
    ("(Mr|St|Mrs|Ms|Dr)[.]", "\\1<prd>"),
    ("[.](com|net|org|io|gov|edu|me)", "<prd>\\1"),
    ("([0-9])[.]([0-9])", "\\1<prd>\\2"),
    (r"\s" + _ALPHA + "[.] ", " \\1<prd> "),
    (_ACRONYMS + " " + _STARTERS, "\\1<stop> \\2"),
    (_ALPHA + "[.]" + _ALPHA + "[.]" + _ALPHA + "[.]", "\\1<prd>\\2<prd>\\3<prd>"),
    (_ALPHA + "[.]" + _ALPHA + "[.]", "\\1<prd>\\2<prd>"),
    (" " + _SUFFIXES + "[.] " + _STARTERS, " \\1<stop> \\2"),
    (" " + _SUFFIXES + "[.]", " \\1<prd>"),
    (" " + _ALPHA + "[.]", " \\1<prd>"),
)


def count_sentences(text: str) -> int:
    """Sentences, split the way IFEval's checker splits them (abbreviations, initials, decimals, URLs)."""
    text = " " + text.replace("\n", " ") + "  "
    text = re.sub(r"\.{2,}", lambda match: "<prd>" * len(match.group(0)) + "<stop>", text)
    for pattern, replacement in _SENTENCE_FIXES[:3]:
        text = re.sub(pattern, replacement, text)
    text = text.replace("Ph.D.", "Ph<prd>D<prd>")
    for pattern, replacement in _SENTENCE_FIXES[3:]:
        text = re.sub(pattern, replacement, text)
    for before, after in ((".”", "”."), ('."', '".'), ('!"', '"!'), ('?"', '"?')):
        text = text.replace(before, after)
    for mark in ".?!":
        text = text.replace(mark, mark + "<stop>")
    parts = [part.strip() for part in text.replace("<prd>", ".").split("<stop>")]
    if parts and not parts[-1]:
        parts = parts[:-1]
    return len(parts)


def count_words(text: str) -> int:
    return len(re.findall(r"\w+", text))


@_checker("punctuation:no_comma")
def _no_comma(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    return "," not in response


@_checker("length_constraints:number_sentences")
def _sentences(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    return _relation(count_sentences(response), kwargs["relation"], int(kwargs["num_sentences"]))


@_checker("length_constraints:number_words")
def _words(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    return _relation(count_words(response), kwargs["relation"], int(kwargs["num_words"]))


@_checker("length_constraints:number_paragraphs")
def _paragraphs(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    paragraphs = re.split(r"\s?\*\*\*\s?", response)
    count = len(paragraphs)
    for index, paragraph in enumerate(paragraphs):
        if not paragraph.strip():
            if index in (0, len(paragraphs) - 1):
                count -= 1
            else:
                return False
    return count == int(kwargs["num_paragraphs"])


@_checker("length_constraints:nth_paragraph_first_word")
def _nth_paragraph(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    paragraphs = re.split(r"\n\n", response)
    count = sum(1 for paragraph in paragraphs if paragraph.strip())
    nth = int(kwargs["nth_paragraph"])
    if nth > count or not paragraphs[nth - 1].strip():
        return False
    word = paragraphs[nth - 1].strip().split()[0].lstrip("'").lstrip('"')
    first = re.split(r"[.,?!'\"]", word)[0].lower()
    return count == int(kwargs["num_paragraphs"]) and first == str(kwargs["first_word"]).lower()


@_checker("startend:quotation")
def _quotation(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    text = response.strip()
    return len(text) > 1 and text[0] == '"' and text[-1] == '"'


@_checker("startend:end_checker")
def _ends_with(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    return response.strip().strip('"').lower().endswith(str(kwargs["end_phrase"]).strip().lower())


@_checker("detectable_format:number_highlighted_sections")
def _highlights(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    found = re.findall(r"\*[^\n\*]*\*", response) + re.findall(r"\*\*[^\n\*]*\*\*", response)
    return sum(1 for item in found if item.strip("*").strip()) >= int(kwargs["num_highlights"])


@_checker("detectable_format:title")
def _title(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    return any(item.lstrip("<").rstrip(">").strip() for item in re.findall(r"<<[^\n]+>>", response))


@_checker("detectable_format:number_bullet_lists")
def _bullets(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    stars = re.findall(r"^\s*\*[^\*].*$", response, flags=re.MULTILINE)
    dashes = re.findall(r"^\s*-.*$", response, flags=re.MULTILINE)
    return len(stars) + len(dashes) == int(kwargs["num_bullets"])


@_checker("detectable_format:json_format")
def _json(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    text = response.strip()
    for fence in ("```json", "```Json", "```JSON", "```"):
        text = text.removeprefix(fence)
    text = text.removesuffix("```").strip()
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


@_checker("detectable_format:multiple_sections")
def _sections(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    sections = re.split(r"\s?" + re.escape(str(kwargs["section_spliter"])) + r"\s?\d+\s?", response)
    return len(sections) - 1 >= int(kwargs["num_sections"])


@_checker("detectable_format:constrained_response")
def _constrained(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    return any(option in response for option in ("My answer is yes.", "My answer is no.", "My answer is maybe."))


@_checker("detectable_content:number_placeholders")
def _placeholders(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    return len(re.findall(r"\[.*?\]", response)) >= int(kwargs["num_placeholders"])


@_checker("detectable_content:postscript")
def _postscript(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    marker = str(kwargs["postscript_marker"]).lower()
    if marker == "p.p.s":
        pattern = r"\s*p\.\s?p\.\s?s.*$"
    elif marker == "p.s.":
        pattern = r"\s*p\.\s?s\..*$"
    else:
        pattern = r"\s*" + re.escape(marker) + r".*$"
    return bool(re.findall(pattern, response.lower(), flags=re.MULTILINE))


@_checker("keywords:existence")
def _keywords(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    return all(re.search(re.escape(word), response, flags=re.IGNORECASE) for word in kwargs["keywords"])


@_checker("keywords:forbidden_words")
def _forbidden(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    return not any(
        re.search(r"\b" + re.escape(word) + r"\b", response, flags=re.IGNORECASE) for word in kwargs["forbidden_words"]
    )


@_checker("keywords:frequency")
def _frequency(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    count = len(re.findall(re.escape(str(kwargs["keyword"])), response, flags=re.IGNORECASE))
    return _relation(count, kwargs["relation"], int(kwargs["frequency"]))


@_checker("keywords:letter_frequency")
def _letters(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    count = response.lower().count(str(kwargs["letter"]).lower())
    return _relation(count, kwargs["let_relation"], int(kwargs["let_frequency"]))


@_checker("change_case:english_lowercase")
def _lowercase(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    return response == response.lower()


@_checker("change_case:english_capital")
def _uppercase(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    return response.isupper()


@_checker("change_case:capital_word_frequency")
def _capital_words(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    capitals = [word for word in re.findall(r"\w+|[^\w\s]+", response) if word.isupper()]
    return _relation(len(capitals), kwargs["capital_relation"], int(kwargs["capital_frequency"]))


@_checker("combination:repeat_prompt")
def _repeat(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    return response.strip().lower().startswith(str(kwargs["prompt_to_repeat"]).strip().lower())


@_checker("combination:two_responses")
def _two(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    parts = [part.strip() for part in response.split("******") if part.strip()]
    return len(parts) == 2 and parts[0] != parts[1]


@_checker("language:response_language")
def _language(response: str, kwargs: dict[str, Any], prompt: str) -> bool:
    from agentcore.evaluations.language import detect_language

    return detect_language(response) == str(kwargs["language"])


def check_instruction(instruction_id: str, response: str, kwargs: dict[str, Any], prompt: str = "") -> bool:
    """Whether ``response`` follows the instruction ``instruction_id`` with parameters ``kwargs``."""
    checker = CHECKERS.get(instruction_id)
    if checker is None:
        raise EvaluationError(
            f"unknown verifiable instruction {instruction_id!r}; known: {', '.join(sorted(CHECKERS))}"
        )
    try:
        return checker(response, {key: value for key, value in kwargs.items() if value is not None}, prompt)
    except KeyError as error:
        raise EvaluationError(f"instruction {instruction_id!r} needs parameter {error.args[0]!r}") from None

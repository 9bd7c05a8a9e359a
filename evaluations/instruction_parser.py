"""Find verifiable instructions in natural-language prompts ("answer in fewer than 50 words", "no commas"...).

Real traces carry instructions as prose, not as IFEval parameters, so InstructionFollowing parses the common
phrasings into :class:`Instruction` objects that the rule checkers can verify. Unrecognised instructions are
not checked (the explanation says how many were found); give ``reference.instructions`` to be exhaustive.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from agentcore.evaluations.trace import Instruction

_NUMBERS = {
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_NUM = r"(\d+|" + "|".join(_NUMBERS) + r")"
_ORDINALS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7}
_LANGUAGES = {
    "english": "en",
    "german": "de",
    "french": "fr",
    "spanish": "es",
    "italian": "it",
    "portuguese": "pt",
    "russian": "ru",
    "bulgarian": "bg",
    "ukrainian": "uk",
    "arabic": "ar",
    "urdu": "ur",
    "persian": "fa",
    "farsi": "fa",
    "hindi": "hi",
    "marathi": "mr",
    "nepali": "ne",
    "bengali": "bn",
    "bangla": "bn",
    "punjabi": "pa",
    "gujarati": "gu",
    "tamil": "ta",
    "telugu": "te",
    "kannada": "kn",
    "malayalam": "ml",
    "thai": "th",
    "korean": "ko",
    "japanese": "ja",
    "chinese": "zh",
    "vietnamese": "vi",
    "finnish": "fi",
    "swahili": "sw",
    "dutch": "nl",
    "greek": "el",
    "hebrew": "he",
}
_RELATIONS = {
    "at least": "at least",
    "more than": "at least",
    "minimum of": "at least",
    "less than": "less than",
    "fewer than": "less than",
    "at most": "less than",
    "no more than": "less than",
    "maximum of": "less than",
    "under": "less than",
}
_REL = r"(at least|more than|minimum of|less than|fewer than|at most|no more than|maximum of|under)"


def _number(text: str) -> int:
    return int(text) if text.isdigit() else _NUMBERS[text.lower()]


def _count(relation: str, number: str) -> tuple[str, int]:
    """IFEval relations: 'at most N' is 'less than N+1', 'more than N' is 'at least N+1'."""
    value = _number(number)
    word = relation.lower()
    if word in ("at most", "no more than", "maximum of") or word == "more than":
        value += 1
    return _RELATIONS[word], value


def _quoted(text: str) -> list[str]:
    found = re.findall(r"[\"“'‘]([^\"”'’]+)[\"”'’]", text)
    if found:
        return found
    return [part.strip(" .") for part in re.split(r",|\band\b|\bor\b", text) if part.strip(" .")]


Rule = Callable[[re.Match[str], str], "Instruction | None"]
_RULES: list[tuple[re.Pattern[str], Rule, bool]] = []


def _rule(pattern: str, *, repeats: bool = False) -> Callable[[Rule], Rule]:
    """Register ``function`` for ``pattern``; ``repeats`` rules yield one instruction per match."""

    def add(function: Rule) -> Rule:
        _RULES.append((re.compile(pattern, re.IGNORECASE | re.DOTALL), function, repeats))
        return function

    return add


def _make(instruction_id: str, **kwargs: Any) -> Instruction:
    return Instruction(id=instruction_id, kwargs=kwargs)


@_rule(
    r"(?:not|n't|without|avoid|refrain from)\s+(?:using\s+|use\s+|any\s+|including\s+|contain\s+|containing\s+)*commas?"
)
def _no_comma(match: re.Match[str], text: str) -> Instruction:
    return _make("punctuation:no_comma")


_CAPITALS = r"(?:(?:in|with) all capital letters|in all[- ]caps|all[- ]caps|capitali[sz]ed)"


@_rule(
    # "at least 15 words in all capital letters", "more than 4 words be in all capital letters"
    _REL
    + r"\s+"
    + _NUM
    + r"\s+(?:\w+\s+){0,3}?(?:words?|phrases?)\b[^.]{0,30}?"
    + _CAPITALS
    # "all-caps words should appear at most 10 times", "words with all capital letters to less than four"
    + r"|"
    + _CAPITALS
    + r"[^.]{0,60}?"
    + _REL
    + r"\s+"
    + _NUM
    # "there should be 5 to 10 such capitalized words"
    + r"|\b"
    + _NUM
    + r"\s+to\s+\d+\s+(?:such\s+)?(?:capitali[sz]ed|all[- ]caps) words"
)
def _capital_words(match: re.Match[str], text: str) -> Instruction:
    groups = [group for group in match.groups() if group is not None]
    relation, number = (groups[0], groups[1]) if len(groups) == 2 else ("at least", groups[0])
    relation, value = _count(relation, number)
    return _make("change_case:capital_word_frequency", capital_relation=relation, capital_frequency=value)


@_rule(r"(?:all|entire|whole|only)[^.]{0,60}?(?:lower\s?case)|lower\s?case letters only|no capital letters")
def _lowercase(match: re.Match[str], text: str) -> Instruction:
    return _make("change_case:english_lowercase")


@_rule(r"(?:all|entire|whole|only)[^.]{0,60}?(?:capital letters|upper\s?case|all caps)(?![^.]*times)")
def _uppercase(match: re.Match[str], text: str) -> Instruction:
    return _make("change_case:english_capital")


@_rule(_REL + r"\s+" + _NUM + r"\s+words(?![^.]{0,30}?" + _CAPITALS + ")")
def _words(match: re.Match[str], text: str) -> Instruction:
    relation, value = _count(match.group(1), match.group(2))
    return _make("length_constraints:number_words", relation=relation, num_words=value)


@_rule(_REL + r"\s+" + _NUM + r"\s+sentences")
def _sentences(match: re.Match[str], text: str) -> Instruction:
    relation, value = _count(match.group(1), match.group(2))
    return _make("length_constraints:number_sentences", relation=relation, num_sentences=value)


_NTH = r"(\d+|" + "|".join(_ORDINALS) + r")(?:st|nd|rd|th)?"
_FIRST_WORD = r"(?:start|begin)s?\s+with\s+(?:the\s+)?(?:word\s+)?[\"'“]?(\w+)"


@_rule(
    # "paragraph 2 must start with the word X", "the 4th paragraph starts with X", "the very first paragraph ..."
    r"(?:paragraph\s+(?:number\s+)?"
    + _NTH
    + r"|\b"
    + _NTH
    + r"\s+paragraph)\b[^.]*?"
    + _FIRST_WORD
    # "start the 4th paragraph with the word X"
    + r"|(?:start|begin)\s+(?:the\s+)?(?:very\s+)?(?:paragraph\s+"
    + _NTH
    + r"|"
    + _NTH
    + r"\s+paragraph)"
    + r"\s+with\s+(?:the\s+)?(?:word\s+)?[\"'“]?(\w+)"
)
def _nth_paragraph(match: re.Match[str], text: str) -> Instruction | None:
    total = re.search(_NUM + r"[\s-]+paragraphs?\b", text, re.IGNORECASE)
    if total is None:
        return None
    nth, word = [group for group in match.groups() if group is not None]
    return _make(
        "length_constraints:nth_paragraph_first_word",
        num_paragraphs=_number(total.group(1)),
        nth_paragraph=int(nth) if nth.isdigit() else _ORDINALS[nth.lower()],
        first_word=word.lower(),
    )


@_rule(r"(?:exactly\s+)?" + _NUM + r"\s+(?:paragraphs|sections|stanzas|parts)\b(?=[\s\S]*\*\*\*)")
def _paragraphs(match: re.Match[str], text: str) -> Instruction | None:
    """``N paragraphs`` (or sections, stanzas, parts) with ``***`` named as the separator anywhere in the prompt."""
    if re.search(r"paragraphs?[^.]*\\n\\n|separated (?:from each other )?by two new lines", text, re.IGNORECASE):
        return None
    return _make("length_constraints:number_paragraphs", num_paragraphs=_number(match.group(1)))


@_rule(
    r"(?:wrap|put|enclose)\w* (?:your |the )?(?:entire |whole )?(?:response|answer|output|reply)[^.]{0,40}?double quot"
    r"|double quot\w*(?: marks)? around (?:your |the )?(?:entire |whole )?(?:response|answer|output|reply)"
)
def _quotation(match: re.Match[str], text: str) -> Instruction:
    return _make("startend:quotation")


@_rule(
    r"(?:end|finish|conclude) (?:your|the|it)[^.\"“]{0,40}?with (?:the |this )?(?:exact |following )?"
    r"(?:phrase|words?|sentence)?\s*[:]?\s*[\"“']([^\"”]+?)[\"”']"
)
def _end(match: re.Match[str], text: str) -> Instruction:
    return _make("startend:end_checker", end_phrase=match.group(1).strip())


@_rule(r"(?:highlight|italicize) (?:at least )?" + _NUM + r"\s+(?:\w+\s+)?(?:sections?|parts?)")
def _highlights(match: re.Match[str], text: str) -> Instruction:
    return _make("detectable_format:number_highlighted_sections", num_highlights=_number(match.group(1)))


@_rule(r"title[^.]{0,80}?(?:double angular brackets|<<)")
def _title(match: re.Match[str], text: str) -> Instruction:
    return _make("detectable_format:title")


@_rule(r"exactly\s+" + _NUM + r"\s+bullet points?")
def _bullets(match: re.Match[str], text: str) -> Instruction:
    return _make("detectable_format:number_bullet_lists", num_bullets=_number(match.group(1)))


@_rule(r"(?:wrap|entire|whole|in|as|using)[^.]{0,40}?\bJSON\b(?: format)?")
def _json(match: re.Match[str], text: str) -> Instruction:
    return _make("detectable_format:json_format")


@_rule(
    _NUM + r"\s+sections?[^.]*?(?:mark|begin|start|label)[^.]*?with\s+(?:the\s+)?(?:word\s+)?[\"'“]?"
    r"(SECTION|Section|PARAGRAPH|Paragraph|Part|PART|Chapter|CHAPTER|Day|DAY|Slide|SLIDE)\s?X"
)
def _multiple_sections(match: re.Match[str], text: str) -> Instruction:
    return _make(
        "detectable_format:multiple_sections", num_sections=_number(match.group(1)), section_spliter=match.group(2)
    )


@_rule(r"[\"“]?My answer is yes\.?[\"”]?,?\s*[\"“]?My answer is no")
def _constrained(match: re.Match[str], text: str) -> Instruction:
    return _make("detectable_format:constrained_response")


@_rule(r"(?:at least\s+)?" + _NUM + r"\s+placeholders?")
def _placeholders(match: re.Match[str], text: str) -> Instruction:
    return _make("detectable_content:number_placeholders", num_placeholders=_number(match.group(1)))


@_rule(
    r"(?:postscript|P\.S\.|P\.P\.S)[^\n]*?(?:starting with|start with|begin(?:ning)? with|marked)?"
    r"\s*[\"'“]?(P\.P\.S|P\.S\.?)"
)
def _postscript(match: re.Match[str], text: str) -> Instruction:
    marker = match.group(1).upper()
    return _make("detectable_content:postscript", postscript_marker="P.S." if marker in ("P.S", "P.S.") else marker)


@_rule(r"(?:include|use|mention|contain)s?(?: the)? keywords?\s+([^.\n]+)")
def _keywords(match: re.Match[str], text: str) -> Instruction:
    return _make("keywords:existence", keywords=_quoted(match.group(1).split(" in the ")[0]))


@_rule(
    r"(?:not|n't|without|avoid)\s+(?:include|use|using|including|mention|say)(?: the)?(?: keywords?| words?)"
    r"\s+([^.\n]+)"
)
def _forbidden(match: re.Match[str], text: str) -> Instruction:
    return _make("keywords:forbidden_words", forbidden_words=_quoted(match.group(1).split(" in the ")[0]))


@_rule(
    r"(?:word|keyword)\s+[\"'“]?([\w-]+)[\"'”]?\s+(?:should\s+|must\s+|to\s+|will\s+)?"
    r"(?:appear\s+|be used\s+|occur\s+)?"
    r"(?:for\s+)?" + _REL + r"\s+" + _NUM + r"\s+times",
    repeats=True,
)
def _frequency(match: re.Match[str], text: str) -> Instruction:
    relation, value = _count(match.group(2), match.group(3))
    return _make("keywords:frequency", keyword=match.group(1), relation=relation, frequency=value)


@_rule(r"(?:word|keyword)\s+[\"'“]?([\w-]+)[\"'”]?\s+should appear\s+" + _NUM + r"\s+or more times", repeats=True)
def _frequency_or_more(match: re.Match[str], text: str) -> Instruction:
    return _make("keywords:frequency", keyword=match.group(1), relation="at least", frequency=_number(match.group(2)))


@_rule(r"letter\s+[\"'“]?([a-zA-Z])[\"'”]?\s+[^.]*?" + _REL + r"\s+" + _NUM + r"\s+times")
def _letters(match: re.Match[str], text: str) -> Instruction:
    relation, value = _count(match.group(2), match.group(3))
    return _make("keywords:letter_frequency", letter=match.group(1).lower(), let_relation=relation, let_frequency=value)


@_rule(r"(?:first,? )?repeat the (?:exact )?(?:request|question|prompt|sentence) (?:above|word for word)")
def _repeat(match: re.Match[str], text: str) -> Instruction | None:
    before = text[: match.start()].strip()
    return _make("combination:repeat_prompt", prompt_to_repeat=before) if before else None


@_rule(r"two different (?:responses|answers|versions)")
def _two(match: re.Match[str], text: str) -> Instruction:
    return _make("combination:two_responses")


@_rule(r"(?:in|using|only)\s+(?:the\s+)?(" + "|".join(_LANGUAGES) + r")(?:\s+language)?(?:,|\.| only| and| no other)")
def _language(match: re.Match[str], text: str) -> Instruction | None:
    if not re.search(
        r"respon|answer|reply|output|written|write", text[max(0, match.start() - 80) : match.end() + 40], re.I
    ):
        return None
    return _make("language:response_language", language=_LANGUAGES[match.group(1).lower()])


@_rule(
    r"(?:finish|end|conclude)\w* (?:your |the )?(?:entire )?(?:response|answer|reply)? ?with (?:this|the) exact phrase"
    r"(?: of)?:?\s*[\"“]?([^\"”\n]+?)[\"”]?(?=\s+with no|\s*$|\s*\n)"
    r"|(?:last sentence|very end)[^\"“:]*?(?:should be|read exactly like):?\s*[\"“]?([^\"”\n]+?)[\"”]?\.?(?=\s|$)"
)
def _end_phrase(match: re.Match[str], text: str) -> Instruction:
    return _make("startend:end_checker", end_phrase=(match.group(1) or match.group(2)).strip())


def parse_instructions(text: str) -> list[Instruction]:
    """Verifiable instructions found in ``text`` (in rule order; an id at most once unless its rule repeats)."""
    found: list[Instruction] = []
    for pattern, build, repeats in _RULES:
        matches = list(pattern.finditer(text)) if repeats else [m for m in [pattern.search(text)] if m is not None]
        for match in matches:
            instruction = build(match, text)
            ids = {item.id for item in found}
            if instruction is None or (instruction.id in ids and not repeats) or instruction in found:
                continue
            if instruction.id == "change_case:english_capital" and "change_case:capital_word_frequency" in ids:
                continue
            found.append(instruction)
    return found

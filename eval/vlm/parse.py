"""Answer parsing with explicit rules; every reply gets exactly one kind, counted in the run's summary.

Rules, in order (text upper-cased, markdown emphasis and surrounding quotes/punctuation stripped):

1. ``refusal`` — the provider flagged a refusal (OpenAI ``message.refusal``, Anthropic ``stop_reason ==
   "refusal"``, Gemini safety block) or the reply is empty.
2. ``exact`` — the whole reply is one answer token (``YES``, ``no.``, ``**BALL**``), or its last line is
   ``Answer: <token>`` (the chain-of-thought format).
3. ``alias`` — the answer tokens and aliases found as whole words or phrases (longer phrases first, so
   "not visible" is not also "visible") all belong to one class.
4. ``refusal`` — no class was found, or several were, and the reply matches a refusal phrase ("I can't",
   "I'm unable", "cannot determine", "as an AI", ...).
5. ``unparseable`` — anything else, including replies naming both classes. Unparseable and refused replies
   become trials with ``response`` = None (counted as errors), never dropped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

KINDS = ("exact", "alias", "refusal", "unparseable")
REFUSAL_PATTERNS = (r"\bI (?:can ?not|can't|cannot|am unable|'m unable|am not able|'m not able|won't)\b",
                    r"\bunable to (?:determine|tell|answer|assist|help)\b", r"\bcannot (?:determine|tell)\b",
                    r"\bas an AI\b", r"\bI'm sorry\b", r"\bI am sorry\b", r"\bnot (?:possible|able) to (?:determine|tell)\b")
_REFUSAL = re.compile("|".join(REFUSAL_PATTERNS), re.IGNORECASE)
_STRIP = " \t\r\n.,;:!?\"'`*_()[]"


@dataclass(frozen=True)
class Parsed:
    answer_class: str | None  # the class name, or None
    kind: str  # one of KINDS


def parse_answer(text: str | None, answers: dict, aliases: dict | None = None, refused: bool = False) -> Parsed:
    """Parse a reply against ``answers`` (class name -> answer token) and ``aliases`` (answer token -> words)."""
    token_class = {str(v).upper(): str(k) for k, v in answers.items()}
    if refused or text is None or not text.strip():
        return Parsed(None, "refusal")
    clean = text.strip().strip(_STRIP).upper()
    if clean in token_class:
        return Parsed(token_class[clean], "exact")
    last = text.strip().splitlines()[-1].strip().strip(_STRIP)
    m = re.fullmatch(r"(?:FINAL\s+)?ANSWER\s*[:\-]?\s*\**\s*([A-Z]+)", last.upper().strip(_STRIP))
    if m and m.group(1) in token_class:
        return Parsed(token_class[m.group(1)], "exact")
    phrases = [(tok.lower(), token_class[tok]) for tok in token_class]
    for tok, words in (aliases or {}).items():
        if str(tok).upper() in token_class:
            phrases += [(str(w).lower(), token_class[str(tok).upper()]) for w in words]
    body = " " + re.sub(r"[^a-z0-9' ]+", " ", text.lower()) + " "
    found = set()
    for phrase, cls in sorted(phrases, key=lambda p: -len(p[0])):
        pat = re.compile(r"(?<![a-z0-9'])" + re.escape(phrase) + r"(?![a-z0-9'])")
        if pat.search(body):
            found.add(cls)
            body = pat.sub(" ", body)  # a longer phrase hides its words from shorter ones
    if len(found) == 1:
        return Parsed(found.pop(), "alias")
    if _REFUSAL.search(text):
        return Parsed(None, "refusal")
    return Parsed(None, "unparseable")

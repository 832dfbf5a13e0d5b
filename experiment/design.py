"""Experiment designs: what a participant sees, as validated configuration data.

A :class:`Design` is built from a Hydra/YAML mapping (``configs/experiment/design/*.yaml``) by
:func:`design_from_config`, which names the field, the value and the allowed range in every error. The
protocol follows the 3D-PC human benchmark (Linsley et al., 2024, appendix A.8): consent, instructions
with an example, practice trials with correct/incorrect feedback, test trials without feedback, two keys
for the two answers named under the image on every screen, a rest screen with a progress bar every
``rest_every`` trials, and a completion code for the recruitment platform.

Units: durations in milliseconds (``0`` = no limit), image size in CSS pixels (the longer side).
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field, fields, replace

from infra import schema as S

# Key names are DOM ``KeyboardEvent.key`` values, so the browser and the server agree on them.
ALLOWED_KEYS = ("ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", " ") + tuple("abcdefghijklmnopqrstuvwxyz") \
    + tuple("0123456789")


class DesignError(S.ConfigError):
    """A design field with a value that cannot be used (a :class:`infra.schema.ConfigError`)."""


@dataclass(frozen=True)
class Choice:
    """One answer: the class name it means (as the dataset's ``label_name``), its key and its label."""
    label: str
    key: str
    text: str


@dataclass(frozen=True)
class Design:
    name: str = "study"
    target: str | None = "vpt"  # 3D-PC target, or the annotations column of a generated 2D dataset
    split: str = "human"  # evaluation split whose images are the test trials (3D-PC: the 94-image human set)
    practice_split: str = "train"  # practice and instruction examples come from here, never from `split`
    conditions: tuple[str, ...] = ()  # generated datasets: keep only these conditions (empty = all)
    n_practice: int = S.field(8, "practice trials", range=(0, 1000))
    n_test: int = S.field(0, "test trials (0 = every image of `split`)", range=(0, 100_000))
    n_attention: int = S.field(0, 'attention checks ("press the <key> key") spread over the test block',
                               range=(0, 1000))
    rest_every: int = S.field(40, "a rest screen with a progress bar after this many test trials (0 = never)",
                              range=(0, 100_000))
    choices: tuple[Choice, ...] = ()
    counterbalance_keys: bool = True  # swap the two keys for half the participants (chosen by seed)
    stimulus_ms: int = S.field(0, "image shown for this long, then blank (0 = until the response)",
                               range=(0, 600_000))
    deadline_ms: int = S.field(0, 'no answer within this time counts as "na" (an error); 0 = no deadline',
                               range=(0, 3_600_000))
    feedback_ms: int = S.field(1000, "practice feedback shown for this long", range=(0, 60_000))
    iti_ms: int = S.field(1000, '"response recorded" screen, continues by space or after this long (A.8)',
                          range=(0, 60_000))
    image_px: int = S.field(512, "longer side of the image (CSS pixels)", range=(32, 4096))
    question: str = ""
    consent_html: str = ""
    instructions_html: str = ""
    debrief_html: str = ""
    n_examples: int = S.field(2, "example images (one per answer where possible) on the instructions page",
                              range=(0, 20))
    completion_code: str = ""  # one code for everyone (Prolific style); empty = a code per participant
    redirect_url: str = ""  # e.g. https://app.prolific.com/submissions/complete?cc={code}
    require_participant_id: bool = True  # refuse a link without the platform's participant parameter
    url_params: dict = field(default_factory=lambda: {"participant": "PROLIFIC_PID", "study": "STUDY_ID",
                                                      "session": "SESSION_ID"})
    seed: int = S.field(0, "seed of the plans and key swaps", range=(0, 2**63 - 1))

    def digest(self) -> str:
        """Identity of the design (a study refuses to continue under a different design)."""
        return hashlib.sha256(json.dumps(asdict(self), sort_keys=True).encode()).hexdigest()[:16]

    def public(self) -> dict:
        """What the browser may know: texts, keys and timing; no labels of any stimulus."""
        return {"name": self.name, "question": self.question, "consent_html": self.consent_html,
                "instructions_html": self.instructions_html, "debrief_html": self.debrief_html,
                "stimulus_ms": self.stimulus_ms, "deadline_ms": self.deadline_ms, "feedback_ms": self.feedback_ms,
                "iti_ms": self.iti_ms, "image_px": self.image_px, "rest_every": self.rest_every}


def design_from_config(cfg) -> Design:
    """A validated :class:`Design` from a mapping (unknown fields are errors, missing ones take defaults)."""
    c = dict(cfg)
    known = {f.name for f in fields(Design)}
    unknown = sorted(set(c) - known)
    if unknown:
        raise DesignError(f"design: unknown field(s) {unknown}; allowed: {sorted(known)}")
    base = asdict(Design())
    base.update(c)
    c = base
    declared = [f.name for f in fields(Design) if "help" in f.metadata]  # the settings made with S.field
    try:  # the one validator (infra.schema), on the defaults with the declared settings replaced
        S.validate_section(replace(Design(), **{k: c[k] for k in declared}), "design")
    except S.ConfigError as e:
        raise DesignError(str(e)) from None
    if c["deadline_ms"] and c["stimulus_ms"] > c["deadline_ms"]:
        raise DesignError(f"design.stimulus_ms={c['stimulus_ms']} exceeds design.deadline_ms={c['deadline_ms']}")
    raw = list(c["choices"] or [])
    if len(raw) != 2:
        raise DesignError(f"design.choices: two answers are needed (label, key, text each), got {len(raw)}")
    choices = []
    for i, ch in enumerate(raw):
        ch = dict(ch)
        miss = {"label", "key", "text"} - set(ch)
        if miss or set(ch) - {"label", "key", "text"}:
            raise DesignError(f"design.choices[{i}]={ch}: needs exactly label, key, text")
        if ch["key"] not in ALLOWED_KEYS:
            raise DesignError(f"design.choices[{i}].key={ch['key']!r}: use a KeyboardEvent.key name such as "
                              "ArrowLeft, ArrowRight or a lower-case letter/digit")
        choices.append(Choice(str(ch["label"]), str(ch["key"]), str(ch["text"])))
    if choices[0].key == choices[1].key or choices[0].label == choices[1].label:
        raise DesignError(f"design.choices: the two answers need different keys and labels, got {choices}")
    if c["n_attention"] and " " in (choices[0].key, choices[1].key):
        raise DesignError("design.n_attention: attention checks use the answer keys; space is the continue key")
    if c["practice_split"] == c["split"]:
        raise DesignError(f"design.practice_split={c['practice_split']!r} equals design.split: practice "
                          "images must not be test images")
    params = dict(c["url_params"] or {})
    if set(params) != {"participant", "study", "session"}:
        raise DesignError(f"design.url_params={params}: needs exactly participant, study, session")
    c["url_params"] = {k: str(v) for k, v in params.items()}
    c["choices"] = tuple(choices)
    c["conditions"] = tuple(str(x) for x in (c["conditions"] or ()))
    c["target"] = None if c["target"] in (None, "") else str(c["target"])
    for s in ("name", "split", "practice_split", "question", "consent_html", "instructions_html", "debrief_html",
              "completion_code", "redirect_url"):
        c[s] = str(c[s] or "")
    if not c["name"] or not all(ch.isalnum() or ch in "._-" for ch in c["name"]):
        raise DesignError(f"design.name={c['name']!r}: letters, digits, '.', '_' or '-' only (used in file names)")
    c["counterbalance_keys"] = bool(c["counterbalance_keys"])
    c["require_participant_id"] = bool(c["require_participant_id"])
    return Design(**c)

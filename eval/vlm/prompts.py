"""Prompt sets and conversations for VLM prompting.

A :class:`PromptSet` is the question asked of every image, the answer token per class, aliases per answer
token and the chain-of-thought instruction. Built-in sets (``PROMPT_SETS``):

* ``3dpc_paper`` — the 3D-PC paper's prompts verbatim (appendix A.6): depth "... Answer only BALL if the red
  ball is closer, or ARROW if the green arrow is closer, nothing else." and VPT "... Answer only YES or NO,
  nothing else".
* ``3dpc_camera`` (the default for 3D-PC tasks) — the same prompts with the green arrow called a green
  camera, Vantage's observer shape (``scenes/props.py``): "green 3D arrow" -> "green 3D camera",
  "the direction the arrow is pointing" -> "the direction the camera is pointing", ARROW -> CAMERA.

Class polarity is the 3D-PC build's (eval/tasks.py): vpt 1 = the observer sees the ball (YES); depth 1 = the
ball is further, i.e. the green arrow/camera is closer (ARROW / CAMERA), 0 = the ball is closer (BALL).

A :class:`Conversation` is provider-neutral: turns of text and images (bytes + MIME type + sha256). The
3D-PC protocol (:func:`in_context_conversation`): for each in-context example a user turn (question + image)
and an assistant turn (the correct answer token), in order, then the test question and image. A
chain-of-thought run appends :attr:`PromptSet.cot` to the test question only.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

TEMPLATE_VERSION = "vlm-conversation-1"  # part of every cache key: bump when the message layout changes

COT_INSTRUCTION = ("Think step by step about where the objects are in the scene, then give your final answer "
                   "on the last line as 'Answer: {answers}'.")


@dataclass(frozen=True)
class PromptSet:
    """``question``: asked with every image; ``answers``: class name -> answer token (upper case);
    ``aliases``: answer token -> other words that mean it (lower case, whole-word matches)."""

    name: str
    question: str
    answers: dict
    aliases: dict = field(default_factory=dict)

    @property
    def cot(self) -> str:
        return COT_INSTRUCTION.format(answers=" or ".join(self.answers.values()))

    def answer_class(self) -> dict:
        return {v: k for k, v in self.answers.items()}


_VPT_PAPER = ("In this image, if viewed from the perspective of the green 3D arrow in the direction the arrow is "
              "pointing, can a human see the red ball? Answer only YES or NO, nothing else")
_DEPTH_PAPER = ("In this image, is the red ball closer to the observer or is the green arrow closer to the "
                "observer? Answer only BALL if the red ball is closer, or ARROW if the green arrow is closer, "
                "nothing else.")
_YESNO_ALIASES = {"YES": ["yes", "yeah", "visible", "can see", "true"],
                  "NO": ["no", "not visible", "cannot see", "can't see", "can not see", "false", "invisible"]}


def _camera(text: str) -> str:
    return (text.replace("green 3D arrow", "green 3D camera").replace("the arrow is pointing", "the camera is pointing")
            .replace("green arrow", "green camera").replace("ARROW", "CAMERA"))


PROMPT_SETS: dict[str, dict[str, PromptSet]] = {
    "3dpc_paper": {
        "vpt": PromptSet("3dpc_paper/vpt", _VPT_PAPER, {"1": "YES", "0": "NO"}, _YESNO_ALIASES),
        "depth": PromptSet("3dpc_paper/depth", _DEPTH_PAPER, {"0": "BALL", "1": "ARROW"},
                           {"BALL": ["red ball", "the ball"], "ARROW": ["green arrow", "the arrow"]}),
    },
    "3dpc_camera": {
        "vpt": PromptSet("3dpc_camera/vpt", _camera(_VPT_PAPER), {"1": "YES", "0": "NO"}, _YESNO_ALIASES),
        "depth": PromptSet("3dpc_camera/depth", _camera(_DEPTH_PAPER), {"0": "BALL", "1": "CAMERA"},
                           {"BALL": ["red ball", "the ball"], "CAMERA": ["green camera", "the camera"]}),
    },
}
for _s in PROMPT_SETS.values():
    _s["vpt_strategy"] = _s["vpt"]


def prompt_set_for(task, name: str = "auto", question: str | None = None, answers: dict | None = None,
                   aliases: dict | None = None) -> PromptSet:
    """The prompt set of a run: ``question`` + ``answers`` (+ ``aliases``) when given (any task), else the
    built-in set ``name`` for a 3D-PC target (``auto`` = ``3dpc_camera``)."""
    classes = [str(c) for c in task.classes]
    if question or answers:
        if not (question and answers):
            raise ValueError("vlm.question and vlm.answers go together: a question and {class: ANSWER} per class")
        answers = {str(k): str(v).strip().upper() for k, v in dict(answers).items()}
        if sorted(answers) != sorted(classes):
            raise ValueError(f"vlm.answers: needs exactly the task's classes {classes} as keys, got {sorted(answers)}")
        if len(set(answers.values())) != len(answers):
            raise ValueError(f"vlm.answers: answer tokens must differ per class, got {answers}")
        al = {str(k).upper(): [str(a).lower() for a in v] for k, v in dict(aliases or {}).items()}
        return PromptSet("custom", str(question), answers, al)
    target = task.name.split("/", 1)[-1]
    set_name = "3dpc_camera" if name == "auto" else name
    if set_name not in PROMPT_SETS:
        raise ValueError(f"vlm.prompt_set={name!r}: built-in sets are auto, {', '.join(PROMPT_SETS)}")
    if getattr(task, "kind", "") != "threedpc" or target not in PROMPT_SETS[set_name]:
        raise ValueError(f"task {task.name}: no built-in prompt; set vlm.question='...' and "
                         f"vlm.answers={{{', '.join(f'{c}: ...' for c in classes[:4])}}}")
    return PROMPT_SETS[set_name][target]


# ---------------------------------------------------------------------------------------------- messages
@dataclass(frozen=True)
class Image:
    data: bytes
    mime: str
    sha256: str

    @classmethod
    def from_file(cls, path: str | Path) -> "Image":
        data = Path(path).read_bytes()
        suffix = Path(path).suffix.lower()
        mime = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp",
                ".gif": "image/gif"}.get(suffix)
        if mime is None:
            raise ValueError(f"{path}: VLM providers take PNG, JPEG, WebP or GIF images, not {suffix or 'no suffix'}")
        return cls(data, mime, hashlib.sha256(data).hexdigest())


@dataclass(frozen=True)
class Turn:
    role: str  # "user" | "assistant"
    parts: tuple  # str | Image, in order


@dataclass(frozen=True)
class Conversation:
    turns: tuple
    system: str | None = None

    def key_form(self) -> dict:
        """The conversation with each image replaced by its hash and MIME type (for cache keys and logs)."""
        return {"system": self.system,
                "turns": [{"role": t.role, "parts": [p if isinstance(p, str) else {"image": p.sha256, "mime": p.mime}
                                                     for p in t.parts]} for t in self.turns]}

    def images(self) -> list[Image]:
        return [p for t in self.turns for p in t.parts if isinstance(p, Image)]


def in_context_conversation(ps: PromptSet, examples: list[tuple[Image, str]], test: Image, cot: bool = False,
                            system: str | None = None) -> Conversation:
    """Examples (image, class name) as user/assistant turns with the correct answer token, then the test."""
    turns = []
    for img, cls in examples:
        turns.append(Turn("user", (ps.question, img)))
        turns.append(Turn("assistant", (ps.answers[str(cls)],)))
    turns.append(Turn("user", (ps.question + (" " + ps.cot if cot else ""), test)))
    return Conversation(tuple(turns), system)

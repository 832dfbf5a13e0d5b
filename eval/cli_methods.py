"""``python -m eval ood|decoder|similarity``: the MindSet and model-vs-human methods (issue 15).

Each command parses its Hydra config (``configs/eval_<name>.yaml``, shared settings from
``configs/eval/common.yaml``) and calls one library function; bad input ends with ``error: ...`` (exit 2).
"""
from __future__ import annotations

from .cli import _container, _fail, command, weights_of


@command("ood", "ImageNet OOD / 16-class decisions   model=<id> task=<stimulus folder> out=<results dir>",
         settings="eval.ood:OODConfig")
def ood_job(cfg) -> None:
    from .ood import OODConfig, load_classifier, ood_tasks, run_ood
    from .tasks import TaskError
    from .zoo import WeightsUnavailable, ZooError, resolve_preprocess

    c = _container(cfg)
    try:
        settings = dict(c["ood"])
        settings["seeds"] = tuple(settings["seeds"])
        ocfg = OODConfig(**settings)
        tasks = ood_tasks(c["task"], ocfg.decision, c["target"], c.get("conditions"), c.get("datasets"))
        clf = load_classifier(c["model"], weights_of(c), resolve_preprocess(c["preprocess"], "ood"),
                              tuple(c.get("taps") or ()), c["device"], c["hub"], c.get("model_kwargs") or {})
    except (ZooError, WeightsUnavailable, TaskError, ValueError, TypeError) as e:
        _fail(str(e))
    for task in tasks:
        try:
            summ = run_ood(task, clf, c["model"], ocfg, c["out"], c["cache_dir"], c["batch_size"], c["device"],
                           c["progress"], config_extra={"zoo": (c.get("zoo") or {}).get("name")})
        except (ValueError, RuntimeError) as e:
            _fail(str(e))
        r = summ.iloc[0]
        print(f"{c['model']} {task.name}: accuracy {r.accuracy:.3f} [{r.accuracy_ci_low:.3f}, {r.accuracy_ci_high:.3f}] "
              f"top-5 {r.top5_accuracy:.3f} over {int(r.n)} images ({ocfg.decision}, {ocfg.aggregation})")
    print(f"trials in {c['out']}; compare with humans: python -m eval stats results={c['out']} humans=<model-vs-human trials>")


@command("decoder", "decoders at several depths          model=<id> task=<generated dir> decoder.targets=[col] out=<dir>",
         settings="eval.decoders:DecoderConfig")
def decoder_job(cfg) -> None:
    from .cli import _load
    from .decoders import DecoderConfig, decoder_features, load_decoder_data, run_decoders
    from .embeddings import EmbeddingError
    from .tasks import TaskError
    from .zoo import WeightsUnavailable, ZooError

    c = _container(cfg)
    try:
        settings = dict(c["decoder"])
        for k in ("seeds", "targets", "train_conditions", "test_conditions", "features"):
            settings[k] = tuple(settings.get(k) or ())
        dcfg = DecoderConfig(**settings)
        data = load_decoder_data(c["task"], dcfg)
        loaded = _load(c, "generated", extraction_only=True)
        X, key = decoder_features(loaded, data, dcfg, c["cache_dir"], c["batch_size"], c["device"], c["progress"])
        summ = run_decoders(data, X, key, c["model"], dcfg, c["out"], loaded.run_identity(),
                            c.get("epochs_per_invocation"), {"zoo": (c.get("zoo") or {}).get("name")})
    except (ZooError, WeightsUnavailable, TaskError, EmbeddingError, ValueError, TypeError) as e:
        _fail(str(e))
    if summ is None:
        print(f"paused after {c['epochs_per_invocation']} epoch(s); run the same command again to resume")
        return
    for _, r in summ.iterrows():
        print(f"{c['model']} {r.feature} seed {r.seed} {r.condition} {r.target}: {r.metric} {r.value:.3f} "
              f"[{r.ci_low:.3f}, {r.ci_high:.3f}] (n={r.n}, best epoch {r.best_epoch})")


@command("similarity", "similarity judgment per layer       model=<id> task=<generated dir> similarity.reference=<level> out=<dir>",
         settings="eval.similarity:SimilarityConfig", required=("reference",))
def similarity_job(cfg) -> None:
    from .cli import _load
    from .similarity import SimilarityConfig, run_similarity
    from .tasks import TaskError
    from .zoo import WeightsUnavailable, ZooError

    c = _container(cfg)
    try:
        settings = dict(c["similarity"])
        for k in ("comparisons", "match", "layers", "scale"):
            settings[k] = tuple(settings.get(k) or ())
        scfg = SimilarityConfig(**settings)
        loaded = _load(c, "generated")
        out = run_similarity(loaded, c["task"], c["model"], scfg, c["out"], {"zoo": (c.get("zoo") or {}).get("name")})
    except (ZooError, WeightsUnavailable, TaskError, ValueError, TypeError) as e:
        _fail(str(e))
    s = out["summary"]
    last = s[s["layer_index"] == s["layer_index"].max()]
    for _, r in last.iterrows():
        print(f"{c['model']} {r.layer} {r.comparison_level}: mean {scfg.metric} distance {r.mean_distance:.4f} "
              f"[{r.ci_low:.4f}, {r.ci_high:.4f}] over {r.n} pairs")
    print(f"{len(out['distances'])} distances ({s['layer'].nunique()} layers) in {c['out']}/similarity/")

"""``python -m eval diffusion`` and ``python -m eval vlm``: the zero-shot methods' commands (Hydra configs
``configs/eval_diffusion.yaml`` and ``configs/eval_vlm.yaml``; sweeps and results folders as ``eval probe``)."""
from __future__ import annotations

from .cli import _container, _fail, _task, command


def _zero_shot_task(c: dict):
    from .tasks import TaskError

    try:
        return _task(c)
    except (TaskError, ValueError) as e:
        _fail(str(e))


@command("diffusion", "diffusion zero-shot classifier      model=diffusion:<folder> task=<dataset dir> out=<results dir>",
         settings="eval.diffusion:DiffusionConfig")
def diffusion_job(cfg) -> None:
    from .diffusion import (DiffusionConfig, DiffusionError, check_schedule, class_prompts, load_diffusion,
                            parse_model_id, run_diffusion, scheduler_timesteps)
    from .probe import seed_summary

    c = _container(cfg)
    task = _zero_shot_task(c)
    try:
        settings = dict(c["diffusion"])
        dcfg = DiffusionConfig(**settings)
        class_prompts(task, dcfg)  # a task without prompts, or a schedule that does not fit it, fails before the
        # model loads; T from the folder's scheduler config when it has one (the loaded model's own limits are
        # checked again in DiffusionMethod)
        check_schedule(dcfg, len(task.classes), scheduler_timesteps(parse_model_id(c["model"])))
        if c.get("threads"):
            import torch

            torch.set_num_threads(int(c["threads"]))
        model = load_diffusion(parse_model_id(c["model"]), c["device"])
        summ = run_diffusion(task, model, c["model"], dcfg, c["out"], progress=c["progress"])
    except (DiffusionError, ValueError, TypeError) as e:
        _fail(str(e))
    for _, r in seed_summary(summ, dcfg.ci).iterrows():
        print(f"{r.model_id} {r.task} {r.split}: accuracy {r.accuracy_mean:.3f} over {r.seeds} seed(s) "
              f"({dcfg.schedule_text()}, weighting {dcfg.weighting})")


@command("vlm", "VLM prompting (3D-PC protocol)      model=openai:<m>|anthropic:<m>|gemini:<m> task=<dir> out=<dir>",
         settings="eval.vlm.run:VLMConfig")
def vlm_job(cfg) -> None:
    import sys
    from pathlib import Path

    from infra.files import write_table

    from .results import config_digest
    from .vlm import RequestSettings, VLMConfig, protocol_summary, run_vlm
    from .vlm.run import check_best_of, check_temperatures

    c = _container(cfg)
    task = _zero_shot_task(c)
    try:
        check_best_of(c["best_of"])  # the sweep's settings before any run (run_vlm checks every temperature)
        if c["temperatures"] is not None:
            check_temperatures(c["temperatures"])
        settings = dict(c["vlm"])
        settings["seeds"] = tuple(settings["seeds"])
        vcfg = VLMConfig(**settings)
        req = RequestSettings(**dict(c["requests"]))
        summ, methods = run_vlm(task, c["model"], vcfg, c["out"], req, temperatures=c["temperatures"],
                                progress=c["progress"])
    except (ValueError, TypeError, OSError) as e:
        _fail(str(e))
    sent = sum(m.dispatcher.requests for m in methods)
    tokens = (sum(m.dispatcher.input_tokens for m in methods), sum(m.dispatcher.output_tokens for m in methods))
    costs = [m.dispatcher.cost() for m in methods]
    cost = f"${sum(costs):.4f}" if all(x == x for x in costs) else "not estimated (set requests.price_*_per_mtok)"
    print(f"requests sent: {sent}; tokens in/out: {tokens[0]}/{tokens[1]}; cost: {cost}")
    if summ is None:
        errors = sorted({e for m in methods for e in m.last_errors})
        budget = all("budget" in e for e in errors)
        print(("paused: the request budget is spent" if budget else "paused: some requests failed") +
              "; finished replies are cached, run the same command again to resume", file=sys.stderr)
        for e in errors[:5]:
            print(f"  {e}", file=sys.stderr)
        if not budget:
            raise SystemExit(1)
        return
    for _, r in summ.iterrows():
        print(f"{r.model_id} {r.task} {r.split} t={r.temperature:g} seed={r.seed}: accuracy {r.accuracy:.3f} "
              f"(parsed exact {r.n_exact}, alias {r.n_alias}, refusal {r.n_refusal}, unparseable {r.n_unparseable}; "
              f"{r.requests} requests, {r.cache_hits} cached)")
    prot = protocol_summary(summ, int(c["best_of"]))
    stem = Path(c["out"]) / "vlm" / f"protocol__{config_digest({'model': c['model'], 'task': task.name, 'vlm': settings, 't': c['temperatures']})}"
    stem.parent.mkdir(parents=True, exist_ok=True)
    write_table(prot, stem)
    best = int(c["best_of"])
    for _, r in prot.iterrows():
        print(f"{r.model_id} {r.task} {r.split}: best {best} of {r.runs} runs {r[f'best{best}_mean']:.3f} "
              f"(the paper's figure); all runs {r.all_runs_mean:.3f} [{r.all_runs_min:.3f}, {r.all_runs_max:.3f}]")
    print(f"protocol summary: {stem}.csv")

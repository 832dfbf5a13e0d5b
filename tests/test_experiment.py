"""The web experiment (experiment/): designs, per-participant plans, the HTTP API against SQLite and a
throwaway PostgreSQL cluster, bad input, resume, concurrency, rate limits, export → `eval stats`."""
import os
import secrets
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np
import pandas as pd
import pytest
import yaml
from sqlalchemy import func, inspect, select

from experiment import db as D
from experiment.app import RateLimiter, create_app
from experiment.design import DesignError, design_from_config
from experiment.simulate import LocalServer, ScriptedParticipant, TemporaryPostgres, make_demo_dataset
from experiment.study import StudyError, load_stimuli, open_study, participant_seed, plan_trials

ROOT = Path(__file__).resolve().parents[1]
ADMIN = "admin-" + secrets.token_hex(8)


def design(**over):
    cfg = yaml.safe_load((ROOT / "configs/experiment/design/3dpc_vpt.yaml").read_text())
    cfg.update({"n_practice": 4, "n_attention": 1, "feedback_ms": 0, "iti_ms": 0, **over})
    return design_from_config(cfg)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return make_demo_dataset(tmp_path_factory.mktemp("exp") / "ds")


@pytest.fixture(scope="module")
def postgres():
    try:
        with TemporaryPostgres() as pg:
            yield pg
    except RuntimeError as e:
        pytest.skip(f"no local PostgreSQL cluster: {e}")


@pytest.fixture(params=["sqlite", "postgresql"])
def db_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/study.db"
    return request.getfixturevalue("postgres").url()


def serve(dataset, url, limits=None, **over):
    study = open_study(dataset, design(**over), url)
    return study, create_app(study, ADMIN, limits or {"session_rate": 1000, "session_burst": 1000,
                                                      "api_rate": 1000, "api_burst": 1000})


def trial_rows(study, pseudonym=None):
    P, T = D.participants, D.trials
    q = select(T, P.c.pseudonym).select_from(T.join(P, T.c.participant_id == P.c.id)).order_by(T.c.participant_id,
                                                                                                 T.c.position)
    if pseudonym:
        q = q.where(P.c.pseudonym == pseudonym)
    with study.engine.connect() as c:
        return pd.DataFrame(c.execute(q).mappings().all())


def oracle(study, correct_if=lambda item_id: True):
    """An answer policy that knows the labels (from the database) and is right exactly where
    ``correct_if(item_id)`` says so; attention checks always right."""
    def answer(t, part):
        with study.engine.connect() as c:
            row = c.execute(select(D.trials).where(D.trials.c.public_id == t["trial_id"])).first()
        by_label = {k["label"]: k["key"] for k in study.keys(_swap(study, part))}
        right = row.block == "attention" or correct_if(row.item_id)
        other = next(label for label in by_label if label != row.label)
        return by_label[row.label if right else other]
    return answer


def _swap(study, part):
    with study.engine.connect() as c:
        return c.execute(select(D.participants.c.swap_keys).where(D.participants.c.token_hash == __import__(
            "hashlib").sha256(part.token.encode()).hexdigest())).scalar()


# -------------------------------------------------------------------------------------------------------
# designs and plans


def test_design_errors_name_field_and_value(dataset):
    with pytest.raises(DesignError, match=r"design\.choices\[0\]\.key='Left'"):
        design(choices=[{"label": "1", "key": "Left", "text": "a"}, {"label": "0", "key": "f", "text": "b"}])
    with pytest.raises(DesignError, match=r"practice_split='human' equals design.split"):
        design(practice_split="human")
    with pytest.raises(DesignError, match=r"unknown field\(s\) \['n_trials'\]"):
        design(n_trials=3)
    with pytest.raises(DesignError, match=r"design\.stimulus_ms=900 exceeds design\.deadline_ms=500"):
        design(stimulus_ms=900, deadline_ms=500)
    with pytest.raises(StudyError, match=r"design\.n_test=99: split 'human' has only 12 images"):
        load_stimuli(dataset, design(n_test=99))
    with pytest.raises(StudyError, match=r"labels \['0', 'x'\] do not match the classes of 3dpc/vpt"):
        load_stimuli(dataset, design(choices=[{"label": "x", "key": "f", "text": "a"},
                                              {"label": "0", "key": "j", "text": "b"}]))


def test_plan_pure_balanced_counterbalanced(dataset):
    d = design(n_practice=6, n_attention=2)
    stim = load_stimuli(dataset, d)
    test_ids = set(stim.test["item_id"])
    swaps = []
    for k in range(60):
        seed = participant_seed(d.seed, f"p{k}")
        plan, swap = plan_trials(stim, d, seed)
        assert (plan, swap) == plan_trials(stim, d, seed)  # pure: the plan follows from the seed alone
        swaps.append(swap)
        practice = [t for t in plan if t["block"] == "practice"]
        test = [t for t in plan if t["block"] == "test"]
        assert [t["block"] for t in plan[:6]] == ["practice"] * 6
        assert sorted(t["label"] for t in practice) == ["0", "0", "0", "1", "1", "1"]  # class-balanced
        assert not {t["item_id"] for t in practice} & test_ids  # practice never shows a test image
        assert sorted(t["item_id"] for t in test) == sorted(test_ids)  # every test image exactly once
        assert sum(t["block"] == "attention" for t in plan) == 2
    orders = {tuple(t["item_id"] for t in plan_trials(stim, d, participant_seed(0, f"p{k}"))[0]) for k in range(10)}
    assert len(orders) == 10  # randomised per participant
    assert 15 <= sum(swaps) <= 45  # keys swapped for about half the participants (binomial 60, 0.5: p < 1e-4 outside)


def test_alembic_schema_equals_tables(tmp_path):
    engine = D.make_engine(f"sqlite:///{tmp_path}/m.db")
    D.migrate(engine)
    D.migrate(engine)  # idempotent
    insp = inspect(engine)
    for table in D.metadata.sorted_tables:
        got = {c["name"]: (type(c["type"]).__name__, c["nullable"]) for c in insp.get_columns(table.name)}
        want = {c.name: (type(c.type).__name__, c.nullable) for c in table.columns}
        assert {k: v[1] for k, v in got.items()} == {k: v[1] for k, v in want.items()}, table.name
        assert set(got) == set(want)
    assert {tuple(u["column_names"]) for u in insp.get_unique_constraints("trials")} >= {("participant_id", "position")}


# -------------------------------------------------------------------------------------------------------
# the HTTP API on both back-ends


def test_no_label_reaches_the_browser(dataset, tmp_path):
    study, app = serve(dataset, f"sqlite:///{tmp_path}/s.db", n_attention=0)
    with LocalServer(app) as url:
        page = httpx.get(url + "/").text + httpx.get(url + "/static/app.js").text
        p = ScriptedParticipant(url, "PID-1")
        start = p.start()
        p._call("POST", "/api/consent")
        t = p._call("GET", "/api/next").json()
        img = p._call("GET", f"/api/stimulus/{t['trial_id']}")
        row = trial_rows(study).iloc[0]
        api = repr(start) + repr(t) + repr(dict(img.headers))
        for secret_text in (row["item_id"], Path(row["item_id"]).name, "scene_"):
            assert secret_text not in api + page, secret_text
        assert "'label'" not in api and "'item_id'" not in api  # the API has no label or image field at all
        assert img.content == Path(study.paths[row["item_id"]]).read_bytes()
        # the image of a trial not yet served cannot be fetched (no peeking ahead)
        nxt = trial_rows(study).iloc[1]["public_id"]
        assert p._call("GET", f"/api/stimulus/{nxt}").status_code == 409


def test_resume_after_closing_and_no_second_attempt(dataset, db_url):
    study, app = serve(dataset, db_url)
    with LocalServer(app) as url:
        first = ScriptedParticipant(url, "PID-resume")
        first.run(rt_ms=2, max_trials=7)  # 4 practice + 3 test answers, then the tab closes
        ps = study.pseudonym("PID-resume")
        rows = trial_rows(study, ps)
        assert rows["response"].notna().sum() == 7 and rows["response"].iloc[:7].notna().all()
        again = ScriptedParticipant(url, "PID-resume")  # a new browser: no cookies, same link
        again.start()
        t = again._call("GET", "/api/next").json()
        assert t["trial_id"] == rows["public_id"].iloc[7]  # resumes at the next trial
        assert first._call("GET", "/api/next").status_code == 401  # the old tab's session is void
        done = again.run(rt_ms=2)
        rows = trial_rows(study, ps)
        assert rows["response"].notna().all() and len(rows) == 4 + 12 + 1
        assert not rows.duplicated("position").any()
        assert done["state"] == "done" and done["code"] == study.completion_code(ps)
        # feedback (correctness) comes back for practice answers only, never in the test block
        answers = first.answered + again.answered
        assert all(("feedback" in a["result"]) == (a["block"] == "practice") for a in answers)
        assert sum(a["block"] == "practice" for a in answers) == 4
        third = ScriptedParticipant(url, "PID-resume")  # returning after completion: no second attempt
        third.start()
        assert third._call("GET", "/api/next").json()["state"] == "done"
        r = third._call("POST", "/api/response", json={"trial_id": rows["public_id"].iloc[-1], "key": "ArrowLeft",
                                                         "rt_ms": 1.0})
        assert r.status_code == 409 and "already completed" in r.json()["error"]
        assert len(trial_rows(study)) == len(rows)  # no second plan was created


def test_bad_input_is_refused_and_nothing_stored(dataset, db_url):
    study, app = serve(dataset, db_url)
    with LocalServer(app) as url:
        a, b = ScriptedParticipant(url, "PID-a"), ScriptedParticipant(url, "PID-b")
        for p in (a, b):
            p.start()
            p._call("POST", "/api/consent")
        ta = a._call("GET", "/api/next").json()
        tb = b._call("GET", "/api/next").json()
        key = a.keys[0]["key"]
        before = trial_rows(study)

        def post(p, body=None, **kw):
            return p._call("POST", "/api/response", json=body, **kw)
        cases = [
            (post(a, {"trial_id": secrets.token_hex(16), "key": key, "rt_ms": 1.0}), 403, "not a trial of this participant"),
            (post(a, {"trial_id": tb["trial_id"], "key": key, "rt_ms": 1.0}), 403, "not a trial of this participant"),
            (post(a, {"trial_id": "../../etc/passwd", "key": key, "rt_ms": 1.0}), 400, "not a trial id"),
            (a._call("POST", "/api/response", content=b"{not json", headers={"Content-Type": "application/json"}),
             422, "invalid request"),
            (post(a, {"trial_id": ta["trial_id"], "key": key, "rt_ms": 1.0, "correct": True}), 422, "invalid request"),
            (post(a, {"trial_id": ta["trial_id"], "key": "q", "rt_ms": 1.0}), 400, "not an answer key"),
            (post(a, {"trial_id": ta["trial_id"], "key": key, "rt_ms": -5}), 400, "rt_ms=-5"),
            (post(a, {"trial_id": ta["trial_id"], "key": key, "rt_ms": 600_000}), 400, "longer than"),
            (post(a, {"trial_id": ta["trial_id"], "key": None, "rt_ms": 1.0}), 400, "no response deadline"),
            (post(a, {"trial_id": before.loc[before["public_id"] != ta["trial_id"]].query(
                "pseudonym == @study.pseudonym('PID-a')")["public_id"].iloc[1], "key": key, "rt_ms": 1.0}), 409,
             "not shown yet"),
            (httpx.post(url + "/api/response", json={"trial_id": ta["trial_id"], "key": key, "rt_ms": 1.0}), 401,
             "session token"),
            (httpx.get(url + "/admin/status"), 401, "Bearer"),
            (httpx.get(url + "/admin/export", headers={"Authorization": "Bearer wrong"}), 401, "Bearer"),
        ]
        for r, status, text in cases:
            assert r.status_code == status and text in r.json()["error"], (r.status_code, r.text)
        pd.testing.assert_frame_equal(trial_rows(study), before)  # nothing stored by any refused request
        time.sleep(0.01)
        ok = post(a, {"trial_id": ta["trial_id"], "key": key, "rt_ms": 5.0})
        assert ok.status_code == 200 and ok.json()["feedback"] in ("correct", "incorrect")
        replay = post(a, {"trial_id": ta["trial_id"], "key": a.keys[1]["key"], "rt_ms": 6.0})
        assert replay.status_code == 409 and "already answered" in replay.json()["error"]
        row = trial_rows(study).query("public_id == @ta['trial_id']").iloc[0]
        assert row["response_key"] == key and row["rt_ms"] == 5.0  # the replay changed nothing
        status = httpx.get(url + "/admin/status", headers={"Authorization": f"Bearer {ADMIN}"}).json()
        assert status["responses"] == 1 and status["participants"] == 2


def test_missing_dataset_and_bad_db_clear_errors(tmp_path, dataset, python_m):
    """The refusals of ``python -m experiment`` (forked from a warm server, tests/conftest.py: python_m; a real
    interpreter runs the CLI in test_export_then_eval_stats_end_to_end)."""
    with pytest.raises(StudyError, match=r"task=.*nope: no such dataset folder"):
        open_study(tmp_path / "nope", design(), f"sqlite:///{tmp_path}/x.db")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = python_m("experiment", "serve", f"task={tmp_path / 'nope'}", f"db=sqlite:///{tmp_path}/x.db", cwd=tmp_path,
                 env=env, timeout=120)
    assert p.returncode == 2 and p.stderr.startswith("error: task=") and "Traceback" not in p.stderr
    p = python_m("experiment", "serve", f"task={dataset}", "design.n_practice=-1", cwd=tmp_path, env=env, timeout=120)
    assert p.returncode == 2 and "design.n_practice=-1" in p.stderr and "Traceback" not in p.stderr
    p = python_m("experiment", "export", "db=nosuchdb://x", f"out={tmp_path}/o", cwd=tmp_path, env=env, timeout=120)
    assert p.returncode == 2 and p.stderr.startswith("error: db=nosuchdb://x") and "Traceback" not in p.stderr
    assert not (tmp_path / "x.db").exists()  # nothing created for a refused start
    # a changed design under the same study name is refused, not mixed into the old one
    url = f"sqlite:///{tmp_path}/d.db"
    open_study(dataset, design(), url)
    with pytest.raises(StudyError, match="different design; give the changed design a new name"):
        open_study(dataset, design(n_practice=2), url)


def test_deadline_records_na_as_error(dataset, tmp_path):
    study, app = serve(dataset, f"sqlite:///{tmp_path}/s.db", deadline_ms=50, n_practice=0, n_attention=0)
    with LocalServer(app) as url:
        p = ScriptedParticipant(url, "PID-slow")
        p.run(answer=lambda t, part: None, rt_ms=50.0, max_trials=2)
    rows = trial_rows(study).dropna(subset=["response"])
    assert list(rows["response"]) == ["na", "na"] and not rows["correct"].any()


def test_rate_limits(dataset, tmp_path):
    lim = RateLimiter(rate=2.0, burst=3)
    assert [lim.allow("k", now=0.0) for _ in range(4)] == [True, True, True, False]
    assert lim.allow("k", now=0.5) and not lim.allow("k", now=0.5)  # 2/s refills one token in 0.5 s
    assert lim.allow("other", now=0.5)  # buckets are per key
    study, app = serve(dataset, f"sqlite:///{tmp_path}/s.db", limits={"session_rate": 0.01, "session_burst": 2,
                                                                       "api_rate": 0.01, "api_burst": 3})
    with LocalServer(app) as url:
        c = httpx.Client(base_url=url)
        codes = [c.post("/api/session", json={"participant": f"P{i}"}).status_code for i in range(3)]
        assert codes == [200, 200, 429]
        tok = c.post("/api/session", json={"participant": "P0"})  # still limited for this address
        assert tok.status_code == 429
        p = ScriptedParticipant(url, "P0", client=c)
        p.token = "x" * 20
        codes = [c.get("/api/next", headers={"X-Session": p.token}).status_code for _ in range(4)]
        assert codes == [401, 401, 401, 429]


def test_concurrent_participants_nothing_lost_or_duplicated(dataset, db_url):
    """24 participants at once (the 200-participant version is the slow test and benchmarks/experiment_load.py)."""
    study, app = serve(dataset, db_url, n_attention=0)
    n = 24
    parts, errors = [], []
    with LocalServer(app) as url:
        client = httpx.Client(base_url=url, timeout=60, limits=httpx.Limits(max_connections=n))

        def go(i):
            try:
                p = ScriptedParticipant(url, f"PID-{i:03d}", client=client)
                p.run(rt_ms=1.0)
                parts.append(p)
            except Exception as e:  # noqa: BLE001 - collected and asserted below
                errors.append(repr(e))
        threads = [threading.Thread(target=go, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    assert not errors, errors[:3]
    rows = trial_rows(study)
    assert rows["pseudonym"].nunique() == n and len(rows) == n * 16
    assert rows["response"].notna().all() and not rows.duplicated(["participant_id", "position"]).any()
    assert sum(len(p.answered) for p in parts) == len(rows)  # every answer acknowledged was stored, once
    got = rows.set_index("public_id")["response_key"]
    assert all(got[a["trial_id"]] == a["key"] for p in parts for a in p.answered)
    with study.engine.connect() as c:
        assert c.execute(select(func.count()).where(D.participants.c.completed_at.is_not(None))).scalar() == n


# -------------------------------------------------------------------------------------------------------
# export → eval stats


def test_export_then_eval_stats_end_to_end(dataset, tmp_path):
    db = f"sqlite:///{tmp_path}/s.db"
    study, app = serve(dataset, db)
    items = sorted(study.stim.test["item_id"])
    policies = {  # which test images each scripted participant answers correctly
        "PID-perfect": set(items),
        "PID-first-half": set(items[:6]),
        "PID-even": set(items[::2]),
    }
    with LocalServer(app) as url:
        for pid, right in policies.items():
            ScriptedParticipant(url, pid).run(answer=oracle(study, lambda i, r=right: i in r), rt_ms=3.0)
        ScriptedParticipant(url, "PID-unfinished").run(rt_ms=1.0, max_trials=6)
    res = tmp_path / "results"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    p = subprocess.run([sys.executable, "-m", "experiment", "export", f"db={db}", f"out={res}"], capture_output=True,
                       text=True, env=env, timeout=120, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "wrote 3 participant trial table(s) (36 trials" in p.stdout
    from eval.results import TRIAL_DTYPES, read_results, write_part

    trials = read_results(res, "trials")
    assert {k: str(trials.dtypes[k]) for k in TRIAL_DTYPES} == TRIAL_DTYPES
    assert len(trials) == 36 and set(trials["split"]) == {"human"} and set(trials["task"]) == {"3dpc/vpt"}
    assert (trials["rt"] == 0.003).all()
    # a model whose answers are known too: right on the first 9 images
    truth = dict(zip(study.stim.test["item_id"], study.stim.test["label"]))
    model = pd.DataFrame({"observer": "toy", "observer_type": "model", "model_id": "toy", "task": "3dpc/vpt",
                          "split": "human", "method": "probe", "seed": 0, "item_id": items, "condition": "",
                          "label": [truth[i] for i in items], "score": 0.9, "run_id": "toy",
                          "response": [truth[i] if k < 9 else str(1 - int(truth[i])) for k, i in enumerate(items)]})
    model["correct"] = model["response"] == model["label"]
    write_part(res, "trials", "toy", model)
    p = subprocess.run([sys.executable, "-m", "eval", "stats", f"results={res}", "split=human", "n_boot=200",
                        "n_perm=50"], capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    obs = pd.read_parquet(res / "stats" / "observers.parquet")
    humans = {study.pseudonym(pid): right for pid, right in policies.items()}
    for ps, right in humans.items():
        assert obs.set_index("observer").loc[ps, "accuracy"] == pytest.approx(len(right) / 12)

    def kappa(a, b):
        ca, cb = np.array([i in a for i in items]), np.array([i in b for i in items])
        pa, pb, obs_ = ca.mean(), cb.mean(), (ca == cb).mean()
        exp = pa * pb + (1 - pa) * (1 - pb)
        return np.nan if exp == 1 else (obs_ - exp) / (1 - exp)
    pairs = [(a, b) for k, a in enumerate(policies.values()) for b in list(policies.values())[k + 1:]]
    expected_ceiling = np.nanmean([kappa(a, b) for a, b in pairs])
    ceil = pd.read_parquet(res / "stats" / "human_ceiling.parquet")
    assert ceil["kappa_mean"].iloc[0] == pytest.approx(expected_ceiling)
    ec = pd.read_parquet(res / "stats" / "error_consistency.parquet").set_index("human")
    toy = set(items[:9])
    for ps, right in humans.items():
        want = kappa(toy, right)
        assert (np.isnan(want) and np.isnan(ec.loc[ps, "kappa"])) or ec.loc[ps, "kappa"] == pytest.approx(want)
    part = pd.read_csv(res / "humans" / "3dpc_vpt_participants.csv")
    assert part["completed"].sum() == 3 and len(part) == 4 and (part.loc[part["completed"], "attention_accuracy"] == 1).all()
    # re-export: finished parts are never rewritten
    p = subprocess.run([sys.executable, "-m", "experiment", "export", f"db={db}", f"out={res}"], capture_output=True,
                       text=True, env=env, timeout=120, cwd=tmp_path)
    assert p.returncode == 0 and "wrote 0 participant trial table(s) (0 trials; 3 already present)" in p.stdout


@pytest.mark.slow
def test_200_participants_at_once(dataset, db_url):
    """The issue's load test: 200 participants at once against a server process, bounded in time (figures:
    benchmarks/experiment_load.py, docs/benchmarks.md)."""
    from experiment.simulate import run_load

    cfg = yaml.safe_load((ROOT / "configs/experiment/design/3dpc_vpt.yaml").read_text())
    cfg.update(n_practice=4, n_attention=1, feedback_ms=0, iti_ms=0)
    r = run_load(dataset, cfg, db_url, 200, rt_ms=20.0, deadline_s=600.0)
    assert not r["errors"] and r["timed_out"] == 0 and r["finished"] == 200, r["errors"][:3]
    assert r["acknowledged"] == r["stored"] == 200 * 17 and r["duplicates"] == 0 and r["completed"] == 200
    assert np.percentile(r["latencies_s"], 95) < 10.0  # generous: a shared 2-core machine


def test_generated_2d_dataset_as_experiment(tmp_path):
    """A dataset from the 2D writer (annotations table) with the `generated` design: whole vs corner-degraded
    polygons; the export's item ids are load_task's, so model and human rows align."""
    from eval.tasks import load_task
    from experiment.export import trial_table
    from tasks.stimuli import write_dataset

    out = write_dataset("degraded_polygons", tmp_path / "poly", {"per_class": 4, "levels": [0.5], "size": 64,
                                                                 "classes": ["triangle", "square"],
                                                                 "variants": ["whole", "corners"]}, progress=False)
    cfg = yaml.safe_load((ROOT / "configs/experiment/design/generated.yaml").read_text())
    cfg.update(conditions=["whole", "corners_p0.50"], n_practice=2, n_attention=0, feedback_ms=0, iti_ms=0,
               choices=[{"label": "whole", "key": "f", "text": "complete"},
                        {"label": "corners_p0.50", "key": "j", "text": "degraded"}])
    study = open_study(out, design_from_config(cfg), f"sqlite:///{tmp_path}/g.db")
    task = load_task(out, "condition", conditions=["whole", "corners_p0.50"])
    test = task.split("test")
    assert sorted(study.stim.test["item_id"]) == sorted(test["item_id"]) and len(test) > 0
    with LocalServer(create_app(study, ADMIN)) as url:
        ScriptedParticipant(url, "PID-2d").run(answer=oracle(study), rt_ms=1.0)
    t = trial_table(study.engine)
    assert len(t) == len(test) and t["correct"].all() and set(t["task"]) == {task.name}
    assert dict(zip(t["item_id"], t["label"])) == dict(zip(test["item_id"], test["label_name"]))

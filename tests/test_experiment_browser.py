"""A real headless Chromium (Debian's, driven by Playwright; no browser download) goes through the whole
experiment by key presses: consent, instructions, practice with feedback, test without feedback, the
completion code; then closes mid-block, reopens the link and resumes. The database must hold exactly the
keys pressed, once each, with browser-measured RTs."""
import asyncio
import os
import shutil
import tempfile
from pathlib import Path

import pytest

from test_experiment import ADMIN, design, trial_rows  # noqa: F401 - shared helpers
from experiment.app import create_app
from experiment.simulate import LocalServer, make_demo_dataset
from experiment.study import open_study

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]
SHOTS = Path(os.environ.get("VANTAGE_SCREENSHOTS", tempfile.gettempdir())) / "vantage-experiment"

playwright_api = pytest.importorskip("playwright.sync_api", reason="playwright (Python package) not installed")
if not Path(CHROMIUM).is_file():
    pytest.skip("Debian chromium not installed (make debs)", allow_module_level=True)


@pytest.fixture
def browser():
    with playwright_api.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        yield b
        b.close()


def _slow_examples(app, seconds=0.5):
    """Serve the instruction examples late, as a loaded server or a slow network does."""
    @app.middleware("http")
    async def late(request, call_next):
        if request.url.path.startswith("/api/example/"):
            await asyncio.sleep(seconds)
        return await call_next(request)


def _press_through(page, keys_pressed, n, study, shot=None):
    """Answer ``n`` trials by key presses, alternating the two answer keys; record (block, key)."""
    for k in range(n):
        page.wait_for_function("['trial','attention','test-start','rest','welcome-back'].includes(document.body.dataset.state)")
        state = page.evaluate("document.body.dataset.state")
        if state in ("test-start", "rest", "welcome-back"):
            page.keyboard.press("Space")
            page.wait_for_function("['trial','attention'].includes(document.body.dataset.state)")
        page.wait_for_function("document.body.dataset.onset && document.body.dataset.onset != window.__last")
        page.evaluate("window.__last = document.body.dataset.onset")
        block = page.evaluate("document.body.dataset.block")
        if shot and k == 0:
            page.screenshot(path=str(shot))
        key = ["ArrowLeft", "ArrowRight"][k % 2]
        page.wait_for_timeout(30)  # a person takes a moment after onset; the RT must include it
        page.keyboard.press(key)
        if block == "practice":
            page.wait_for_selector("#feedback")  # feedback is shown on practice trials
            keys_pressed.append(("practice", key, page.inner_text("#feedback")))
        else:
            page.wait_for_function("['recorded','trial','attention','done','rest'].includes(document.body.dataset.state)")
            assert page.query_selector("#feedback") is None  # never feedback in the test block
            keys_pressed.append(("test", key, None))


def test_browser_session_by_key_presses_and_resume(browser, tmp_path):
    SHOTS.mkdir(parents=True, exist_ok=True)
    ds = make_demo_dataset(tmp_path / "ds", size=128)
    study = open_study(ds, design(n_practice=4, n_attention=0, feedback_ms=300, iti_ms=150, rest_every=5,
                                  image_px=256), f"sqlite:///{tmp_path}/s.db")
    app = create_app(study, ADMIN)
    # the page must report the instructions as shown (and so take the key press) only once they are on
    # screen: late example images once lost the Space press in CI (the examples check was vacuously true)
    _slow_examples(app)
    link_params = "?PROLIFIC_PID=browser-pid-1&STUDY_ID=st1&SESSION_ID=se1"
    pressed = []
    with LocalServer(app) as url:
        ctx = browser.new_context(viewport={"width": 1000, "height": 800})
        page = ctx.new_page()
        page.goto(url + "/" + link_params)
        page.wait_for_selector("#agree")
        assert page.evaluate("document.body.dataset.state") == "consent"
        page.keyboard.press("Enter")
        page.wait_for_function("document.body.dataset.state == 'instructions'")
        page.wait_for_function("[...document.querySelectorAll('.examples img')].every(i => i.complete && i.naturalWidth > 0)")
        page.screenshot(path=str(SHOTS / "instructions.png"))
        page.keyboard.press("Space")
        _press_through(page, pressed, 4 + 3, study, shot=SHOTS / "practice_trial.png")  # practice + 3 test
        page.wait_for_function("document.body.dataset.state == 'recorded' || document.body.dataset.state == 'trial'")
        ctx.close()  # the participant closes the browser in the middle of the test block

        ctx = browser.new_context(viewport={"width": 1000, "height": 800})  # fresh profile: no storage
        page = ctx.new_page()
        page.goto(url + "/" + link_params)
        page.wait_for_function("document.body.dataset.state == 'welcome-back'")
        rows = trial_rows(study)
        assert rows["response"].notna().sum() == 7  # nothing lost
        _press_through(page, pressed, 12 - 3, study, shot=SHOTS / "test_trial.png")
        page.wait_for_selector("#code")
        code = page.inner_text("#code")
        page.screenshot(path=str(SHOTS / "completion.png"))
        ctx.close()
    rows = trial_rows(study)
    ps = study.pseudonym("browser-pid-1")
    assert code == study.completion_code(ps)
    assert len(rows) == 16 and rows["response"].notna().all() and not rows.duplicated("position").any()
    # exactly the keys pressed, in order, with RTs that include the deliberate 30 ms pause
    assert list(zip(rows["block"], rows["response_key"])) == [(b, k) for b, k, _ in pressed]
    assert (rows["rt_ms"] >= 29).all() and (rows["rt_ms"] <= rows["server_ms"] + 1000).all()
    # the feedback shown matched the stored correctness on every practice trial
    prac = rows[rows["block"] == "practice"]
    assert [("Correct!" if c else "Incorrect") for c in prac["correct"]] == [f for b, _, f in pressed if b == "practice"]
    assert not rows["correct"].isna().any()

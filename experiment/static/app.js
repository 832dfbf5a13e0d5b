// Vantage experiment page: plain JavaScript, no third-party code. The server owns the plan: this page
// asks for one trial at a time (an opaque id), shows its image, and posts the key and reaction time.
// Labels never reach the page; practice feedback comes back only after the answer is stored.
"use strict";
(() => {
  const screen = document.getElementById("screen");
  const overlay = document.getElementById("overlay");
  const progressLabel = document.getElementById("progress-label");
  const params = new URLSearchParams(location.search);
  const P = window.VANTAGE_PARAMS || {};
  let token = null, keys = [], design = {}, examples = [];
  let keyHandler = null;  // the one active keydown handler

  const setState = (s) => { document.body.dataset.state = s; };
  const html = (s) => { screen.innerHTML = s; };
  const esc = (s) => String(s).replace(/[&<>"']/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;"}[c]));
  const keyName = (k) => ({ArrowLeft: "←", ArrowRight: "→", ArrowUp: "↑", ArrowDown: "↓", " ": "space"}[k] || k.toUpperCase());

  document.addEventListener("keydown", (e) => {
    if (e.repeat || !keyHandler || !overlay.hidden) return;
    if (["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", " "].includes(e.key)) e.preventDefault();
    keyHandler(e);
  });

  async function api(method, path, body) {
    for (let attempt = 0; ; attempt++) {
      const r = await fetch(path, {method, headers: {"Content-Type": "application/json", ...(token ? {"X-Session": token} : {})},
                                   body: body === undefined ? undefined : JSON.stringify(body)});
      if (r.status === 429 && attempt < 5) { await sleep(500 * (attempt + 1)); continue; }
      const data = await r.json().catch(() => ({error: `server answered ${r.status}`}));
      if (!r.ok) throw new Error(data.error || `server answered ${r.status}`);
      return data;
    }
  }
  const sleep = (ms) => new Promise((res) => setTimeout(res, ms));

  function fail(err) {
    setState("error");
    keyHandler = null;
    html(`<div class="panel error"><p>${esc(err.message || err)}</p><p>Your answers so far are saved. Reload the page to continue.</p></div>`);
  }

  // Wait for one of `allowed` keys (or a click on a button with data-key); resolves with the key.
  function waitKey(allowed) {
    return new Promise((resolve) => {
      keyHandler = (e) => { if (allowed.includes(e.key)) { keyHandler = null; resolve(e.key); } };
      screen.querySelectorAll("button[data-key]").forEach((b) => b.addEventListener("click", () => {
        if (keyHandler) { keyHandler = null; resolve(b.dataset.key); }
      }));
    });
  }

  function keysBar() {
    return `<div class="keys">${keys.map((k) => `<span data-key-name="${esc(k.key)}">[${esc(keyName(k.key))}] ${esc(k.text)}</span>`).join("")}</div>`;
  }

  async function blobUrl(path) {
    const r = await fetch(path, {headers: token ? {"X-Session": token} : {}});
    if (!r.ok) throw new Error((await r.json().catch(() => ({}))).error || `image: server answered ${r.status}`);
    return URL.createObjectURL(await r.blob());
  }

  function instructionsHtml(exampleUrls) {
    const figs = examples.map((e, i) => `<figure><img src="${exampleUrls[i]}" alt="example ${i + 1}"><figcaption>Answer: <b>${esc(e.answer)}</b></figcaption></figure>`).join("");
    return `<div class="panel">${design.instructions_html}<p class="question">${esc(design.question)}</p>${keysBar()}
      ${figs ? `<div class="examples">${figs}</div>` : ""}</div>`;
  }

  // data-state names the screen that is shown *and* takes keys: set once both are true, never while the
  // examples still load (an automated check that waits for "instructions" and presses Space relies on it)
  async function showInstructions(startText) {
    setState("loading");
    const urls = await Promise.all(examples.map((e) => blobUrl(`/api/example/${e.index}`)));
    html(instructionsHtml(urls) + `<p><button data-key=" ">${esc(startText)}</button></p><p>Press <b>space</b> to start.</p>`);
    const started = waitKey([" "]);
    setState("instructions");
    await started;
    urls.forEach((u) => URL.revokeObjectURL(u));
  }

  async function consent() {
    setState("consent");
    html(`<div class="panel">${design.consent_html}<button data-key="Enter" id="agree">I agree</button></div>`);
    await waitKey(["Enter"]);
    await api("POST", "/api/consent");
  }

  async function pause(state, body, keysAllowed = [" "]) {
    setState(state);
    html(`<div class="panel">${body}<p><button data-key=" ">Continue</button> (or press space)</p></div>`);
    await waitKey(keysAllowed);
  }

  async function trial(t) {
    const allowed = keys.map((k) => k.key);
    let url = null;
    if (!t.attention) url = await blobUrl(`/api/stimulus/${t.trial_id}`);
    setState(t.attention ? "attention" : "trial");
    document.body.dataset.block = t.block;
    const size = design.image_px;
    html(`<p class="question">${esc(design.question)}</p>
      <div class="stage" style="width:${size}px;height:${size}px">${t.attention
        ? `<div class="panel" id="attention">${esc(t.attention)}</div>`
        : `<img class="stim" id="stim" alt="" style="width:${size}px;height:${size}px;object-fit:contain">`}</div>${keysBar()}`);
    if (url) {
      const img = document.getElementById("stim");
      img.src = url;
      await img.decode();
    }
    await new Promise((res) => requestAnimationFrame(() => requestAnimationFrame(res)));  // painted
    const t0 = performance.now();
    document.body.dataset.onset = t.trial_id;  // for automated checks: the image is on screen from here
    if (url && design.stimulus_ms) setTimeout(() => { const i = document.getElementById("stim"); if (i) i.style.visibility = "hidden"; }, design.stimulus_ms);
    const answer = await new Promise((resolve) => {
      let timer = null;
      keyHandler = (e) => { if (allowed.includes(e.key)) { keyHandler = null; clearTimeout(timer); resolve({key: e.key, rt: performance.now() - t0}); } };
      if (design.deadline_ms) timer = setTimeout(() => { keyHandler = null; resolve({key: null, rt: design.deadline_ms}); }, design.deadline_ms);
    });
    if (url) URL.revokeObjectURL(url);
    setState("sending");
    const res = await api("POST", "/api/response", {trial_id: t.trial_id, key: answer.key, rt_ms: Math.max(answer.rt, 0.001)});
    if (res.feedback) {
      setState("feedback");
      html(`<div class="feedback ${res.feedback}" id="feedback">${res.feedback === "correct" ? "Correct!" : "Incorrect"}</div>`);
      await sleep(design.feedback_ms);
    } else {
      // the paper's confirmation screen: space or Continue, or on after iti_ms
      setState("recorded");
      html(`<div class="panel"><p>${answer.key === null ? "Time is up." : "Response recorded."}</p><button data-key=" ">Continue</button></div>`);
      await Promise.race([waitKey([" "]), sleep(design.iti_ms)]);
      keyHandler = null;
    }
  }

  async function run() {
    const body = {participant: params.get(P.participant) || null, study: params.get(P.study) || "", session: params.get(P.session) || ""};
    const s = await api("POST", "/api/session", body);
    token = s.token; keys = s.keys; design = s.design; examples = s.examples;
    document.getElementById("show-instructions").hidden = false;
    document.getElementById("show-instructions").addEventListener("click", async (e) => {
      e.preventDefault();
      const urls = await Promise.all(examples.map((x) => blobUrl(`/api/example/${x.index}`)));
      overlay.innerHTML = instructionsHtml(urls) + `<button id="close-instructions">Close</button>`;
      overlay.hidden = false;
      document.getElementById("close-instructions").onclick = () => { overlay.hidden = true; };
    });
    let first = true;
    for (;;) {
      const t = await api("GET", "/api/next");
      if (t.state === "consent") { await consent(); await showInstructions("Start the practice"); first = false; continue; }
      if (t.state === "done") {
        setState("done");
        progressLabel.textContent = "";
        html(`<div class="panel">${t.debrief_html}<p>Completion code:</p><p class="code" id="code">${esc(t.code)}</p>
          ${t.redirect ? `<p><a id="redirect" href="${esc(t.redirect)}">Return to the recruitment platform</a></p>` : ""}</div>`);
        return;
      }
      progressLabel.textContent = t.block === "practice" ? `Practice ${t.number} of ${t.of}` : `Trial ${t.number} of ${t.of}`;
      if (first) { await pause("welcome-back", `<h2>Welcome back</h2><p>You continue where you stopped.</p>${keysBar()}`); first = false; continue; }
      if (t.first_test) await pause("test-start", (t.had_practice ? "<h2>Practice finished</h2><p>The test begins now. You will no longer be told whether you were right.</p>"
                                                                   : "<h2>The test begins now</h2>") + keysBar());
      else if (t.rest) await pause("rest", `<h2>Rest</h2><p>Take a break if you like; there is no timer here.</p><div class="bar"><div style="width:${Math.round(100 * t.progress)}%"></div></div><p>${Math.round(100 * t.progress)}% done</p>`);
      await trial(t);
    }
  }

  run().catch(fail);
})();

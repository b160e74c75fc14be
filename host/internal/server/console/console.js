// The toolhost web console. Everything a model, a plugin or a command
// wrote is put into the page as text (textContent), never as markup,
// and invisible or direction-changing characters are written out as
// <U+XXXX> first, as the terminal prompt shows them.
"use strict";

const outputLines = 50; // lines of a command's output shown until "Show all"
const keptLines = 20000; // lines of a command's output the page keeps (the server keeps the rest)
const streamingTools = ["run_command", "run_tests"]; // tools whose output streams

// armDelay is how long a call newly shown waits before its buttons
// work, and before "Approve all" covers it: a press aimed at what was
// there a moment ago must not land on a call the person has not seen.
const armDelay = 1000;

const ui = {
  key: "", // the session's key (consoleauth.go), sent with every request
  fetching: false,
  again: false,
  selected: new Set(), // batch id + "\n" + raw call id
  shownAt: new Map(), // batch id + "\n" + raw call id -> when it was first shown
  awaitingKey: "",
  batchKeys: new Map(), // batch id -> JSON of what its row shows
  rows: new Map(), // batch id -> li
  streams: new Map(), // batch id -> AbortController of its output stream
  shownIDs: new Map(), // batch id + "\n" + raw call id -> the id as shown
  outputs: new Map(), // batch id + "\n" + call id -> {lines, partial, follow, all, box, pre, more}
  seen: new Set(), // awaiting calls already announced
  first: true,
};

const $ = (id) => document.getElementById(id);

// el builds an element: props set attributes (text sets textContent,
// on* add listeners); children are nodes or strings (text nodes).
function el(tag, props, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === "text") e.textContent = v;
    else if (k === "class") e.className = v;
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined && c !== false) e.append(c);
  return e;
}

// visible writes out the characters that would hide, fake or reorder
// text (controls, format and private-use characters, unassigned ones,
// spaces other than the plain one, default-ignorables), as
// engine.Visible does for what the server renders itself.
const invisible = /[\p{Cc}\p{Cf}\p{Co}\p{Cs}\p{Cn}\p{Z}\p{Default_Ignorable_Code_Point}]/gu;
function visible(s) {
  return String(s).replace(invisible, (c) => c === " " || c === "\n" || c === "\t" ? c
    : "<U+" + c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + ">");
}

function setStatus(text) { $("status").textContent = text; }

async function api(path, options) {
  const o = Object.assign({ credentials: "same-origin", cache: "no-store" }, options || {});
  o.headers = Object.assign({ "X-Toolhost-Console-Key": ui.key }, o.headers || {});
  if (o.method && o.method !== "GET") o.headers["Content-Type"] = "application/json";
  const r = await fetch(path, o);
  if (r.status === 401) {
    // Once: the server's page says how to log in again. A page that
    // reloaded for this already shows it itself, rather than looping.
    if (!sessionStorage.getItem("toolhost-console-reloaded")) {
      sessionStorage.setItem("toolhost-console-reloaded", "1");
      location.reload();
    } else {
      setStatus("logged out: open the console with a fresh link (toolhost serve --console-link --http ADDR prints one)");
    }
    throw new Error("logged out");
  }
  sessionStorage.removeItem("toolhost-console-reloaded");
  if (!r.ok) {
    let msg = r.status + " " + r.statusText;
    try { const e = await r.json(); if (e.error && e.error.message) msg = e.error.message; } catch (_) { /* not JSON */ }
    const err = new Error(msg);
    err.status = r.status;
    throw err;
  }
  return r;
}

async function refresh() {
  if (ui.fetching) { ui.again = true; return; }
  ui.fetching = true;
  try {
    const r = await api("/console/api/state");
    render(await r.json());
  } catch (e) {
    setStatus("cannot read the server's state: " + e.message);
  } finally {
    ui.fetching = false;
    if (ui.again) { ui.again = false; refresh(); }
  }
}

function render(st) {
  const awaiting = [];
  const pending = [];
  // Oldest batch first: a call that arrives goes below those shown,
  // never above, so nothing moves under the pointer.
  for (const b of [...st.batches].reverse()) {
    for (const c of b.calls) {
      if (b.state === "awaiting_approval" && c.status === "awaiting") awaiting.push([b, c]);
      if (b.state === "pending_results" && c.status === "pending_result") pending.push([b, c]);
    }
  }
  document.title = awaiting.length ? "(" + awaiting.length + ") toolhost console" : "toolhost console";
  $("awaiting-count").textContent = String(awaiting.length);
  $("nothing-awaiting").hidden = awaiting.length > 0;
  for (const id of ["approve-all", "approve-selected", "deny-all"]) $(id).disabled = awaiting.length === 0;
  setStatus("live · approvals: " + st.approvals + " · a held call waits " + st.hold_seconds + " s · toolhost " + st.version.split(/[ ,]/)[0]);

  const key = awaiting.map(([b, c]) => b.id + "\n" + c.raw_id).join("\n");
  if (key !== ui.awaitingKey) {
    ui.awaitingKey = key;
    renderAwaiting(awaiting);
    announce(awaiting);
  }
  renderPending(pending);
  renderBatches(st);
  ui.first = false;
}

function renderAwaiting(awaiting) {
  const list = $("awaiting");
  const keep = new Set();
  const now = Date.now();
  // A decided batch leaves, and those below move up: every card shown
  // waits again, so no press lands on one that moved under the pointer.
  const before = [...ui.shownAt.keys()];
  if (before.some((k) => !awaiting.some(([b, c]) => b.id + "\n" + c.raw_id === k))) {
    for (const k of before) ui.shownAt.set(k, now);
  }
  const labels = new Map();
  for (const [, c] of awaiting) labels.set(c.id, (labels.get(c.id) || 0) + 1);
  // One group a batch, its calls inside: a batch is decided whole (or
  // by the selection), so its buttons are the group's.
  const groups = [];
  for (const [b, c] of awaiting) {
    const k = b.id + "\n" + c.raw_id;
    keep.add(k);
    if (!ui.shownAt.has(k)) ui.shownAt.set(k, now);
    // Two calls shown alike (ids of different batches) are told apart
    // by their batch and number.
    const label = labels.get(c.id) > 1 ? c.id + " (call " + c.n + " of batch " + b.id + ")" : c.id;
    let g = groups[groups.length - 1];
    if (!g || g.batch.id !== b.id) groups.push(g = { batch: b, cards: [] });
    g.cards.push(awaitingCall(b, c, k, label));
  }
  list.replaceChildren(...groups.map(({ batch: b, cards }) => el("li", { class: "group", "data-batch": b.id },
    cards.length > 1 || b.calls.length > 1
      ? el("p", { class: "group-head", text: "batch " + b.id + ": " + cards.length + " of its " + b.calls.length + " calls wait for a decision" + (b.held_for_mcp ? " · an MCP client's call" : "") })
      : null,
    el("ol", { class: "calls" }, ...cards),
    el("div", { class: "actions" },
      el("button", { type: "button", class: "approve decide", disabled: true, text: "Approve batch " + b.id, onclick: () => decideBatches([[b.id, { decision: "approve_all" }]]) }),
      el("button", { type: "button", class: "deny decide", disabled: true, text: "Deny batch " + b.id, onclick: () => decideBatches([[b.id, withReason({ decision: "deny_all" })]]) })))));
  for (const k of [...ui.selected]) if (!keep.has(k)) ui.selected.delete(k);
  for (const k of [...ui.shownAt.keys()]) if (!keep.has(k)) ui.shownAt.delete(k);
  armCards();
}

// armed reports whether the call of key has been shown long enough to
// be decided.
function armed(key) { return Date.now() - (ui.shownAt.get(key) || Date.now()) >= armDelay; }

// armCards enables the buttons of the cards shown long enough, and
// checks again until every card is.
function armCards() {
  let waiting = false;
  for (const li of $("awaiting").children) {
    const ready = [...li.querySelectorAll("[data-key]")].every((e) => armed(e.getAttribute("data-key")));
    for (const btn of li.querySelectorAll("button.decide")) btn.disabled = !ready;
    waiting = waiting || !ready;
  }
  if (waiting) setTimeout(armCards, 100);
}

function riskBadge(risk) {
  return el("span", { class: "risk risk-" + (risk || "unknown"), text: (risk || "unknown").toUpperCase() + " risk" });
}

function awaitingCall(b, c, k, label) {
  const box = el("input", {
    type: "checkbox", id: "select-" + b.id + "-" + c.n, "aria-label": "Select call " + label, "data-key": k,
    onchange: (e) => { if (e.target.checked) ui.selected.add(k); else ui.selected.delete(k); },
  });
  box.checked = ui.selected.has(k);
  const args = el("pre", { class: "args model", text: c.arguments || "" });
  const parts = [
    el("div", { class: "call-head" }, box, riskBadge(c.risk),
      el("span", { class: "tool", text: c.tool }),
      el("span", { class: "id", text: "call " + c.id }),
      el("span", { class: "batch", text: "batch " + b.id + (b.held_for_mcp ? " · an MCP client's call" : "") }),
      c.always_ask ? el("span", { class: "always", text: "only a person may approve" }) : null),
    el("h3", { class: "summary model", text: c.summary || c.tool }),
    el("p", { class: "reason" }, "Why it is asked: ", el("span", { class: "model", text: c.reason || "" })),
    el("h4", { text: "Arguments, as the call will run" }),
    args,
  ];
  if (c.folded) {
    parts.push(el("button", {
      type: "button", class: "more", text: "Show all arguments of call " + c.id,
      onclick: async (e) => {
        const btn = e.target;
        btn.disabled = true;
        try {
          const r = await api("/console/api/batches/" + encodeURIComponent(b.id) + "/calls/" + c.n + "/arguments");
          args.textContent = await r.text();
          btn.remove();
        } catch (err) { btn.disabled = false; btn.textContent = "Show all arguments (failed: " + err.message + ")"; }
      },
    }));
  }
  if (c.diff || c.diff_note) {
    parts.push(el("h4", { text: "The change it would make (from a dry run; nothing written yet)" }));
    if (c.diff) parts.push(diffView(c.diff));
    if (c.diff_note) parts.push(el("p", { class: "note", text: c.diff_note }));
  }
  if (c.recap) parts.push(el("pre", { class: "recap model", text: c.recap }));
  return el("li", { class: "call awaiting" }, ...parts);
}

function diffView(lines) {
  const pre = el("pre", { class: "diff model" });
  for (const line of lines) {
    let cls = "ctx";
    if (line.startsWith("+++") || line.startsWith("---")) cls = "file";
    else if (line.startsWith("+")) cls = "add";
    else if (line.startsWith("-")) cls = "del";
    else if (line.startsWith("@@")) cls = "hunk";
    pre.append(el("span", { class: cls, text: line + "\n" }));
  }
  return pre;
}

function withReason(body) {
  const reason = $("reason").value.trim();
  if (reason) body.reason = reason;
  return body;
}

// awaitingBatches are the batches shown long enough to be decided
// (armed); late says how many calls arrived too recently to be.
function awaitingBatches() {
  const ids = [];
  let late = 0;
  const fresh = new Set();
  for (const li of $("awaiting").children) {
    const id = li.getAttribute("data-batch");
    const keys = [...li.querySelectorAll("[data-key]")].map((e) => e.getAttribute("data-key"));
    const young = keys.filter((k) => !armed(k)).length;
    if (young) { fresh.add(id); late += young; continue; }
    ids.push(id);
  }
  return { ids: ids.filter((id) => !fresh.has(id)), late };
}

async function decideBatches(decisions, late) {
  const out = $("decision-result");
  out.textContent = "deciding…";
  const done = [];
  const failed = [];
  for (const [id, body] of decisions) {
    try {
      await api("/v1/batches/" + encodeURIComponent(id) + "/decision", { method: "POST", body: JSON.stringify(body) });
      done.push(id);
    } catch (e) {
      failed.push("batch " + id + ": " + e.message);
    }
  }
  const verb = { approve_all: "approved", deny_all: "denied", approve_selected: "decided" };
  const kinds = [...new Set(decisions.map(([, b]) => verb[b.decision]))].join("/");
  out.textContent = (done.length ? kinds + " " + done.length + " batch" + (done.length > 1 ? "es" : "") + ": " + done.join(", ") : "") +
    (failed.length ? (done.length ? "; " : "") + "not decided: " + failed.join("; ") : "");
  if (late) out.textContent += " (" + late + " call" + (late > 1 ? "s" : "") + " that just arrived not included: look at " + (late > 1 ? "them" : "it") + " first)";
  if (done.length) $("reason").value = "";
  refresh();
}

function announce(awaiting) {
  const fresh = awaiting.filter(([b, c]) => !ui.seen.has(b.id + "\n" + c.raw_id));
  ui.seen = new Set(awaiting.map(([b, c]) => b.id + "\n" + c.raw_id));
  if (ui.first || fresh.length === 0) return;
  if ("Notification" in window && Notification.permission === "granted" && document.hidden) {
    const [, c] = fresh[0];
    new Notification("toolhost: " + awaiting.length + " call" + (awaiting.length > 1 ? "s wait" : " waits") + " for a decision",
      { body: visible(c.tool + ": " + (c.summary || "")), tag: "toolhost-approvals" });
  }
}

function renderPending(pending) {
  $("pending").hidden = pending.length === 0;
  const list = $("pending-calls");
  const key = JSON.stringify(pending.map(([b, c]) => [b.id, c.raw_id]));
  if (list.getAttribute("data-key") === key) return;
  list.setAttribute("data-key", key);
  list.replaceChildren(...pending.map(([b, c]) => {
    const text = el("textarea", { "aria-label": "Result for call " + c.id, rows: 4 });
    const isError = el("input", { type: "checkbox", id: "error-" + b.id + "-" + c.n });
    const msg = el("p", { role: "status" });
    return el("li", { class: "call pending" },
      el("div", { class: "call-head" }, el("span", { class: "tool", text: c.tool }), el("span", { class: "id", text: "call " + c.id }),
        el("span", { class: "batch", text: "batch " + b.id })),
      text,
      el("label", { for: isError.id }, isError, " the call failed (the text is its error)"),
      el("button", {
        type: "button", text: "Submit result for call " + c.id,
        onclick: async () => {
          try {
            await api("/v1/batches/" + encodeURIComponent(b.id) + "/results", { method: "POST", body: JSON.stringify({ results: [{ id: c.raw_id, content: text.value, is_error: isError.checked }] }) });
            msg.textContent = "submitted";
            refresh();
          } catch (e) { msg.textContent = "not submitted: " + e.message; }
        },
      }), msg);
  }));
}

const statusMark = {
  pending: ["·", "pending"], awaiting: ["?", "awaiting a decision"], pending_result: ["…", "waiting for its result"],
  running: ["", "executing"], ok: ["✓", "completed"], failed: ["✗", "failed"], denied: ["⊘", "denied"],
  preresolved: ["⊘", "pre-resolved"], cancelled: ["⊘", "cancelled"],
};

function renderBatches(st) {
  const list = $("batches");
  const ids = new Set(st.batches.map((b) => b.id));
  for (const [id, li] of ui.rows) {
    if (!ids.has(id)) {
      li.remove(); ui.rows.delete(id); ui.batchKeys.delete(id);
      for (const m of [ui.shownIDs, ui.outputs]) for (const k of [...m.keys()]) if (k.startsWith(id + "\n")) m.delete(k);
    }
  }
  let prev = null;
  for (const b of st.batches) {
    for (const c of b.calls) ui.shownIDs.set(b.id + "\n" + c.raw_id, c.id);
    const key = JSON.stringify([b.state, b.decided_by, b.calls.map((c) => [c.status, c.result])]);
    let li = ui.rows.get(b.id);
    if (!li || ui.batchKeys.get(b.id) !== key) {
      const fresh = batchRow(b);
      if (li) li.replaceWith(fresh); else list.append(fresh);
      li = fresh;
      ui.rows.set(b.id, li);
      ui.batchKeys.set(b.id, key);
    }
    // Newest first.
    if (prev ? prev.nextSibling !== li : list.firstChild !== li) {
      if (prev) prev.after(li); else list.prepend(li);
    }
    prev = li;
    // A browser keeps six connections to a server: the console's own
    // event stream and its requests need two, so at most three batches
    // stream their commands' output at once.
    if (b.state === "running" && !ui.streams.has(b.id) && ui.streams.size < 3 &&
        b.calls.some((c) => streamingTools.includes(c.tool))) stream(b.id);
  }
  $("omitted").hidden = !st.omitted;
  $("omitted").textContent = st.omitted ? st.omitted + " older finished batches are not shown (GET /v1/batches lists them)" : "";
}

function batchRow(b) {
  const calls = b.calls.map((c) => {
    const [mark, label] = statusMark[c.status] || ["?", c.status];
    const icon = c.status === "running"
      ? el("span", { class: "spinner", role: "img", "aria-label": label })
      : el("span", { class: "mark mark-" + c.status, role: "img", "aria-label": label, text: mark });
    const li = el("li", { class: "call-state state-" + c.status, "data-call": c.raw_id },
      icon, el("span", { class: "tool", text: c.tool }), el("span", { class: "id", text: c.id }),
      el("span", { class: "label", text: label }),
      c.summary ? el("span", { class: "summary model", text: c.summary }) : null);
    if (c.result) li.append(el("pre", { class: "result model", text: c.result }));
    const out = ui.outputs.get(b.id + "\n" + c.raw_id);
    if (out) li.append(out.box);
    return li;
  });
  return el("li", { class: "batch state-" + b.state, "data-batch": b.id },
    el("div", { class: "batch-head" },
      el("span", { class: "id", text: "batch " + b.id }),
      el("span", { class: "state", text: b.state.replace("_", " ") }),
      el("span", { class: "conv model", text: "conversation " + b.conversation }),
      b.decided_by ? el("span", { class: "by model", text: "decided by " + b.decided_by }) : null,
      el("time", { datetime: b.created, text: new Date(b.created).toLocaleTimeString() })),
    el("ol", { class: "calls-state" }, ...calls));
}

// events reads the server-sent events of path with fetch (EventSource
// cannot send the session's key), calling on[name](data) for each, until
// the stream ends or signal aborts it.
async function events(path, on, signal) {
  const r = await api(path, { signal, headers: { Accept: "text/event-stream" } });
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buf += value;
    let end;
    while ((end = buf.indexOf("\n\n")) >= 0) {
      const block = buf.slice(0, end);
      buf = buf.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event: ")) name = line.slice(7);
        else if (line.startsWith("data: ")) data.push(line.slice(6));
      }
      if (on[name]) on[name](data.join("\n"));
    }
  }
}

// stream follows a running batch's events for its commands' output.
function stream(id) {
  const stop = new AbortController();
  ui.streams.set(id, stop);
  const chunk = (data) => {
    let ev;
    try { ev = JSON.parse(data); } catch (_) { return; }
    if (!ev.tool_call_id || !ev.chunk) return;
    appendOutput(id, ev.tool_call_id, ev.chunk);
  };
  events("/v1/batches/" + encodeURIComponent(id) + "/events", { stdout_chunk: chunk, stderr_chunk: chunk }, stop.signal)
    .catch(() => { /* ended or refused: the output shown stays */ })
    .finally(() => ui.streams.delete(id));
}

function appendOutput(batch, call, text) {
  const k = batch + "\n" + call;
  let out = ui.outputs.get(k);
  if (!out) {
    const pre = el("pre", { class: "model" });
    const box = el("div", { class: "output", role: "log", tabindex: "0", "aria-label": "Output of call " + (ui.shownIDs.get(k) || call) });
    const more = el("button", { type: "button", class: "more", hidden: true });
    out = { lines: [], partial: "", follow: true, all: false, pre, more, name: ui.shownIDs.get(k) || call };
    out.box = el("div", { class: "output-wrap" }, more, box);
    box.append(pre);
    box.addEventListener("scroll", () => { out.follow = box.scrollTop + box.clientHeight >= box.scrollHeight - 4; });
    more.addEventListener("click", () => { out.all = !out.all; drawOutput(out); });
    ui.outputs.set(k, out);
    const row = ui.rows.get(batch);
    const li = row && [...row.querySelectorAll("li.call-state")].find((x) => x.getAttribute("data-call") === call);
    if (li) li.append(out.box);
  }
  const parts = (out.partial + visible(text)).split("\n");
  out.partial = parts.pop();
  out.lines.push(...parts);
  if (out.lines.length > keptLines) out.lines.splice(0, out.lines.length - keptLines);
  drawOutput(out);
}

function drawOutput(out) {
  const all = out.partial ? out.lines.concat([out.partial]) : out.lines;
  const shown = out.all ? all : all.slice(-outputLines);
  out.pre.textContent = shown.join("\n");
  const hidden = all.length - shown.length;
  out.more.hidden = !out.all && hidden === 0;
  out.more.textContent = out.all ? "Show the last " + outputLines + " lines" : "Show all " + all.length + " lines (" + hidden + " earlier not shown)";
  out.more.setAttribute("aria-label", out.all ? "Show the last " + outputLines + " lines of call " + out.name : "Show all output of call " + out.name);
  const box = out.box.querySelector(".output");
  if (out.follow) box.scrollTop = box.scrollHeight;
}

// The journal's history: batches by conversation, state and tool, a
// batch's calls with their arguments, results and the files they
// changed, and undo of a call or a batch after a look at what it would
// restore.
async function loadHistory() {
  const q = new URLSearchParams();
  for (const [key, id] of [["conversation", "filter-conversation"], ["state", "filter-state"], ["tool", "filter-tool"]]) {
    const v = $(id).value.trim();
    if (v) q.set(key, v);
  }
  q.set("limit", "100");
  const out = $("history-result");
  try {
    const r = await api("/v1/journal/batches?" + q.toString());
    const list = (await r.json()).batches || [];
    out.textContent = list.length ? list.length + " batch" + (list.length > 1 ? "es" : "") + ", newest first" : "The journal holds no batch that matches.";
    $("history-list").replaceChildren(...list.map(historyRow));
  } catch (e) { out.textContent = "cannot read the journal: " + e.message; }
}

function historyRow(s) {
  const details = el("div", { class: "history-details" });
  const li = el("li", { class: "batch" },
    el("div", { class: "batch-head" },
      el("span", { class: "id", text: "batch " + s.batch_id }),
      el("span", { class: "state", text: s.state }),
      el("span", { class: "conv model", text: "conversation " + visible(s.conversation_id) }),
      el("span", { class: "tool", text: visible(s.tool || "") }),
      s.path ? el("span", { class: "model", text: visible(s.path) }) : null,
      el("span", { class: "label", text: s.calls + " call" + (s.calls === 1 ? "" : "s") + (s.failed ? ", " + s.failed + " failed" : "") }),
      el("time", { datetime: s.created_at, text: new Date(s.created_at).toLocaleString() }),
      el("button", { type: "button", class: "more", text: "Show batch " + s.batch_id, onclick: () => showBatch(s.batch_id, details) }),
      el("button", { type: "button", class: "deny", text: "Undo batch " + s.batch_id, onclick: () => askUndo(s.batch_id, "batch " + s.batch_id, details) })),
    details);
  return li;
}

async function showBatch(id, box) {
  try {
    const r = await api("/v1/journal/batches/" + encodeURIComponent(id));
    const b = await r.json();
    box.replaceChildren(...b.calls.map((c) => {
      const res = c.result ? (c.result.ok ? c.result.content || "" : (c.result.error ? c.result.error.kind + ": " + c.result.error.message : "failed")) : "no result";
      const changes = (c.changes || []).map((ch) => el("li", { class: "model", text: visible(ch.path) + (ch.undoable ? "" : " (not undoable: " + visible(ch.reason || "") + ")") }));
      return el("div", { class: "call" },
        el("div", { class: "call-head" },
          el("span", { class: "mark mark-" + (c.result && c.result.ok ? "ok" : "failed"), role: "img", "aria-label": c.result && c.result.ok ? "completed" : "failed", text: c.result && c.result.ok ? "✓" : "✗" }),
          el("span", { class: "tool", text: visible(c.name) }),
          el("span", { class: "id", text: visible(c.journal_id) + " · " + visible(c.id) }),
          c.decided_by ? el("span", { class: "by model", text: "decided by " + visible(c.decided_by) }) : null,
          changes.length ? el("button", { type: "button", class: "deny", text: "Undo call " + c.journal_id, onclick: (e) => askUndo(c.journal_id, "call " + c.journal_id, e.target.closest(".call")) }) : null),
        el("h4", { text: "Arguments" }),
        el("pre", { class: "args model", text: visible(JSON.stringify(c.arguments, null, 2)) }),
        el("h4", { text: "Result" }),
        el("pre", { class: "result model", text: visible(res) }),
        changes.length ? el("h4", { text: "Files changed" }) : null,
        changes.length ? el("ul", {}, ...changes) : null);
    }));
  } catch (e) { box.replaceChildren(el("p", { text: "cannot read batch " + id + ": " + e.message })); }
}

// askUndo shows what undoing id would restore, and undoes it once the
// person confirms.
async function askUndo(id, what, box) {
  const panel = el("div", { class: "undo", role: "group", "aria-label": "Undo " + what });
  box.querySelectorAll(":scope > .undo").forEach((e) => e.remove());
  box.append(panel);
  const verb = { restore: "restore", remove: "remove", unchanged: "leave unchanged" };
  try {
    const r = await api("/v1/journal/undo", { method: "POST", body: JSON.stringify({ id, dry_run: true }) });
    const rep = await r.json();
    panel.replaceChildren(
      el("p", { text: "Undoing " + what + " would:" }),
      el("ul", {}, ...rep.files.map((f) => el("li", { class: "model", text: verb[f.action] + " " + visible(f.path) }))),
      el("button", { type: "button", class: "deny", text: "Confirm undo of " + what, onclick: () => undo(id, what, panel) }),
      el("button", { type: "button", text: "Cancel", onclick: () => panel.remove() }));
  } catch (e) {
    panel.replaceChildren(el("p", { class: "refused", text: "Undo of " + what + " refused: " + e.message }));
  }
}

async function undo(id, what, panel) {
  try {
    const r = await api("/v1/journal/undo", { method: "POST", body: JSON.stringify({ id }) });
    const rep = await r.json();
    const msg = "Undid " + what + ": " + rep.files.map((f) => f.action + " " + visible(f.path)).join(", ") +
      (rep.undo_call_id ? " (journaled as " + rep.undo_call_id + ")" : "");
    await loadHistory();
    $("history-result").textContent = msg;
  } catch (e) {
    panel.replaceChildren(el("p", { class: "refused", role: "status", text: "Undo of " + what + " refused: " + e.message }));
  }
}

function start() {
  ui.key = sessionKey();
  $("history-load").addEventListener("click", loadHistory);
  const all = (body) => () => {
    const { ids, late } = awaitingBatches();
    decideBatches(ids.map((id) => [id, body()]), late);
  };
  $("approve-all").addEventListener("click", all(() => ({ decision: "approve_all" })));
  $("deny-all").addEventListener("click", all(() => withReason({ decision: "deny_all" })));
  $("approve-selected").addEventListener("click", () => {
    const byBatch = new Map();
    for (const k of ui.selected) {
      const i = k.indexOf("\n");
      const [b, c] = [k.slice(0, i), k.slice(i + 1)];
      if (!byBatch.has(b)) byBatch.set(b, []);
      byBatch.get(b).push(c);
    }
    if (byBatch.size === 0) { $("decision-result").textContent = "Select calls first: each has a checkbox"; return; }
    decideBatches([...byBatch].map(([b, ids]) => [b, withReason({ decision: "approve_selected", ids })]));
  });
  $("logout").addEventListener("click", async () => {
    try { await api("/console/logout", { method: "POST" }); } catch (_) { /* reloads anyway */ }
    location.reload();
  });
  const notify = $("notify");
  if ("Notification" in window && Notification.permission === "default") {
    notify.hidden = false;
    notify.addEventListener("click", async () => { await Notification.requestPermission(); notify.hidden = true; });
  }
  follow();
}

// follow refreshes the state whenever the server says it changed, and
// reconnects when the stream breaks.
async function follow() {
  for (;;) {
    let why = "the stream ended";
    try {
      await events("/console/api/events", { changed: refresh });
    } catch (e) {
      if (e.message === "logged out") return;
      why = e.message;
    }
    setStatus("disconnected from the server (" + why + "); reconnecting…");
    await new Promise((done) => setTimeout(done, 2000));
  }
}

// sessionKey is the key the login handed this page in its address's
// fragment, kept in this origin's storage (no other port's page can read
// it) and taken out of the address at once.
function sessionKey() {
  const m = /^#key=([A-Za-z0-9]+)$/.exec(location.hash);
  if (m) {
    try { localStorage.setItem("toolhost-console-key", m[1]); } catch (_) { /* storage off: this page only */ }
    history.replaceState(null, "", location.pathname);
    return m[1];
  }
  try { return localStorage.getItem("toolhost-console-key") || ""; } catch (_) { return ""; }
}

document.addEventListener("DOMContentLoaded", start);

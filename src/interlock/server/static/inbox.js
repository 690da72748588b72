// The review inbox: a live, virtualised list of threads (pending requests by default) and a
// detail view to decide on them. All model-produced text is inserted as text nodes.

import * as api from "./api.js";
import { codeSpans, jsonView, lineEl, partHidden, showAll, showText, strings, textEl, warningBadge, warningEl } from "./display.js";
import { append, clear, count, h, keyButton, relTime, timeEl, warmIntl } from "./dom.js";
import { argsDiff } from "./diff.js";
import { argsEditor } from "./form.js";
import { isRaw, parseJSON } from "./exact.js";
import { historyRow } from "./history.js";
import { childNotice, pathEl, viaText } from "./subagents.js";
import { batchRefusal, candidates, openBatch } from "./batch.js";

const ROW_H = 78;
const OVERSCAN = 6;
const PAGE = 100;
// the first page, drawn at once, holds a screen of rows with room to scroll (the server reads
// and the browser parses 40 rows in well under half the time of 100); early.js asks for it
const FIRST_PAGE = 40;
const SEARCH_DELAY_MS = 200;

const $ = (sel) => document.querySelector(sel);
const enc = encodeURIComponent;

const state = {
  me: null,
  status: "interrupted",
  search: "",
  threads: new Map(),
  order: [],
  nextBefore: null,
  total: null,
  searchTimer: 0,
  recountTimer: 0,
  listGen: 0,
  loading: false,
  fresh: new Map(),
  selected: null,
  detail: null,
  detailGen: 0,
  cards: new Map(),
  batch: false,  // the "approve several" view is open (batch.js)
  lost: new Map(),  // cards of requests someone else decided while they were open here
  selectedIndex: 0,  // where the open thread sat in the list (to move on from it)
  stream: null,
  renderQueued: false,
  readyMarked: false,
};

// ------------------------------------------------------------------ list

function matchesStatus(summary) {
  return !state.status || summary.status === state.status;
}

function searchText(s) {
  const calls = s.pending.flatMap((p) => p.calls.map((c) => `${c.name} ${c.args_preview}`));
  const questions = s.pending.map((p) => p.question || "");
  return `${s.thread_id} ${s.preview} ${calls.join(" ")} ${questions.join(" ")}`.toLowerCase();
}

function matchesSearch(s) {
  const needle = state.search.trim().toLowerCase();
  return !needle || searchText(s).includes(needle);
}

function recompute() {
  // the server filters and pages (?q=, keyset cursor); rows arrive already matching
  const rows = [...state.threads.values()];
  rows.sort((a, b) => (a.updated_at < b.updated_at ? 1 : a.updated_at > b.updated_at ? -1
    : a.thread_id < b.thread_id ? 1 : -1));
  state.order = rows.map((s) => s.thread_id);
}

function scheduleRender() {
  if (state.renderQueued) return;
  state.renderQueued = true;
  requestAnimationFrame(() => {
    state.renderQueued = false;
    recompute();
    renderList();
  });
}

function countLabel() {
  // the server's count of everything that matches, kept current by the live events
  const n = state.total !== null ? Math.max(state.total, state.order.length) : state.order.length;
  // (while a recount is on its way the loaded rows may briefly outnumber the last count)
  const more = state.total === null && state.nextBefore ? "+" : "";
  const fmt = count(n);
  const what = state.status === "interrupted" ? (n === 1 ? "pending request" : "pending requests")
    : (n === 1 ? "thread" : "threads");
  return state.search ? `${fmt}${more} matching ${what}` : `${fmt}${more} ${what}`;
}

function requestLine(s) {
  // every pending call (several requests: one per call, or one per sub-agent)
  const calls = s.pending.filter((p) => p.kind === "review").flatMap((p) => p.calls);
  if (calls.length) {
    const names = [...new Set(calls.map((c) => c.name + viaText(c.path)))];
    const extra = calls.length > 1 ? ` (${calls.length} calls)` : "";
    // the arguments as a reader writes them (`to: ann@… · subject: …`), not as JSON; the
    // policy's word on the risk ("Would delete 24 of 400 rows") comes first, where it has one
    return { title: names.join(", ") + extra, detail: calls[0].args_summary || calls[0].args_preview,
      risk: calls.map((c) => c.risk).find(Boolean) || "",
      unknown: calls.some((c) => c.reason === "outcome_unknown") };
  }
  const input = s.pending.find((p) => p.kind === "input");
  if (input) return { title: `Question for you${viaText(input.path)}`, detail: input.question || "" };
  // a thread that waits for nobody: what it was about, and how it ended
  return { title: s.preview || s.thread_id,
    detail: s.outcome || (s.status === "running" ? "running…" : statusText(s.status)),
    meta: s.last_decision || "no decisions", about: true };
}

function rowWarning(s) {
  const calls = s.pending.flatMap((p) => p.calls);
  return warningBadge([s.thread_id, s.preview, ...calls.flatMap((c) => [c.name, c.args_preview]),
    ...s.pending.map((p) => p.question || "")], calls.flatMap((c) => c.display_warnings || []));
}

function rowEl(s, index) {
  const line = requestLine(s);
  const selected = s.thread_id === state.selected;
  const row = h("div", {
    class: `row${selected ? " selected" : ""}${state.fresh.has(s.thread_id) ? " fresh" : ""}`,
    role: "option", "aria-selected": selected ? "true" : "false",
    dataset: { threadId: s.thread_id }, tabindex: "-1",
  },
  h("div", { class: "row-top" },
    lineEl(line.title, 200, { class: "row-title" }),
    line.unknown ? h("span", { class: "badge bad row-unknown" }, "outcome unknown") : null,
    rowWarning(s),
    state.status !== "interrupted" ? h("span", { class: `badge status-${s.status}` }, s.status) : null,
    h("span", { class: "row-time" }, timeEl(s.updated_at))),
  // risk first: the policy's word on the call, then the arguments (the user's message gives way)
  line.risk ? lineEl(line.risk, 400, { class: "row-risk" }) : lineEl(line.detail, 400, { class: "row-args mono" }),
  h("div", { class: "row-meta" },
    line.risk ? lineEl(line.detail, 400, { class: "row-args mono" })
      : line.about ? lineEl(line.meta, 300, { class: "row-preview" })
        : s.preview ? lineEl(s.preview, 300, { class: "row-preview" }) : h("span", { class: "row-preview" }, "—"),
    lineEl(s.thread_id, 200, { class: "row-id mono" })));
  row.style.top = `${index * ROW_H}px`;
  return row;
}

function renderList() {
  const list = $("#list");
  const at = state.order.indexOf(state.selected);
  if (at >= 0) state.selectedIndex = at;
  const spacer = $("#list-spacer");
  spacer.style.height = `${state.order.length * ROW_H}px`;
  const top = list.scrollTop;
  const first = Math.max(0, Math.floor(top / ROW_H) - OVERSCAN);
  const last = Math.min(state.order.length, Math.ceil((top + list.clientHeight) / ROW_H) + OVERSCAN);
  const rows = [];
  for (let i = first; i < last; i++) {
    const s = state.threads.get(state.order[i]);
    if (s) rows.push(rowEl(s, i));
  }
  spacer.replaceChildren(...rows);
  $("#list-count").textContent = state.loading && !state.order.length ? "Loading…" : countLabel();
  if (state.status === "interrupted" && !state.search && !state.loading) {
    const n = state.total !== null ? state.total : state.order.length;
    document.title = `${n ? `(${n}) ` : ""}interlock · review inbox`;
  }
  $("#list-empty").hidden = state.loading || state.order.length > 0;
  if (!state.loading && !state.readyMarked) {
    state.readyMarked = true;
    performance.mark("interlock:inbox-ready");
    warmIntlLater();
  }
  if (last >= state.order.length - OVERSCAN && state.nextBefore && !state.loading) loadMore();
}

// Intl (the times' tooltips) is loaded when the reviewer first moves the pointer, touches or
// types, or after 2 s, when the page is idle: not in the moments after the first draw, when
// the count, the live stream and the first clicks come
function warmIntlLater() {
  const events = ["pointermove", "touchstart", "keydown", "focusin"];
  const warm = () => {
    for (const name of events) window.removeEventListener(name, warm, true);
    clearTimeout(timer);
    warmIntl();
  };
  for (const name of events) window.addEventListener(name, warm, { capture: true, passive: true });
  const timer = setTimeout(() => (window.requestIdleCallback ? requestIdleCallback(warm) : warm()), 2000);
}

function mergeSummary(map, s) {
  const cur = map.get(s.thread_id);
  if (!cur || cur.version <= s.version) map.set(s.thread_id, s);
}

// keyset cursor of the next (older) page: {at: updated_at, id: thread_id}, or null
function nextCursor(data) {
  return data.next_before ? { at: data.next_before, id: data.next_before_id } : null;
}

// `options.early`: at start, take the answer early.js asked for while the page loaded (for
// the default filters; other filters are other requests)
async function fetchPage(cursor, options = undefined) {
  const params = new URLSearchParams({ limit: String(cursor ? PAGE : FIRST_PAGE) });
  if (state.status) params.set("status", state.status);
  const q = state.search.trim();
  if (q) params.set("q", q);
  if (cursor) {
    params.set("before", cursor.at);
    if (cursor.id) params.set("before_id", cursor.id);
  }
  return (options?.early ? api.getEarly : api.get)(`api/threads?${params}`, options);
}

// the count of all that match (a request of its own: counting 100,000 rows takes longer
// than reading a page, and the rows are drawn without waiting for it)
function fetchCount(options = undefined) {
  const params = new URLSearchParams({ limit: "1", count: "true" });
  if (state.status) params.set("status", state.status);
  const q = state.search.trim();
  if (q) params.set("q", q);
  return (options?.early ? api.getEarly : api.get)(`api/threads?${params}`, options);
}

// what a list request asks for (an answer asked for with other filters is not used)
function listKey() {
  return JSON.stringify([state.status, state.search.trim()]);
}

function takeCount(gen, r) {
  if (gen === state.listGen && r.ok && typeof r.data.total === "number") {
    state.total = r.data.total;
    scheduleRender();
  }
}

async function loadList(first = null) {
  // one page at once (the rest loads as the list is scrolled) and, asked for at the same
  // time, the count of all that match; `first`: both, already asked for (at start, together
  // with api/me)
  const gen = ++state.listGen;
  // the early page was asked for with the filters of the moment: if they changed since (the
  // filter or search box used before the page loaded), it is not the list shown now
  if (first && first.key !== listKey()) first = null;
  state.loading = true;
  scheduleRender();
  const fresh = new Map();
  const counting = first ? first.count : fetchCount();
  const r = await (first ? first.page : fetchPage(null));
  if (gen !== state.listGen) return;
  if (first && r.status === 401) api.unauthorized(r.data);  // it was asked for quietly
  let before = null;
  if (r.ok) {
    for (const s of r.data.threads) mergeSummary(fresh, s);
    before = nextCursor(r.data);
    state.total = null;  // until the count of this list arrives
    hideBanner();
  } else {
    showBanner(r.data.message || `Could not load the list (HTTP ${r.status}).`);
  }
  // events that arrived while loading may be newer than what the page said
  for (const s of state.threads.values()) {
    const cur = fresh.get(s.thread_id);
    if (cur && cur.version < s.version) fresh.set(s.thread_id, s);
  }
  state.threads = fresh;
  state.nextBefore = before;
  state.loading = false;
  scheduleRender();
  counting.then((c) => takeCount(gen, c));
}

// the count comes from the server (it covers the rows not loaded yet); asked again, at most
// once a second, when a live event adds or removes a row
function scheduleRecount() {
  if (state.recountTimer) return;
  state.recountTimer = setTimeout(async () => {
    state.recountTimer = 0;
    const gen = state.listGen;
    takeCount(gen, await fetchCount());
  }, 1000);
}

async function loadMore() {
  const gen = state.listGen;
  state.loading = true;
  const r = await fetchPage(state.nextBefore);
  if (gen !== state.listGen) return;  // a new list is loading: its own flag stands
  state.loading = false;
  if (!r.ok) return;
  for (const s of r.data.threads) if (matchesStatus(s)) mergeSummary(state.threads, s);
  state.nextBefore = nextCursor(r.data);
  scheduleRender();
}

function upsert(s) {
  if (s.parent_thread_id) return;  // a sub-agent's thread: its requests are its parent's
  const cur = state.threads.get(s.thread_id);
  if (cur && cur.version > s.version) return;
  const fits = matchesStatus(s) && (cur || matchesSearch(s));
  if (fits !== Boolean(cur)) scheduleRecount();
  if (fits) {
    if (!cur) {
      state.fresh.set(s.thread_id, true);
      setTimeout(() => { state.fresh.delete(s.thread_id); scheduleRender(); }, 2500);
    }
    state.threads.set(s.thread_id, s);
  } else {
    state.threads.delete(s.thread_id);
  }
  scheduleRender();
  if (s.thread_id === state.selected && (!state.detail || s.version > state.detail.version)) {
    refreshDetail();
  }
  // the right pane does not stay empty while a request waits
  if (fits && !state.selected && wide() && state.status === "interrupted") select(s.thread_id);
}

// side by side (list and request), not the phone layout that shows one at a time
function wide() {
  return window.matchMedia("(min-width: 801px)").matches;
}

function onInboxEvent(name, data) {
  if (name === "thread_updated" && data && data.thread) upsert(data.thread);
  else if (name === "thread_hidden" && data && data.thread) hide(data.thread.thread_id);
  else if (name === "resync") loadList();
}

// a thread this reviewer may no longer read (the request that let them read it went away);
// the open thread learns it too when it is not a row of the list (opened by a link, or further
// down than the pages loaded so far)
function hide(threadId) {
  if (state.threads.delete(threadId)) {
    scheduleRecount();
    scheduleRender();
  }
  if (threadId === state.selected) refreshDetail();
}

function startStream() {
  if (state.stream) state.stream.close();
  const conn = $("#conn");
  state.stream = api.stream("api/inbox/events", {
    onEvent: onInboxEvent,
    onOpen(reconnected) {
      conn.className = "conn up";
      conn.title = "Live: updates appear automatically";
      if (reconnected) {
        loadList();
        refreshDetail();
      }
    },
    onDown() {
      conn.className = "conn down";
      conn.title = "Reconnecting…";
    },
  });
}

// ------------------------------------------------------------------ detail

function select(threadId) {
  if (!threadId) return;
  location.hash = `#/t/${enc(threadId)}`;
}

function route() {
  const m = location.hash.match(/^#\/t\/(.+)$/);
  const id = m ? decodeURIComponent(m[1]) : null;
  if (id === state.selected) return;
  state.selected = id;
  state.detail = null;
  state.cards = new Map();
  state.lost = new Map();
  document.body.classList.toggle("reading", Boolean(id));
  scheduleRender();
  $("#detail").keys = null;
  state.batch = false;
  // the note about the decision just made stays while the inbox moves on from it
  if (!state.keepNote) $("#done").hidden = true;
  state.keepNote = false;
  if (id) openDetail(id);
  else renderPlaceholder();
}

function renderPlaceholder() {
  clear($("#detail")).append(h("div", { class: "placeholder" },
    h("p", {}, "Select a request to review it."),
    h("p", { class: "muted" }, "New requests appear in the list as soon as an agent asks.")));
}

async function openDetail(id) {
  clear($("#detail")).append(h("div", { class: "placeholder" }, "Loading…"));
  await refreshDetail(true);
}

let refreshing = null;
let refreshAgain = false;

async function refreshDetail(force = false) {
  if (!state.selected || state.batch) return;  // the batch view stays until it is closed
  if (refreshing) {
    refreshAgain = true;
    return;
  }
  const id = state.selected;
  refreshing = api.get(`api/threads/${enc(id)}`);
  const r = await refreshing;
  refreshing = null;
  if (id === state.selected) {
    if (r.ok) {
      if (force || !state.detail || r.data.version !== state.detail.version) renderDetail(r.data);
    } else if (r.status === 403 && state.detail && state.detail.thread_id === id) {
      // no longer readable here: someone else decided what this reviewer could decide
      for (const [key, card] of state.cards) loseCard(key, card, id);
      state.cards = new Map();
      gone();
    } else if (r.status !== 401) {
      clear($("#detail")).append(h("div", { class: "placeholder error" },
        r.status === 404 ? ["Thread ", lineEl(id), " does not exist (any more)."]
          : lineEl(r.data.message || `HTTP ${r.status}`)));
    }
  }
  if (refreshAgain) {
    refreshAgain = false;
    refreshDetail();
  }
}

// The open thread may no longer be read here (its request was decided, cancelled or expired
// elsewhere): nothing on it says it still waits; what is shown is how it was.
function gone() {
  if (!parts || parts.head.querySelector(".gone-note")) return;
  const badge = parts.head.querySelector("[data-status]");
  if (badge) {
    badge.className = "badge status-idle";
    badge.dataset.status = "gone";
    badge.textContent = "no longer waiting for you";
  }
  for (const el of parts.head.querySelectorAll(".head-actions, .cancel-box")) el.remove();
  const heading = parts.requests.parentElement.querySelector("h3");
  if (heading) heading.hidden = true;
  parts.head.append(h("p", { class: "notice gone-note", role: "status" },
    "Its request was decided elsewhere, and the thread is not yours to read any more: what "
    + "is shown here is how it was then."));
}

function statusText(status) {
  return {
    interrupted: "waiting for a decision", running: "running", completed: "completed",
    failed: "failed", idle: "idle",
  }[status] || status;
}

function section(key, title, ...body) {
  return h("section", { class: `detail-section ${key}`, dataset: { section: key } },
    title ? h("h3", {}, title) : null, ...body);
}

function skeleton() {
  const root = clear($("#detail"));
  const parts = {
    head: h("div", { class: "detail-head" }),
    error: h("div", { class: "detail-error", role: "alert", hidden: true }),
    requests: h("div", { class: "requests", "aria-label": "Pending requests" }),
    remembered: h("div", { class: "remembered" }),
    conversation: h("div", { class: "conversation" }),
    followUp: h("div", { class: "follow-up" }),
    history: h("div", { class: "history" }),
  };
  append(root, [parts.head, parts.error,
    section("requests", null, parts.requests),
    section("remembered", null, parts.remembered),
    section("conversation", "Conversation", parts.conversation, parts.followUp),
    section("history", "Decisions and activity", parts.history)]);
  return parts;
}

let parts = null;

function renderDetail(t) {
  const first = !state.detail || state.detail.thread_id !== t.thread_id || !parts
    || !document.body.contains(parts.head);
  if (first) parts = skeleton();
  state.detail = t;
  renderHead(t);
  parts.error.hidden = !t.error;
  parts.error.replaceChildren(...(t.error ? ["The last run failed: ", textEl(t.error, { tag: "span" })] : []));
  renderRequests(t);
  renderRemembered(t);
  renderConversation(t);
  renderHistory(t);
}

function renderHead(t) {
  const pendingCalls = t.interrupts.length > 0;
  const cancelBox = h("div", { class: "cancel-box", hidden: true },
    h("label", { class: "field-label" }, "Reason (optional, shown to the agent)"),
    h("input", { type: "text", class: "cancel-reason", autocomplete: "off" }),
    h("div", { class: "actions" },
      h("button", { type: "button", class: "btn danger", onclick: () => cancelThread(t, cancelBox) },
        "Cancel all pending calls"),
      h("button", { type: "button", class: "btn ghost", onclick: () => { cancelBox.hidden = true; } },
        "Keep")),
    h("p", { class: "error", role: "alert" }));
  append(clear(parts.head), [
    childNotice(t),
    h("div", { class: "head-main" },
      h("h2", {}, "Thread ", h("code", { class: "thread-id" }, lineEl(t.thread_id))),
      h("span", { class: `badge status-${t.status}`, dataset: { status: t.status } }, statusText(t.status)),
      h("span", { class: "muted" }, "updated ", timeEl(t.updated_at))),
    t.preview ? textEl(t.preview, { tag: "p", lines: 4, chars: 600, attrs: { class: "head-preview" } }) : null,
    pendingCalls && !t.parent ? h("div", { class: "head-actions" },
      h("button", { type: "button", class: "btn ghost small", onclick: () => { cancelBox.hidden = false; } },
        "Cancel thread…")) : null,
    cancelBox]);
}

async function cancelThread(t, box) {
  const reason = box.querySelector(".cancel-reason").value.trim();
  const err = box.querySelector(".error");
  err.textContent = "";
  const r = await api.post(`api/threads/${enc(t.thread_id)}/cancel`, reason ? { reason } : {});
  if (!r.ok) showText(err, r.data.message || `HTTP ${r.status}`);
  else {
    for (const card of state.cards.values()) card.classList.add("decided");  // by this reviewer
    refreshDetail(true);
  }
}

function reconcile(container, keyed) {
  const wanted = new Set(keyed.map(([k]) => k));
  for (const child of [...container.children]) {
    if (!wanted.has(child.dataset.key)) child.remove();
  }
  let prev = null;
  for (const [, node] of keyed) {
    const ref = prev ? prev.nextSibling : container.firstChild;
    if (node !== ref) container.insertBefore(node, ref);
    prev = node;
  }
}

function renderRequests(t) {
  const keyed = [];
  const refocus = [];  // new cards of calls whose decision here was refused by a race
  const next = new Map();
  const waiting = new Map();  // call id -> its review config now (its current revision)
  // a sub-agent's thread is read-only here: its requests are decided on the top-most thread
  for (const intr of t.parent ? [] : t.interrupts) {
    if (intr.kind === "review") {
      const req = intr.value;
      req.action_requests.forEach((action, i) => {
        // an edit makes a new revision: a new card, whose decisions name that revision
        const config = req.review_configs[i];
        waiting.set(action.tool_call_id, config);
        const key = `${intr.id}:${action.tool_call_id}:${config.revision || 1}`;
        let card = state.cards.get(key);
        // another reviewer's approval of a call that needs several changes what the card
        // says (its count, whether an approval here runs the call): it is drawn again, an open
        // confirmation with it, unless this reviewer decided it or writes in one of its panels
        let conflict = false;
        if (card && card.dataset.approvals !== String((config.approved_by || []).length)
            && !card.classList.contains("decided")
            && !card.querySelector(":scope > .panel:not([hidden])")) {
          // a decision of this reviewer's that lost the race to that approval is not lost
          // from view with the card: the new card says so, and the keyboard stays on it
          conflict = card.dataset.conflict === "1";
          card.remove();
          card = null;
        }
        if (!card) {
          card = reviewCard(t, intr, action, config,
            (t.call_tools || {})[`${intr.id}:${action.tool_call_id}`] || t.tools[action.name]);
          if (conflict) refocus.push(card);
        }
        card.dataset.key = key;
        next.set(key, card);
        keyed.push([key, card]);
      });
    } else {
      const key = `${intr.id}:input`;
      const card = state.cards.get(key) || inputCard(t, intr);
      card.dataset.key = key;
      next.set(key, card);
      keyed.push([key, card]);
    }
  }
  for (const [key, card] of state.cards) {
    if (!next.has(key)) loseCard(key, card, t.thread_id, waiting.get(card.dataset.callId));
  }
  keyed.unshift(...state.lost);
  state.cards = next;
  const heading = parts.requests.parentElement.querySelector("h3")
    || parts.requests.parentElement.insertBefore(h("h3", {}), parts.requests);
  heading.textContent = next.size ? `Needs your decision (${next.size})` : "";
  heading.hidden = !next.size;
  reconcile(parts.requests, keyed);
  for (const card of refocus) noteConflict(card);
}

// A decision given on a card that was drawn again meanwhile (another reviewer's approval of a
// call that needs several arrived at the same moment) was refused: its new card says so, and
// the keyboard goes to it unless it is somewhere else already.
function noteConflict(card) {
  showText(card.querySelector(":scope > .error"), "Your decision was not applied: another "
    + "reviewer's decision on this call was stored at the same moment. The card now shows the "
    + "call as it stands; decide again if you still want to.");
  const first = card.querySelector(":scope > .actions button:not([disabled])");
  const at = document.activeElement;
  if (first && (!at || at === document.body || !at.isConnected)) first.focus();
}

function rolesOk(config) {
  if (!config.reviewers || !state.me || !state.me.auth) return true;
  return config.reviewers.some((r) => state.me.roles.includes(r));
}

const LABELS = { approve: "Approved", edit: "Edited", reject: "Rejected", respond: "Responded" };

// What a reviewer wrote in a card's panel and did not send yet (a reason, an answer, edited
// arguments) survives opening another request and coming back, the back button and reloading
// the page: it is kept in this tab's sessionStorage, per revision of the call, until it is
// sent or the panel is closed with Cancel / Esc.
const DRAFTS = "interlock.drafts";
const DRAFTS_KEPT = 50;

function drafts() {
  try {
    const all = JSON.parse(sessionStorage.getItem(DRAFTS) || "{}");
    return all && typeof all === "object" && !Array.isArray(all) ? all : {};
  } catch {
    return {};
  }
}

function keepDraft(key, value) {
  const all = drafts();
  delete all[key];
  if (value) all[key] = value;  // the newest last; the oldest go first beyond the limit
  const keys = Object.keys(all);
  for (const old of keys.slice(0, Math.max(0, keys.length - DRAFTS_KEPT))) delete all[old];
  try {
    sessionStorage.setItem(DRAFTS, JSON.stringify(all));
  } catch {
    // storage full or disabled: the draft lives as long as the card
  }
}

// Whether two reviewer ids name one person, for what the card offers (the server decides,
// comparing them normalised: interlock.authz.reviewer_key)
const idKey = (id) => String(id).normalize("NFKC").toLowerCase().trim();

function reviewCard(t, intr, action, config, tool) {
  const allowed = new Set(config.allowed_decisions);
  const permitted = rolesOk(config);
  // approvals of a call that needs several come from distinct reviewers: one already given
  // here is not asked for again (a second would be refused); rejecting stays possible
  const needed = config.approvals || 1;
  const givenBy = (config.approved_by || []).map((a) => a.by);
  const approvedByMe = needed > 1 && Boolean(state.me)
    && givenBy.some((by) => idKey(by) === idKey(state.me.id));
  const status = h("p", { class: "card-status", role: "status" });
  const error = h("p", { class: "error", role: "alert" });
  const panel = h("div", { class: "panel", hidden: true });
  const buttons = [];
  const draftKey = JSON.stringify([t.thread_id, intr.id, action.tool_call_id, config.revision || 1]);
  const card = h("article", { class: "card", dataset: { callId: action.tool_call_id, tool: action.name,
    approvals: String(givenBy.length), draftKey } });

  let revalidate = null;  // the open panel's own check (an edit may still be invalid)

  function busy(on) {
    for (const b of card.querySelectorAll("button")) b.disabled = on || !permitted;
    if (!on && revalidate) revalidate();
  }

  async function decide(decision, errEl) {
    busy(true);
    error.textContent = "";
    errEl.textContent = "";
    status.textContent = "Sending…";
    // the decision is for the revision of the call this card shows (409 if it changed)
    const r = await api.post(`api/threads/${enc(t.thread_id)}/decisions`, {
      interrupt_id: intr.id,
      decisions: { [action.tool_call_id]: { ...decision, revision: config.revision || 1 } },
    });
    if (r.ok) {
      keepDraft(draftKey, null);
      card.classList.add("decided");
      const waits = decision.type === "approve" ? needed - givenBy.length - 1 : 0;
      status.textContent = waits > 0
        ? `Your approval is counted (${givenBy.length + 1} of ${needed}). The call runs once ${waits} more reviewer${waits === 1 ? " approves" : "s approve"}.`
        : `${LABELS[decision.type]}${decision.remember ? " (remembered for this thread)" : ""}. The run continues…`;
      panel.hidden = true;
      refreshDetail();
      decidedHere(t.thread_id, `${LABELS[decision.type]} ${action.name}`);
    } else {
      status.textContent = "";
      showText(errEl, r.data.message || `HTTP ${r.status}`);
      busy(false);
      if (r.status === 409) {
        // drawn again while the decision was on its way: the card of the call now says it
        const now = card.isConnected ? null : [...state.cards.values()].find(
          (c) => c.isConnected && c.dataset.callId === card.dataset.callId);
        if (now) noteConflict(now);
        else card.dataset.conflict = "1";
      }
      if (r.status === 403 || r.status === 409) refreshDetail(true);  // decided elsewhere?
    }
  }

  function closeButton() {
    return keyButton("Cancel", "Esc", { class: "btn ghost", onclick: discardPanel });
  }

  function discardPanel() {  // the reviewer closed it: what they wrote there goes
    keepDraft(draftKey, null);
    closePanel();
  }

  function closePanel() {
    panel.hidden = true;
    revalidate = null;
    confirmBox.hidden = true;
  }

  // a decision that runs a tool not declared read-only asks first, given by key or by button:
  // approve here, approve-and-remember in its own panel, an edit below its diff
  const readOnly = Boolean(tool && tool.read_only);
  const confirmBox = h("div", { class: "confirm", role: "alertdialog", hidden: true });
  function confirmFirst(question, decision, errEl, keepPanel = false) {
    if (!keepPanel) closePanel();
    const back = document.activeElement;
    const no = () => {
      confirmBox.hidden = true;
      if (keepPanel && back && back.isConnected) back.focus();
    };
    // an approval that leaves the call waiting for others says so: nothing runs yet
    const given = givenBy.length;
    const more = decision.type === "approve" ? Math.max(0, needed - given - 1) : 0;
    const yes = keyButton(more ? "Yes, run it once approved" : "Yes, run it", "Enter", { class: "btn approve confirm-yes",
      onclick: () => { confirmBox.hidden = true; decide(decision, errEl); } });
    clear(confirmBox).append(
      h("p", {}, ...question, more
        ? ` This is approval ${given + 1} of ${needed}: it runs once ${more} more reviewer${more === 1 ? " approves" : "s approve"}.`
        : " It runs at once."),
      h("div", { class: "actions" }, yes, keyButton("No", "Esc", { class: "btn ghost confirm-no", onclick: no })));
    confirmBox.hidden = false;
    confirmBox.cancel = no;
    yes.focus();
  }
  function decideOrConfirm(question, decision, errEl, keepPanel = false) {
    if (readOnly) decide(decision, errEl);
    else confirmFirst(question, decision, errEl, keepPanel);
  }
  const toolName = () => lineEl(action.name, 200, { class: "tool-name" });

  function openPanel(kind, draft = null) {
    error.textContent = "";
    confirmBox.hidden = true;
    clear(panel);
    panel.hidden = false;
    panel.dataset.kind = kind;
    const perr = h("p", { class: "error", role: "alert" });
    if (kind === "remember") {
      // remembering an approval of a tool that may change things is one more, explicit step
      const yes = keyButton("Yes, approve and remember", "Enter",
        { class: "btn approve confirm-remember" });
      yes.disabled = !permitted;
      yes.addEventListener("click", () => decide({ type: "approve", remember: "thread" }, perr));
      revalidate = () => { yes.disabled = !permitted; };
      append(panel, [
        h("h4", {}, `Approve every later ${action.name} call in this thread?`),
        h("p", { class: "warning" }, `${action.name} is not declared read-only. Once remembered, `
          + `the agent's later ${action.name} calls in this thread run without anyone seeing `
          + "them, with whatever arguments the model chooses, until the approval is revoked."),
        h("div", { class: "actions" }, yes,
          h("button", { type: "button", class: "btn ghost", onclick: () => { panel.hidden = true; } }, "Cancel")),
        perr]);
      yes.focus();
    } else if (kind === "edit") {
      const editor = argsEditor(config.args_schema || {}, draft ? draft.args : action.args);
      const submit = keyButton("Run with these arguments", "Ctrl+Enter", { class: "btn edit" });
      const diffBox = h("div", { class: "diff-box" });
      let askedFor = null;  // the arguments a shown confirmation is about
      const sync = (r) => {
        // what will be sent, compared with what the model proposed
        const changes = r.ok ? argsDiff(action.args, r.value) : null;
        clear(diffBox).append(h("h4", {}, "Changes to send"),
          changes ? changes.el : h("p", { class: "muted" }, "Fix the arguments to see the changes."));
        submit.disabled = !r.ok || !permitted;
        // a question asked about other arguments is withdrawn (leaving a field reports a
        // change too, without one)
        if ((r.ok ? JSON.stringify(r.value) : null) !== askedFor) confirmBox.hidden = true;
        // valid arguments that differ from the proposal are kept as the draft
        if (r.ok) {
          keepDraft(draftKey, JSON.stringify(r.value) === JSON.stringify(action.args)
            ? null : { kind: "edit", args: r.value });
        }
      };
      editor.onChange(sync);
      revalidate = () => sync(editor.read());
      revalidate();
      submit.addEventListener("click", () => {
        const r = editor.read();
        if (!r.ok) return;
        // what the edit leaves unchanged runs too: it is shown whole before anything is sent
        if (partHidden(argsEl)) {
          showAll(argsEl);
          showText(perr, "Part of the arguments was hidden. They are shown in full now: read "
            + "them, then send the edit again.");
          return;
        }
        perr.textContent = "";
        askedFor = JSON.stringify(r.value);
        decideOrConfirm(["Run ", toolName(), " with the edited arguments shown above?"],
          { type: "edit", edited_action: { name: action.name, args: r.value } }, perr, true);
      });
      append(panel, [h("h4", {}, "Edit the arguments of ", lineEl(action.name, 200)), editor.el, diffBox,
        h("div", { class: "actions" }, submit, closeButton()),
        perr]);
      if (!draft) editor.focus();
    } else {
      const isReject = kind === "reject";
      const box = h("textarea", { rows: 3, class: "message", "aria-label": isReject ? "Reason" : "Response" });
      const submit = keyButton(isReject ? "Reject" : "Send response", "Ctrl+Enter",
        { class: `btn ${kind}` });
      const check = () => { submit.disabled = !permitted || (!isReject && !box.value.trim()); };
      if (draft) box.value = draft.text;
      box.addEventListener("input", () => {
        keepDraft(draftKey, box.value ? { kind, text: box.value } : null);
        check();
      });
      revalidate = check;
      check();
      submit.addEventListener("click", () => {
        const message = box.value.trim();
        if (!isReject && !message) return;
        decide(isReject ? (message ? { type: "reject", message } : { type: "reject" })
          : { type: "respond", message }, perr);
      });
      append(panel, [
        h("label", { class: "field-label" }, isReject
          ? "Reason (optional; the agent sees it)"
          : "Answer returned to the agent as the tool's result (required)"),
        box,
        h("div", { class: "actions" }, submit, closeButton()),
        perr]);
      if (!draft) box.focus();
    }
  }

  // nothing runs on an approval of arguments its reviewer was not shown: while a part of them
  // is hidden ("Show all" not opened), approving shows them whole first and asks again
  const argsEl = argsView(action.args);
  function shownWhole() {
    if (!partHidden(argsEl)) return true;
    showAll(argsEl);
    closePanel();
    showText(error, "Part of the arguments was hidden. They are shown in full now: read them, "
      + "then approve again.");
    argsEl.scrollIntoView({ block: "nearest" });
    // the next key acts on this call, whose arguments were just shown
    card.querySelector(":scope > .actions > button.approve")?.focus({ preventScroll: true });
    return false;
  }

  const keys = {};
  if (allowed.has("approve") && !approvedByMe) {
    const approve = () => shownWhole()
      && decideOrConfirm(["Approve ", toolName(), "?"], { type: "approve" }, error);
    buttons.push(keyButton("Approve", "A", { class: "btn approve", onclick: approve }));
    keys.a = approve;
    // a call that needs several approvals cannot be remembered (it would skip the others),
    // nor one whose policy says allow_remember=False
    // nor one whose outcome is unknown (it would let later calls of the tool run unseen)
    if ((config.approvals || 1) <= 1 && config.allow_remember !== false
        && action.reason !== "outcome_unknown") {
      // one step for a tool declared read-only; otherwise a confirmation that says what
      // remembering means
      const remember = () => shownWhole() && (readOnly
        ? decide({ type: "approve", remember: "thread" }, error) : openPanel("remember"));
      buttons.push(keyButton(readOnly ? "Approve & remember for this thread" : "Approve & remember…",
        "M", { class: "btn approve-remember",
          title: `Approve, and approve later ${action.name} calls in this thread without asking`,
          onclick: remember }));
      keys.m = remember;
    }
  }
  // other requests of this tool wait: an offer to approve them together, each shown first
  let offer = null;
  if (allowed.has("approve") && !approvedByMe && permitted && !batchRefusal(config, action)
      && !action.path) {
    const others = candidates([...state.threads.values()], action.name, t.thread_id);
    if (others.length) {
      const several = () => {
        state.batch = true;
        openBatch($("#detail"), { thread: t, intr, action, config }, others, {
          mayDecide: rolesOk,
          done: () => { state.batch = false; state.detail = null; refreshDetail(true); },
        });
      };
      // counted among the rows loaded so far: with more pages to load, more may wait
      const atLeast = state.nextBefore ? "At least " : "";
      offer = h("p", { class: "batch-offer muted" },
        `${atLeast}${others.length} more ${action.name} request${others.length === 1 ? "" : "s"} wait${others.length === 1 ? "s" : ""}`
        + (atLeast ? " (among the requests loaded so far; scroll the list for more). " : ". "),
        keyButton("Approve several…", "S", { class: "btn ghost small approve-several", onclick: several }));
      keys.s = several;
    }
  }
  if (allowed.has("edit")) {
    buttons.push(keyButton("Edit…", "E", { class: "btn edit", onclick: () => openPanel("edit") }));
    keys.e = () => openPanel("edit");
  }
  if (allowed.has("reject")) {
    buttons.push(keyButton("Reject…", "R", { class: "btn reject", onclick: () => openPanel("reject") }));
    keys.r = () => openPanel("reject");
  }
  if (allowed.has("respond")) {
    buttons.push(keyButton("Respond…", "P", { class: "btn respond", onclick: () => openPanel("respond") }));
    keys.p = () => openPanel("respond");
  }

  // the default description repeats the tool and its arguments, shown below anyway
  const cut = defaultPart(action.description || "", action.name, action.args || {});
  let description = cut >= 0 ? action.description.slice(0, cut) : action.description;
  // a description that ends with an argument's text ("The agent asks you: <question>") does not
  // repeat it: the argument is shown right below, exactly as it runs
  for (const value of Object.values(action.args || {})) {
    if (typeof value === "string" && value.trim().length >= 8 && description
        && description.trimEnd().endsWith(value.trim())) {
      description = description.trimEnd().slice(0, -value.trim().length).trimEnd();
    }
  }

  const badges = [];
  if (action.reason) badges.push(h("span", { class: `badge ${action.reason === "outcome_unknown" ? "bad" : "warn"}` }, action.reason === "outcome_unknown" ? "outcome unknown" : action.reason));
  if (config.expires_at) badges.push(h("span", { class: "badge muted-badge deadline", title: config.expires_at }, "expires ", relTime(config.expires_at)));
  if (config.reviewers) badges.push(h("span", { class: "badge role" }, "role: ", config.reviewers.join(" or ")));
  if (needed > 1) {
    badges.push(h("span", { class: "badge role", title: "approvals needed from distinct reviewers" },
      `approvals ${givenBy.length} of ${needed}`, givenBy.length ? [": ", lineEl(givenBy.join(", "), 200)] : ""));
  }
  if ((config.revision || 1) > 1) {
    badges.push(h("span", { class: "badge warn revision", title: "the call was edited; approvals of earlier revisions do not count" },
      `revision ${config.revision}, edited by `, lineEl(config.edited_by || "?", 100)));
  }
  if (config.escalated_at) badges.push(h("span", { class: "badge warn" }, "escalated"));

  append(card, [
    h("header", { class: "card-head" },
      lineEl(action.name, 200, { class: "tool-name" }),
      ...badges,
      lineEl(action.tool_call_id, 100, { class: "call-id mono", title: "tool call id" })),
    // what matters most first: an outcome that may already have happened, hidden text, the
    // policy's word on this call (its risk, e.g. "would delete 24 of 400 rows"); then the
    // tool's docstring and the arguments
    action.reason === "outcome_unknown" ? h("p", { class: "outcome-unknown", role: "note" },
      h("strong", {}, "Outcome unknown: "), "this call may already have run before the process "
      + "stopped. Check by hand before approving it again.") : null,
    // the description as shown: a hidden character of an argument counts once, as shown once
    warningEl([action.name, description || "", ...strings(action.args)]),
    pathEl(action.path),
    description ? codeSpans(textEl(description, { lines: 8, attrs: { class: "desc" } })) : null,
    tool && tool.description ? codeSpans(textEl(tool.description, { tag: "p", lines: 6, attrs: { class: "tool-doc" } })) : null,
    argsEl,
    permitted ? null : h("p", { class: "notice" },
      `Only a reviewer with the role ${config.reviewers.join(" or ")} can decide this call.`),
    approvedByMe ? h("p", { class: "notice approved-by-me" },
      `You approved this call (${givenBy.length} of ${needed} approvals). It runs once `
      + `${needed - givenBy.length} more reviewer${needed - givenBy.length === 1 ? " approves" : "s approve"}`
      + (allowed.has("reject") ? "; you can still reject it." : ".")) : null,
    h("div", { class: "actions" }, buttons),
    offer, panel, confirmBox, status, error,
  ]);
  busy(false);
  card.keys = permitted ? keys : {};
  // Esc answers an open confirmation with no (an edit stays open), else closes the panel
  card.keys.escape = () => (confirmBox.hidden ? discardPanel() : confirmBox.cancel());
  // a draft kept from an earlier visit opens its panel again, as it was left
  const draft = drafts()[draftKey];
  if (draft && permitted && allowed.has(draft.kind)
      && (draft.kind === "edit" ? draft.args && typeof draft.args === "object"
        : typeof draft.text === "string")) {
    openPanel(draft.kind, draft);
  }
  return card;
}

// Where the default description's "Tool: NAME / Args: <the arguments as JSON>" lines start
// (-1: none), as interlock.display.default_part finds them: only lines that end the
// description and hold exactly these arguments, so a copy of the marker that a model wrote into
// an argument never cuts what a policy says after it.
function defaultPart(description, name, args) {
  const marker = `\n\nTool: ${name}\nArgs: `;
  const at = description.lastIndexOf(marker);
  if (at < 0) return -1;
  try {
    return canonical(parseJSON(description.slice(at + marker.length))) === canonical(args) ? at : -1;
  } catch {
    return -1;
  }
}

// JSON with object keys sorted: equal for equal values whatever the order of their keys
function canonical(value) {
  return JSON.stringify(value, (key, v) => (v && typeof v === "object" && !Array.isArray(v)
    && !isRaw(v) ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v));
}

// Arguments as a readable list (strings shown as their text, line breaks included) with a
// switch to the exact JSON.
function argsView(args, labelled = true) {
  const entries = Object.entries(args || {});
  const fields = h("dl", { class: "argv" }, entries.map(([name, value]) => [
    h("dt", { class: "mono" }, lineEl(name, 80)),
    h("dd", {}, typeof value === "string"
      ? (value ? textEl(value, { attrs: { class: "argv-text" } }) : h("span", { class: "muted" }, "(empty text)"))
      : textEl(jsonView(value), { attrs: { class: "argv-json mono" } }))]));
  const json = h("div", { class: "json-view", hidden: true },
    textEl(jsonView(args), { lines: 30, chars: 6000, attrs: { class: "json mono" } }));
  const toggle = h("button", { type: "button", class: "link small-link" }, "Show JSON");
  toggle.addEventListener("click", () => {
    json.hidden = !json.hidden;
    fields.hidden = !json.hidden;
    toggle.textContent = json.hidden ? "Show JSON" : "Show fields";
  });
  if (!entries.length) {
    fields.hidden = true;
    json.hidden = false;
  }
  return h("div", { class: "args" },
    h("div", { class: "label" }, labelled ? "Arguments" : null, entries.length ? toggle : null),
    fields, json);
}

function inputCard(t, intr) {
  const value = intr.value;
  const question = value && typeof value === "object" && typeof value.question === "string"
    ? value.question : null;
  const box = h("textarea", { rows: 2, class: "message", "aria-label": "Answer" });
  const asJson = h("input", { type: "checkbox" });
  const error = h("p", { class: "error", role: "alert" });
  const status = h("p", { class: "card-status", role: "status" });
  const send = keyButton("Send answer", "Ctrl+Enter", { class: "btn approve" });
  const card = h("article", { class: "card input-card" });
  card.keys = { p: () => box.focus() };
  send.addEventListener("click", async () => {
    error.textContent = "";
    let answer = box.value;
    if (asJson.checked) {
      try {
        answer = parseJSON(box.value);
      } catch (err) {
        error.textContent = `Not valid JSON: ${err.message}`;
        return;
      }
    }
    send.disabled = true;
    const r = await api.post(`api/threads/${enc(t.thread_id)}/answer`, { interrupt_id: intr.id, value: answer });
    if (r.ok) {
      status.textContent = "Answered. The run continues…";
      card.classList.add("decided");
      refreshDetail();
      decidedHere(t.thread_id, "Answered the question");
    } else {
      showText(error, r.data.message || `HTTP ${r.status}`);
      send.disabled = false;
    }
  });
  append(card, [
    h("header", { class: "card-head" }, h("span", { class: "tool-name" }, "The agent asks"),
      intr.tool_call_id ? h("span", { class: "call-id mono" }, intr.tool_call_id) : null),
    warningEl(strings(value)),
    pathEl(intr.path),
    question !== null ? textEl(question, { tag: "p", attrs: { class: "question" } })
      : textEl(jsonView(value), { attrs: { class: "json mono" } }),
    box,
    h("label", { class: "null-toggle" }, asJson, " send as JSON"),
    h("div", { class: "actions" }, send),
    status, error,
  ]);
  return card;
}

function renderRemembered(t) {
  const box = clear(parts.remembered);
  if (!t.remembered.length) {
    box.parentElement.hidden = true;
    return;
  }
  box.parentElement.hidden = false;
  append(box, [h("h3", {}, "Approved for this thread"),
    h("ul", { class: "rules" }, t.remembered.map((rule) => {
      const err = h("span", { class: "error", role: "alert" });
      return h("li", {},
        lineEl(rule.tool_name, 200, { class: "tool-name" }),
        h("span", { class: "muted" }, " runs without asking — set by ", lineEl(rule.created_by, 100), ", ", timeEl(rule.created_at), " "),
        h("button", { type: "button", class: "btn ghost small", onclick: async () => {
          const r = await api.del(`api/threads/${enc(t.thread_id)}/remembered/${enc(rule.tool_name)}`);
          if (r.ok) refreshDetail(true);
          else showText(err, r.data.message || `HTTP ${r.status}`);
        } }, "Revoke"), err);
    }))]);
}

function decisionBadge(decision) {
  if (!decision) return null;
  const text = { reject: "rejected", respond: "reviewer's answer", edit: "edited by reviewer",
    cancel: "cancelled", expire: "expired" }[decision] || decision;
  return h("span", { class: `badge decision-${decision}` }, text);
}

function pendingCallIds(t) {
  const ids = new Set();
  for (const intr of t.interrupts) {
    // a sub-agent's request waits on this thread's call that runs the sub-agent
    if (intr.path && intr.path.length) ids.add(intr.path[0].tool_call_id);
    else if (intr.kind === "review") for (const a of intr.value.action_requests) ids.add(a.tool_call_id);
    else if (intr.tool_call_id) ids.add(intr.tool_call_id);
  }
  return ids;
}

function messageEl(m, pending) {
  const text = (content) => textEl(content, { tag: "div", lines: 20, chars: 3000, attrs: { class: "text" } });
  if (m.role === "user") {
    return h("div", { class: "msg user" }, h("div", { class: "who" }, "User"), text(m.content));
  }
  if (m.role === "assistant") {
    return h("div", { class: "msg assistant" }, h("div", { class: "who" }, "Agent"),
      m.content ? text(m.content) : null,
      (m.tool_calls || []).map((c) => h("div", { class: "call" },
        h("div", { class: "call-head" }, "calls ", lineEl(c.name, 200, { class: "tool-name" }),
          lineEl(c.id, 100, { class: "call-id mono" })),
        pending.has(c.id)
          ? h("p", { class: "muted waiting-above" }, "waiting for your decision (above)")
          : argsView(c.args, false))));
  }
  if (m.role === "tool") {
    return h("div", { class: `msg tool ${m.status === "error" ? "error-result" : ""}`, dataset: { callId: m.tool_call_id } },
      h("div", { class: "who" }, "Result of ", lineEl(m.name, 200, { class: "tool-name" }), " ",
        h("span", { class: `badge ${m.status === "error" ? "bad" : "good"}` }, m.status), " ",
        decisionBadge(m.decision)),
      textEl(m.content, { lines: 20, chars: 1200, attrs: { class: "text result" } }));
  }
  return h("div", { class: "msg system" }, h("div", { class: "who" }, m.role), text(m.content));
}

function renderConversation(t) {
  const box = clear(parts.conversation);
  const pending = pendingCallIds(t);
  append(box, t.messages.map((m) => messageEl(m, pending)));
  renderFollowUp(t);
}

// A new user message on a thread that waits for nobody (the agent answered, perhaps with a
// question, or a reviewer cancelled): it starts a run. The server decides who may post.
function renderFollowUp(t) {
  const box = parts.followUp;
  const open = (t.status === "completed" || t.status === "idle") && !t.interrupts.length
    && t.may_post !== false;  // the server's rule: the thread's creator and admins
  if (!open) {
    clear(box);
    box.hidden = true;
    return;
  }
  box.hidden = false;
  if (box.dataset.thread === t.thread_id && box.firstChild) return;  // keep a draft
  box.dataset.thread = t.thread_id;
  const text = h("textarea", { rows: 3, class: "message", id: "follow-up-text",
    "aria-label": "Message to the agent" });
  const error = h("p", { class: "error", role: "alert" });
  const send = keyButton("Send to the agent", "Ctrl+Enter", { class: "btn approve", disabled: true });
  text.addEventListener("input", () => { send.disabled = !text.value.trim(); });
  send.addEventListener("click", async () => {
    const message = text.value.trim();
    if (!message) return;
    send.disabled = true;
    error.textContent = "";
    const r = await api.post(`api/threads/${enc(t.thread_id)}/messages`, { message });
    if (r.ok) {
      clear(box);
      refreshDetail(true);
    } else {
      showText(error, r.data.message || `HTTP ${r.status}`);
      send.disabled = false;
    }
  });
  const last = [...t.messages].reverse().find((m) => m.role === "assistant");
  const asked = last && !(last.tool_calls || []).length && /\?\s*$/.test(last.content || "");
  append(clear(box), [
    h("label", { class: "field-label", for: "follow-up-text" },
      asked ? "The agent asked you something: reply" : "Send the agent a follow-up message",
      h("span", { class: "field-type" }, " (starts a new run on this thread)")),
    text, h("div", { class: "actions panel-actions" }, send), error]);
}

function renderHistory(t) {
  const box = clear(parts.history);
  const rows = t.history.map(historyRow).filter(Boolean);
  if (!rows.length) {
    box.append(h("p", { class: "muted" }, "Nothing yet."));
    return;
  }
  append(box, h("table", { class: "history-table" },
    h("thead", {}, h("tr", {}, h("th", {}, "When"), h("th", {}, "Who"), h("th", {}, "What"))),
    h("tbody", {}, rows)));
  if (t.history_truncated) box.append(h("p", { class: "muted" }, "Older entries are in the audit log (api/audit)."));
}

// ------------------------------------------------------------------ moving on, losing a race

// After this reviewer's decision leaves the thread waiting for nothing more: a note that says
// what was done (with a way back), and the next pending request opens.
function decidedHere(threadId, what) {
  if (currentCard()) return;  // more requests wait in this thread
  const note = $("#done");
  note.replaceChildren(`${what} in thread `, lineEl(threadId, 120, { class: "mono" }), ". ",
    h("a", { href: `#/t/${enc(threadId)}`, class: "done-open" }, "Open it again"));
  note.hidden = false;
  if (state.status !== "interrupted") return;
  const rest = state.order.filter((id) => id !== threadId);
  const at = state.order.indexOf(threadId);
  const next = at >= 0 ? state.order[at + 1] || state.order[at - 1]
    : rest[Math.min(state.selectedIndex, rest.length - 1)];
  if (next && next !== threadId) {
    state.keepNote = true;
    select(next);
  }
}

const DID = { approve: "approved", edit: "edited, then approved", reject: "rejected",
  respond: "answered instead of running" };

// A request open here was decided by someone else: the card stays, saying who decided what and
// when, and what this reviewer had typed is kept and offered as a follow-up message. ``now``: the
// call's review config when it still waits (someone edited it: a new revision, in a new card).
function loseCard(key, card, threadId, now) {
  if (card.classList.contains("decided")) return;
  card.classList.add("decided", "decided-elsewhere");
  state.lost.set(key, card);
  // what the reviewer wrote: a reason or an answer, or the arguments of an edit they changed
  // (the edit form's text boxes hold the model's arguments: those are not the reviewer's text)
  const edited = drafts()[card.dataset.draftKey];
  const draft = [...card.querySelectorAll(".panel textarea.message")].map((b) => b.value.trim())
    .find(Boolean) || (edited && edited.kind === "edit"
      && card.querySelector(":scope > .panel:not([hidden])")?.dataset.kind === "edit"
    ? JSON.stringify(edited.args, null, 2) : "");
  for (const el of card.querySelectorAll(":scope > .actions, :scope > .panel, :scope > .confirm, "
    + ":scope > .card-status, :scope > .error, .badge.deadline, .batch-offer")) el.hidden = true;
  const said = h("p", { class: "elsewhere-what" }, "Someone else decided this request…");
  const box = h("div", { class: "elsewhere", role: "status" }, said);
  const dismiss = h("button", { type: "button", class: "btn ghost small elsewhere-dismiss",
    onclick: () => { state.lost.delete(key); card.remove(); } }, "Dismiss");
  card.append(box);
  if (draft) box.append(draftEl(draft, threadId));
  box.append(h("div", { class: "actions" }, dismiss));
  if (now) {  // still waiting in another card: nothing was decided on what this card shows
    const revision = Number(now.revision) || 1;
    append(clear(said), revision !== Number(key.split(":").pop())
      ? [lineEl(now.edited_by || "someone", 100, { class: "who-decided" }),
        ` edited this call: revision ${revision} waits for a decision in its own card. `
        + "Nothing was decided on what this card shows."]
      : ["This call still waits for a decision, in a new card (its request changed). "
        + "Nothing was decided on what this card shows."]);
    return;
  }
  api.get(`api/threads/${enc(threadId)}/calls/${enc(card.dataset.callId)}`).then((r) => {
    if (r.ok && r.data.state === "expired") {
      append(clear(said), ["This call expired ", timeEl(r.data.decided_at),
        ": no reviewer decided it in time, and it did not run."]);
    } else if (r.ok && r.data.state === "cancelled") {
      said.replaceChildren("This call was cancelled with the thread's other pending calls, "
        + "and it did not run.");
    } else if (r.ok && r.data.decision) {
      const d = r.data;
      append(clear(said), [lineEl(d.decided_by || "someone", 100, { class: "who-decided" }), " ",
        DID[d.decision] || d.decision, " this call ", timeEl(d.decided_at), ".",
        d.runs ? [" It runs as ", lineEl(d.runs.name, 200, { class: "tool-name" }), " with ",
          lineEl(JSON.stringify(d.runs.args), 300, { class: "mono" }), "."] : "",
        d.message ? [" Their words: ", lineEl(d.message, 500)] : ""]);
    } else if (!r.ok) {
      said.replaceChildren("This request was decided, cancelled or expired by someone else.");
    }
  });
}

function draftEl(draft, threadId) {
  const text = h("textarea", { rows: 3, class: "message draft-text", "aria-label": "Your draft" });
  text.value = draft;
  const error = h("p", { class: "error", role: "alert" });
  const done = h("p", { class: "card-status", role: "status" });
  const send = h("button", { type: "button", class: "btn respond draft-send" }, "Send as a follow-up message");
  send.addEventListener("click", async () => {
    const message = text.value.trim();
    if (!message) return;
    send.disabled = true;
    error.textContent = "";
    const r = await api.post(`api/threads/${enc(threadId)}/messages`, { message });
    if (r.ok) {
      done.textContent = "Sent to the agent as a new message.";
      refreshDetail(true);
    } else {
      showText(error, r.status === 409
        ? "The thread is still busy with the decision above: send it once the run has finished."
        : r.data.message || `HTTP ${r.status}`);
      send.disabled = false;
    }
  });
  const mayPost = state.detail && state.detail.thread_id === threadId && state.detail.may_post !== false;
  return h("div", { class: "draft" },
    h("p", {}, "Your text was not sent. It is kept here", mayPost ? "; you can send it to the agent as a follow-up:" : " (only the thread's creator or an admin can post to the thread; copy it from here):"),
    text, mayPost ? send : null, done, error);
}

// ------------------------------------------------------------------ keyboard

function typing(el) {
  return el && (el.matches("input, textarea, select, [contenteditable]") || el.isContentEditable);
}

function currentCard() {
  return [...document.querySelectorAll("#detail .requests .card")]
    .find((c) => !c.classList.contains("decided")) || null;
}

function step(delta) {
  if (!state.order.length) return;
  const i = state.order.indexOf(state.selected);
  const j = i < 0 ? 0 : Math.max(0, Math.min(state.order.length - 1, i + delta));
  const next = state.order[j];
  select(next);
  const list = $("#list");
  const top = j * ROW_H;
  if (top < list.scrollTop) list.scrollTop = top;
  else if (top + ROW_H > list.scrollTop + list.clientHeight) list.scrollTop = top + ROW_H - list.clientHeight;
}

function toggleHelp(show) {
  const help = $("#help");
  help.hidden = show === undefined ? !help.hidden : !show;
  if (!help.hidden) $("#help-close").focus();
}

function onKey(e) {
  if (e.defaultPrevented || e.altKey || !$("#login").hidden) return;
  const target = e.target;
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) {
    // send the panel (edit, reject, respond, answer, follow-up) that has the focus
    const scope = target.closest && target.closest(".panel, .card, .follow-up, .batch");
    const submit = scope && scope.querySelector('button[aria-keyshortcuts="Ctrl+Enter"]');
    if (submit && !submit.disabled && submit.offsetParent) {
      e.preventDefault();
      submit.click();
    }
    return;
  }
  if (e.key === "Escape") {
    if (!$("#help").hidden) toggleHelp(false);
    else if ($("#detail .batch") && $("#detail").keys) $("#detail").keys.escape();
    else {
      const card = target.closest && target.closest(".card");
      if (card && card.keys && card.keys.escape) card.keys.escape();
      else if (currentCard()?.keys?.escape) currentCard().keys.escape();
      if (typing(target)) target.blur();
    }
    return;
  }
  if (e.ctrlKey || e.metaKey || typing(target)) return;
  if (e.key === "?") {
    e.preventDefault();
    toggleHelp();
    return;
  }
  if (!$("#help").hidden) return;
  const key = e.key.length === 1 ? e.key.toLowerCase() : e.key;
  if (key === "j" || key === "ArrowDown") { e.preventDefault(); step(1); return; }
  if (key === "k" || key === "ArrowUp") { e.preventDefault(); step(-1); return; }
  if (key === "/") { e.preventDefault(); $("#search").focus(); return; }
  if (key === "f") {
    const text = document.querySelector("#follow-up-text");
    if (text) { e.preventDefault(); text.focus(); }
    return;
  }
  if (key === "c") {
    const open = document.querySelector(".head-actions button");
    if (open) { e.preventDefault(); open.click(); document.querySelector(".cancel-reason")?.focus(); }
    return;
  }
  // the call whose card has the focus (a reviewer on the second call's card decides that
  // one), else the first still waiting
  const focused = target.closest && target.closest("#detail .requests .card:not(.decided)");
  const card = focused || currentCard();
  const action = card && card.keys && card.keys[key];
  if (action && !card.querySelector(":scope > .actions > button")?.disabled) {
    e.preventDefault();
    action();
  }
}

// ------------------------------------------------------------------ shell

function showBanner(text) {
  const b = $("#banner");
  showText(b, text);
  b.hidden = false;
}

function hideBanner() {
  $("#banner").hidden = true;
}

function showLogin(message) {
  if (state.stream) state.stream.close();
  $("#login").hidden = false;
  $("#login-error").textContent = message || "";
  $("#token").focus();
}

async function boot() {
  // the first page is asked for together with api/me (one round trip, not two); its answer
  // is used only once api/me says who is signed in (a 401 shows the sign-in form once)
  const first = { key: listKey(), page: fetchPage(null, { quiet: true, early: true }),
    count: fetchCount({ quiet: true, early: true }) };
  const genBefore = state.listGen;
  const me = await api.getEarly("api/me");
  api.dropEarly();
  if (me.status === 401) {
    showLogin(api.hasToken() ? "That token was not accepted." : "");
    return;
  }
  if (!me.ok) {
    showBanner(me.data.message || `The server answered HTTP ${me.status}.`);
    return;
  }
  state.me = me.data;
  $("#login").hidden = true;
  $("#whoami").textContent = me.data.auth
    ? `${me.data.id}${me.data.roles.length ? ` (${me.data.roles.join(", ")})` : ""}`
    : "local mode";
  $("#signout").hidden = !me.data.auth;
  startStream();
  // a filter changed while api/me was on its way has loaded the list already
  if (state.listGen === genBefore) await loadList(first);
  route();
  if (!state.selected && wide() && state.status === "interrupted") {
    recompute();
    if (state.order.length) select(state.order[0]);
  }
}

function wire() {
  api.whenUnauthorized(() => showLogin("Your token is no longer accepted; sign in again."));
  $("#login-form").addEventListener("submit", (e) => {
    e.preventDefault();
    api.setToken($("#token").value.trim(), $("#remember-token").checked);
    $("#token").value = "";
    boot();
  });
  $("#signout").addEventListener("click", () => {
    api.forgetToken();
    location.hash = "";
    location.reload();
  });
  $("#status-filter").addEventListener("change", (e) => {
    state.status = e.target.value;
    $("#list").scrollTop = 0;
    loadList();
  });
  $("#search").addEventListener("input", (e) => {
    state.search = e.target.value;
    clearTimeout(state.searchTimer);
    state.searchTimer = setTimeout(() => {
      $("#list").scrollTop = 0;
      loadList();
    }, SEARCH_DELAY_MS);
  });
  $("#search").addEventListener("keydown", async (e) => {
    // Enter opens the first match (the only one, when the filter narrowed it to one)
    if (e.key !== "Enter") return;
    e.preventDefault();
    clearTimeout(state.searchTimer);
    state.search = e.target.value;
    await loadList();
    recompute();
    if (state.order.length) {
      select(state.order[0]);
      e.target.blur();
    }
  });
  $("#back").addEventListener("click", () => { location.hash = ""; });
  const list = $("#list");
  list.addEventListener("scroll", () => {
    if (!state.renderQueued) {
      state.renderQueued = true;
      requestAnimationFrame(() => { state.renderQueued = false; renderList(); });
    }
  }, { passive: true });
  list.addEventListener("click", (e) => {
    const row = e.target.closest(".row");
    if (row) select(row.dataset.threadId);
  });
  document.addEventListener("keydown", onKey);
  $("#help-open").addEventListener("click", () => toggleHelp(true));
  $("#help-close").addEventListener("click", () => toggleHelp(false));
  window.addEventListener("hashchange", route);
  window.addEventListener("resize", scheduleRender);
  // relative times stay fresh
  setInterval(() => {
    for (const el of document.querySelectorAll("time[datetime]")) el.textContent = relTime(el.getAttribute("datetime"));
  }, 30000);
}

wire();
boot();

// Approving several requests of one tool at once. Review stays real: every call that would run
// is shown in full before anything is sent, each is sent as its own decision (the server
// authorises each one as if it were approved on its own), and only calls whose policy allows
// it qualify (docs/server.md, "Approving several requests at once"):
// the same tool and the same policy (allowed decisions, reviewer roles) as the request open
// now; one approval needed (not four-eyes); the policy lets approvals be remembered
// (allow_remember=False means every call is decided on its own); not an "outcome unknown"
// retry; the only call its thread waits for.

import * as api from "./api.js";
import { jsonView, lineEl, partHidden, showAll, showText, textEl } from "./display.js";
import { append, clear, h, keyButton } from "./dom.js";

const enc = encodeURIComponent;

/** Why a call may not be approved together with others (null: it may). */
export function batchRefusal(config, action) {
  if ((config.approvals || 1) > 1) return `needs ${config.approvals} approvals from distinct reviewers`;
  if (config.allow_remember === false) return "its policy says every call is decided on its own";
  if (action.reason === "outcome_unknown") return "its outcome is unknown: look at it on its own";
  if (!config.allowed_decisions.includes("approve")) return "it cannot be approved";
  return null;
}

function samePolicy(a, b) {
  return JSON.stringify([a.allowed_decisions, a.reviewers || null])
    === JSON.stringify([b.allowed_decisions, b.reviewers || null]);
}

/** The other loaded pending threads whose only pending call is a call of `name`. */
export function candidates(summaries, name, exceptThread) {
  return summaries.filter((s) => s.thread_id !== exceptThread && s.status === "interrupted"
    && s.pending.length === 1 && s.pending[0].kind === "review" && !s.pending[0].path
    && s.pending[0].calls.length === 1 && s.pending[0].calls[0].name === name);
}

/**
 * The batch view in `root`: the open request and the others like it, each call in full, a
 * checkbox each; "Approve N" asks once more, then sends one decision per call. `done()` is
 * called when the reviewer closes it.
 */
export async function openBatch(root, first, others, { mayDecide, done }) {
  clear(root).append(h("div", { class: "placeholder" }, "Loading the requests…"));
  const loaded = await Promise.all(others.map((s) => api.get(`api/threads/${enc(s.thread_id)}`)));
  const items = [first];
  const refused = [];
  for (const r of loaded) {
    if (!r.ok || r.data.interrupts.length !== 1 || r.data.interrupts[0].kind !== "review") continue;
    const intr = r.data.interrupts[0];
    if (intr.value.action_requests.length !== 1) continue;
    const action = intr.value.action_requests[0];
    const config = intr.value.review_configs[0];
    const why = action.name !== first.action.name ? "another tool"
      : !samePolicy(config, first.config) ? "another policy (decisions or reviewer roles)"
        : !mayDecide(config) ? "you may not decide it" : batchRefusal(config, action);
    const item = { thread: r.data, intr, action, config };
    if (why) refused.push([item, why]);
    else items.push(item);
  }
  const rows = items.map((it) => {
    const box = h("input", { type: "checkbox", checked: true, class: "batch-pick",
      "aria-label": `Approve the call in thread ${it.thread.thread_id}` });
    const status = h("span", { class: "batch-status", role: "status" });
    const row = h("li", { class: "batch-item", dataset: { threadId: it.thread.thread_id } },
      h("label", { class: "batch-head" }, box, " thread ", lineEl(it.thread.thread_id, 200, { class: "mono" })),
      textEl(jsonView(it.action.args), { lines: 30, chars: 4000, attrs: { class: "json mono batch-args" } }),
      status);
    return { it, box, status, row };
  });
  const count = () => rows.filter((r) => r.box.checked && !r.sent).length;
  const go = keyButton("Approve the checked calls", "Ctrl+Enter", { class: "btn approve batch-go" });
  const confirm = h("div", { class: "confirm", role: "alertdialog", hidden: true });
  const error = h("p", { class: "error", role: "alert" });
  const sync = () => {
    const n = count();
    const label = `Approve ${n} call${n === 1 ? "" : "s"}…`;
    go.replaceChildren(label, " ", h("kbd", { class: "key" }, "Ctrl+Enter"));
    go.setAttribute("aria-label", label);
    go.disabled = n === 0;
    confirm.hidden = true;
  };
  for (const r of rows) r.box.addEventListener("change", sync);
  go.addEventListener("click", () => {
    const n = count();
    if (!n) return;
    // nothing runs on an approval of arguments its reviewer was not shown: a checked call
    // whose arguments are partly hidden is shown whole first, and the reviewer asked again
    const unseen = rows.filter((r) => r.box.checked && !r.sent && partHidden(r.row));
    if (unseen.length) {
      for (const r of unseen) showAll(r.row);
      showText(error, `Part of the arguments of ${unseen.length} call${unseen.length === 1 ? " was" : "s were"} `
        + "hidden. They are shown in full now: read them, then approve again.");
      unseen[0].row.scrollIntoView({ block: "nearest" });
      return;
    }
    error.textContent = "";
    const yes = keyButton(`Yes, run ${n}`, "Enter", { class: "btn approve confirm-yes", onclick: () => send() });
    clear(confirm).append(
      h("p", {}, `Run ${first.action.name} ${n} time${n === 1 ? "" : "s"}, with the arguments shown above? Each runs at once.`),
      h("div", { class: "actions" }, yes,
        keyButton("No", "Esc", { class: "btn ghost confirm-no", onclick: () => { confirm.hidden = true; } })));
    confirm.hidden = false;
    yes.focus();
  });
  async function send() {
    confirm.hidden = true;
    go.disabled = true;
    for (const r of rows) {
      if (!r.box.checked || r.sent) continue;
      r.box.disabled = true;
      r.status.textContent = "Sending…";
      const res = await api.post(`api/threads/${enc(r.it.thread.thread_id)}/decisions`, {
        // each approval is for the revision of the call the list shows (409 if it changed)
        interrupt_id: r.it.intr.id,
        decisions: { [r.it.action.tool_call_id]: { type: "approve", revision: r.it.config.revision || 1 } },
      });
      r.sent = res.ok;
      r.row.classList.add(res.ok ? "batch-ok" : "batch-failed");
      if (res.ok) r.status.textContent = "Approved.";
      else showText(r.status, res.data.message || `HTTP ${res.status}`);
    }
    sync();
  }
  const close = keyButton("Close", "Esc", { class: "btn ghost batch-close", onclick: () => done() });
  append(clear(root), [
    h("section", { class: "batch", "aria-label": "Approve several requests" },
      h("h2", {}, "Approve several ", lineEl(first.action.name, 200, { class: "tool-name" }), " calls"),
      h("p", { class: "muted" }, "Each checked call runs with exactly the arguments shown. Each is sent as a "
        + "decision of its own; the server checks each one."),
      h("ol", { class: "batch-list" }, rows.map((r) => r.row)),
      refused.length ? h("div", { class: "batch-refused" },
        h("h3", {}, "Not included (decide these one by one)"),
        h("ul", {}, refused.map(([it, why]) => h("li", {},
          lineEl(it.thread.thread_id, 200, { class: "mono" }), ": ", why)))) : null,
      h("div", { class: "actions" }, go, close), confirm, error)]);
  sync();
  go.focus();
  root.keys = { escape: () => (confirm.hidden ? done() : (confirm.hidden = true)) };
}

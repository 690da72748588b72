// Requests raised inside sub-agents (Agent.as_tool): the path from the thread that shows them
// to the call, and the notice on a sub-agent's own thread (its requests are decided on the
// top-most thread). Every name, id and thread comes through the display policy (lineEl).

import { lineEl } from "./display.js";
import { h } from "./dom.js";

const enc = encodeURIComponent;

function threadLink(threadId, attrs = {}) {
  return h("a", { href: `#/t/${enc(threadId)}`, class: "thread-link mono", ...attrs },
    lineEl(threadId, 120));
}

/**
 * The path of a request raised inside a sub-agent, one step per line: which agent, in which
 * thread, made which call. Null for a request of this thread.
 */
export function pathEl(path) {
  if (!path || !path.length) return null;
  return h("div", { class: "call-path", "aria-label": "Raised inside a sub-agent" },
    h("div", { class: "label" }, "Raised inside a sub-agent"),
    h("ol", {}, path.map((step, i) => h("li", {
      class: "path-step", dataset: { threadId: step.thread_id, agent: step.agent },
    },
    lineEl(step.agent, 80, { class: "path-agent" }),
    step.tool_name ? [i < path.length - 1 ? " calls sub-agent " : " calls ",
      lineEl(step.tool_name, 80, { class: "tool-name" })] : " asks",
    step.tool_call_id ? lineEl(step.tool_call_id, 80, { class: "call-id mono" }) : null,
    i > 0 ? h("span", { class: "path-thread" }, " in thread ", threadLink(step.thread_id)) : null))));
}

/** " (in researcher)" for a list row whose request a sub-agent raised. */
export function viaText(path) {
  return path && path.length > 1 ? ` (in ${path.slice(1).map((s) => s.agent).join(" › ")})` : "";
}

/**
 * On a sub-agent's own thread: whose call runs it, and where its requests are decided.
 * Null on a thread that is not a sub-agent's.
 */
export function childNotice(t) {
  if (!t.parent) return null;
  const root = t.root_thread_id || t.parent.thread_id;
  return h("div", { class: "subagent-notice notice", role: "note" },
    "This thread is run by the sub-agent tool ", lineEl(t.parent.tool_name, 80, { class: "tool-name" }),
    " for call ", lineEl(t.parent.tool_call_id, 80, { class: "mono" }), " of agent ",
    lineEl(t.parent.agent, 80), " in thread ",
    threadLink(t.parent.thread_id, { class: "thread-link mono parent-link" }), ". ",
    "Its requests are shown there with their path and decided on thread ",
    threadLink(root, { class: "thread-link mono root-link" }), "; this view is read-only.");
}

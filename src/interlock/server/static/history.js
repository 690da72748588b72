// One row of the "Decisions and activity" table, from an audit record.

import { argsDiff } from "./diff.js";
import { lineEl, textEl } from "./display.js";
import { h, pretty, timeEl } from "./dom.js";

const VERB = { approve: "approved", edit: "edited", reject: "rejected", respond: "responded to" };

function names(calls) {
  return (calls || []).map((c) => c.name).join(", ");
}

function describe(rec) {
  const d = rec.data || {};
  switch (rec.kind) {
    case "request_raised":
      return { what: `review requested: ${names(d.calls)}`,
        detail: d.reason === "outcome_unknown" ? "the process stopped while the call ran" : null };
    case "decision": {
      const extra = [];
      if (d.remember) extra.push(`remember for this ${d.remember}`);
      if (d.message) extra.push(`message: ${d.message}`);
      if (d.via_thread_id) extra.push(`given on thread ${d.via_thread_id}`);
      // an edit shows what changed: the model's proposal against what ran
      const diff = d.edited_action
        ? argsDiff(d.args, d.edited_action.args, d.name, d.edited_action.name).el : null;
      return { what: `${VERB[d.type] || d.type} ${d.name}`, detail: extra.join("\n") || null,
        diff, decision: d.type };
    }
    case "auto_approved":
      return { what: `auto-approved ${d.name}`, detail: `by the remembered approval (${d.rule})`, decision: "approve" };
    case "rule_created":
      return { what: `remembered approval of ${d.tool_name} for this thread` };
    case "rule_revoked":
      return { what: `revoked the remembered approval of ${d.tool_name}` };
    case "expired":
      return { what: `expired: ${d.name}`, detail: "no reviewer decided in time; rejected", decision: "reject" };
    case "cancelled":
      return { what: "cancelled the pending calls", detail: d.reason ? `reason: ${d.reason}` : null, decision: "reject" };
    case "tool_started":
      return { what: `started ${d.name}`, detail: d.attempt > 1 ? `attempt ${d.attempt}` : null, minor: true };
    case "tool_finished":
      return { what: `finished ${d.name} (${d.status})`,
        detail: d.result_chars > (d.result || "").length ? `${d.result}… (${d.result_chars} characters)` : d.result,
        minor: true };
    case "input_requested":
      return { what: "asked a question", detail: pretty(d.value) };
    case "input_answered":
      return { what: "answered the question",
        detail: pretty(d.value) + (d.via_thread_id ? `\ngiven on thread ${d.via_thread_id}` : "") };
    // the rows that link a parent thread and its sub-agents' threads
    case "subagent_started":
      return { what: `sub-agent thread started for call ${d.parent_tool_call_id} (${d.tool_name})`,
        detail: `parent thread ${d.parent_thread_id} (agent ${d.parent_agent})` };
    case "subagent_waiting":
      return { what: `${d.name} waits for its sub-agent thread ${d.child_thread_id}`,
        detail: (d.interrupts || []).length ? `requests shown here: ${d.interrupts.join(", ")}` : null, minor: true };
    case "decision_routed":
      return { what: `decision passed to sub-agent thread ${d.child_thread_id}`,
        detail: `request ${d.interrupt_id}` + (d.step ? `, call ${d.step.tool_call_id} (${d.step.tool_name})` : "") };
    case "outcome_unknown":
      return { what: `outcome unknown: ${d.name}`, detail: "the process stopped while the call ran" };
    case "recovered":
      return { what: "recovered the run", minor: true };
    case "rejected_by_policy":
      return { what: `rejected by policy: ${d.name}`, detail: d.message, decision: "reject" };
    default:
      return { what: rec.kind.replace(/_/g, " "), detail: Object.keys(d).length ? pretty(d) : null, minor: true };
  }
}

export function historyRow(rec) {
  const { what, detail, diff, decision, minor } = describe(rec);
  const system = rec.actor === "system" || rec.actor.startsWith("system:");
  return h("tr", { class: `${minor ? "minor" : ""} ${decision ? `decision-row hist-${decision}` : ""}`.trim(),
    dataset: { kind: rec.kind } },
  h("td", { class: "when" }, timeEl(rec.ts)),
  h("td", { class: `actor${system ? " system" : ""}` }, lineEl(rec.actor, 80)),
  h("td", { class: "what" }, h("div", {}, lineEl(what, 300)),
    diff || null,
    detail ? textEl(detail, { lines: 10, chars: 1500, attrs: { class: "detail mono" } }) : null));
}

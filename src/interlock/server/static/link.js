// The confirmation page of an e-mail decision link. The link's token is in the URL's fragment
// (never sent to a server, so never in an access log); this script reads it, posts it in a
// request body to ask what the link is for, shows that as text, and posts the decision.
import { append, clear, h } from "./dom.js";

const root = document.getElementById("link");
const title = document.querySelector("h1");
const api = root.dataset.api || "";
const token = location.hash.length > 1 ? decodeURIComponent(location.hash.slice(1))
  : root.dataset.legacy !== undefined ? decodeURIComponent(location.pathname.split("/").pop())
    : "";

async function post(what, body) {
  try {
    const response = await fetch(api + what, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ token, ...body }),
      cache: "no-store",
      credentials: "same-origin",
    });
    return await response.json();
  } catch (err) {
    return { title: "The server did not answer", message: `Try again in a moment (${err}).` };
  }
}

function show(data, ...children) {
  title.textContent = data.title;
  document.title = data.title;
  clear(root);
  append(root, children);
}

function outcome(data) {
  show(data, h("p", { class: "link-result" }, data.message || ""));
}

function confirmation(data) {
  const parts = [
    h("p", {}, "Reviewer: ", h("b", {}, data.reviewer), " · thread ", h("code", {}, data.thread)),
    ...data.path.map((line) => h("p", {}, line)),
    h("p", {}, "Tool: ", h("b", {}, data.tool)),
    h("pre", {}, data.args),
    ...data.warnings.map((w) => h("p", { class: "notice" },
      h("span", { class: "warn-sign", "aria-hidden": "true" }), w)),
  ];
  if (data.description) parts.push(h("p", {}, data.description));
  if (data.note) parts.push(h("p", { class: "notice link-note" }, data.note));
  if (data.approvals_required > 1) {
    const by = data.approved_by.join(", ") || "nobody yet";
    parts.push(h("p", {}, `Approvals: ${data.approved_by.length} of ${data.approvals_required}` +
      ` (${by})`));
  }
  if (!data.decisions.length) {
    parts.push(h("p", {}, "Decide this call in the inbox."));
    show(data, parts);
    return;
  }
  const message = h("input", { name: "message", maxlength: "2000" });
  const buttons = [];
  if (data.decisions.includes("approve")) {
    buttons.push(h("button", { name: "decision", value: "approve" }, "Approve"));
  }
  if (data.decisions.includes("reject")) {
    buttons.push(" ", h("label", {}, "Reason (optional) ", message), " ",
      h("button", { name: "decision", value: "reject" }, "Reject"));
  }
  const form = h("form", {
    onsubmit: async (event) => {
      event.preventDefault();
      const decision = event.submitter ? event.submitter.value : "";
      for (const b of form.querySelectorAll("button")) b.disabled = true;
      const answer = await post("decide", { decision, message: message.value });
      outcome(answer);
    },
  }, buttons);
  parts.push(form);
  show(data, parts);
}

if (!token) {
  outcome({ title: "This link cannot be used", message: "The link has no token: open it " +
    "exactly as it is in the e-mail, or open the request in the inbox instead." });
} else {
  const data = await post("view", {});
  if (data.reviewer === undefined) outcome(data);
  else confirmation(data);
}

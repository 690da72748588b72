// The difference between the arguments a model proposed and the ones a reviewer edited: one
// block per changed argument, text compared line by line (strings as their text, other values
// as indented JSON), unchanged arguments named once. Used before an edit is sent and in the
// history afterwards.

import { lineEl } from "./display.js";
import { h, pretty } from "./dom.js";
import { isRaw } from "./exact.js";

const MAX_CELLS = 250000;  // beyond this a plain "all removed, all added" is shown

/** Line diff of two texts: [{op: " " | "-" | "+", text}] (longest common subsequence). */
export function lineDiff(a, b) {
  const x = a.split("\n");
  const y = b.split("\n");
  if (x.length * y.length > MAX_CELLS) {
    return [...x.map((text) => ({ op: "-", text })), ...y.map((text) => ({ op: "+", text }))];
  }
  const n = x.length;
  const m = y.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = x[i] === y[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const out = [];
  let i = 0;
  let j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) {
      out.push({ op: " ", text: x[i] });
      i++;
      j++;
    } else if (lcs[i + 1][j] >= lcs[i][j + 1]) out.push({ op: "-", text: x[i++] });
    else out.push({ op: "+", text: y[j++] });
  }
  while (i < n) out.push({ op: "-", text: x[i++] });
  while (j < m) out.push({ op: "+", text: y[j++] });
  return out;
}

function asText(value) {
  return typeof value === "string" ? value : pretty(value);
}

function kindOf(value) {
  return isRaw(value) ? "number" : typeof value;
}

function same(a, b) {
  return JSON.stringify(a) === JSON.stringify(b);
}

const OPS = { " ": "same", "-": "del", "+": "add" };

function linesEl(lines) {
  return h("pre", { class: "diff-lines mono" }, lines.map((l) => h("span", {
    class: `diff-line diff-${OPS[l.op]}`,
  }, h("span", { class: "diff-op", "aria-hidden": "true" }, l.op), l.text ? lineEl(l.text) : " ")));
}

/** {changed: [names], el} comparing ``before`` and ``after`` (tool names and arguments). */
export function argsDiff(before, after, beforeName = null, afterName = null) {
  const b = before || {};
  const a = after || {};
  const names = [...new Set([...Object.keys(b), ...Object.keys(a)])];
  const changed = names.filter((k) => !(k in b && k in a && same(b[k], a[k])));
  const blocks = [];
  if (beforeName && afterName && beforeName !== afterName) {
    blocks.push(h("div", { class: "diff-arg", dataset: { arg: "(tool)" } },
      h("div", { class: "diff-name" }, "tool"),
      linesEl([{ op: "-", text: beforeName }, { op: "+", text: afterName }])));
  }
  for (const k of changed) {
    let lines;
    let note = null;
    if (!(k in b)) {
      lines = asText(a[k]).split("\n").map((text) => ({ op: "+", text }));
      note = "added";
    } else if (!(k in a)) {
      lines = asText(b[k]).split("\n").map((text) => ({ op: "-", text }));
      note = "removed";
    } else {
      lines = lineDiff(asText(b[k]), asText(a[k]));
      if (kindOf(b[k]) !== kindOf(a[k])) note = `was ${kindOf(b[k])}, now ${kindOf(a[k])}`;
    }
    blocks.push(h("div", { class: "diff-arg", dataset: { arg: k } },
      h("div", { class: "diff-name" }, lineEl(k, 200, { class: "mono" }),
        note ? h("span", { class: "muted" }, ` (${note})`) : null),
      linesEl(lines)));
  }
  const unchanged = names.filter((k) => !changed.includes(k));
  const el = h("div", { class: "diff" },
    blocks.length ? blocks : h("p", { class: "muted diff-none" }, "No changes yet: these are the proposed arguments."),
    unchanged.length ? h("p", { class: "muted diff-unchanged" }, "Unchanged: ",
      unchanged.flatMap((k, i) => [i ? ", " : null, lineEl(k, 200)])) : null);
  return { changed, el };
}

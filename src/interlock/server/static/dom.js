// Safe DOM building. Every piece of text becomes a text node (never parsed as HTML), and
// attributes are set one by one; there is no innerHTML anywhere in the inbox.

const PROPS = new Set(["value", "checked", "disabled", "hidden", "selected", "readOnly"]);

export function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on")) {
      if (typeof value !== "function") throw new TypeError(`${key} must be a function`);
      el.addEventListener(key.slice(2).toLowerCase(), value);
    } else if (PROPS.has(key)) el[key] = value;
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  const list = Array.isArray(children) ? children.flat(Infinity) : [children];
  for (const child of list) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

export function clear(el) {
  while (el.firstChild) el.removeChild(el.firstChild);
  return el;
}

export function pretty(value) {
  try {
    return JSON.stringify(value, null, 2);
  } catch {
    return String(value);
  }
}

export function oneLine(value) {
  const text = typeof value === "string" ? value : JSON.stringify(value);
  return (text || "").replace(/\s+/g, " ").trim();
}

const UNITS = [
  ["year", 31536000], ["month", 2592000], ["day", 86400], ["hour", 3600], ["minute", 60],
];
const RTF = new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });

export function relTime(iso) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "";
  const secs = (t - Date.now()) / 1000;
  for (const [unit, size] of UNITS) {
    if (Math.abs(secs) >= size) return RTF.format(Math.round(secs / size), unit);
  }
  return Math.abs(secs) < 10 ? "just now" : RTF.format(Math.round(secs), "second");
}

export function absTime(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

export function timeEl(iso) {
  return h("time", { datetime: iso, title: absTime(iso) }, relTime(iso));
}

/** A button whose label is followed by its keyboard shortcut (``<kbd>``); the accessible name
 * stays the plain label, and ``aria-keyshortcuts`` names the key. */
export function keyButton(label, key, attrs = {}) {
  return h("button", { type: "button", ...attrs, "aria-label": label, "aria-keyshortcuts": key },
    label, " ", h("kbd", { class: "key" }, key));
}

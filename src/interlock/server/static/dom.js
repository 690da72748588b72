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

// The first use of Intl in a page loads ICU's locale data: 30-80 ms of the main thread on a
// slow 2-core machine, at every page load. The list's first draw does without it: counts are
// grouped as en-US groups them, and in an English browser relative times are worded here as
// Intl.RelativeTimeFormat("en", { numeric: "auto" }) words them (a browser test compares the
// two). Absolute times (a time's tooltip) and other languages use Intl, which warmIntl() starts
// once the first rows are on screen.
let rtf = null;
let intlWarm = false;
const ENGLISH = /^en(-US)?$/i.test(globalThis.navigator?.language || "");
const NEXT = { year: "next year", month: "next month", day: "tomorrow" };
const LAST = { year: "last year", month: "last month", day: "yesterday" };

/** A whole number as en-US writes it (1,234,567), without Intl. */
export function count(n) {
  if (!Number.isInteger(n)) return n.toLocaleString("en-US");
  const digits = String(Math.abs(n)).replace(/\B(?=(\d{3})+$)/g, ",");
  return n < 0 ? `-${digits}` : digits;
}

/** `value` `unit`s from now, as Intl.RelativeTimeFormat(numeric: "auto") writes it. */
export function relative(value, unit, english = ENGLISH) {
  if (!english) {
    rtf = rtf || new Intl.RelativeTimeFormat(undefined, { numeric: "auto" });
    return rtf.format(value, unit);
  }
  if (value === 1 && NEXT[unit]) return NEXT[unit];
  if (value === -1 && LAST[unit]) return LAST[unit];
  if (value === 0) return { second: "now", day: "today" }[unit] || `this ${unit}`;
  const n = Math.abs(value);
  const what = `${count(n)} ${unit}${n === 1 ? "" : "s"}`;
  return value < 0 ? `${what} ago` : `in ${what}`;
}

export function relTime(iso) {
  const t = Date.parse(iso);
  if (Number.isNaN(t)) return "";
  const secs = (t - Date.now()) / 1000;
  for (const [unit, size] of UNITS) {
    if (Math.abs(secs) >= size) return relative(Math.round(secs / size), unit);
  }
  return Math.abs(secs) < 10 ? "just now" : relative(Math.round(secs), "second");
}

export function absTime(iso) {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? String(iso) : d.toLocaleString();
}

/** A <time> with its relative text; its title (the absolute time, Intl's work) is given at
 * once when Intl is warm, else by warmIntl(). */
export function timeEl(iso) {
  return h("time", { datetime: iso, title: intlWarm ? absTime(iso) : undefined }, relTime(iso));
}

/** Load Intl's data (when the main thread is idle after the first draw) and give every
 * <time> its tooltip. */
export function warmIntl() {
  if (intlWarm) return;
  intlWarm = true;
  for (const el of document.querySelectorAll("time[datetime]:not([title])")) {
    el.title = absTime(el.getAttribute("datetime"));
  }
}

/** A button whose label is followed by its keyboard shortcut (``<kbd>``); the accessible name
 * stays the plain label, and ``aria-keyshortcuts`` names the key. */
export function keyButton(label, key, attrs = {}) {
  return h("button", { type: "button", ...attrs, "aria-label": label, "aria-keyshortcuts": key },
    label, " ", h("kbd", { class: "key" }, key));
}

// HTTP and server-sent events for the inbox. The reviewer token is sent in the Authorization
// header (never in a URL or a cookie); streams are read with fetch() so they carry it too.

import { parseJSON } from "./exact.js";

const KEY = "interlock.token";
let token = sessionStorage.getItem(KEY) || localStorage.getItem(KEY) || "";
let onUnauthorized = () => {};

export function setToken(value, remember) {
  token = value;
  sessionStorage.setItem(KEY, value);
  if (remember) localStorage.setItem(KEY, value);
}

export function forgetToken() {
  token = "";
  sessionStorage.removeItem(KEY);
  localStorage.removeItem(KEY);
}

export function hasToken() {
  return Boolean(token);
}

export function whenUnauthorized(fn) {
  onUnauthorized = fn;
}

/** Tell the whenUnauthorized handler about a 401 asked for with `quiet`. */
export function unauthorized(data) {
  onUnauthorized(data);
}

export function url(path) {
  return new URL(path, document.baseURI).toString();
}

function headers(extra) {
  const out = { Accept: "application/json", ...extra };
  if (token) out.Authorization = `Bearer ${token}`;
  return out;
}

/**
 * Returns {ok, status, data}; data is the parsed JSON body (or {message} for other bodies).
 * A 401 calls the whenUnauthorized handler unless `quiet` (the caller handles it).
 */
export function request(method, path, body, options = undefined) {
  return settle(fetch(url(path), {
    method,
    headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }),
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: "no-store",
  }), options);
}

/**
 * A GET of `path`: the answer to the one early.js sent while the page loaded, if it sent
 * exactly this request with the token in use now (each is taken once), else a new request.
 */
export function getEarly(path, options = undefined) {
  const early = window.interlockEarly && window.interlockEarly[path];
  if (early) delete window.interlockEarly[path];
  if (early && early.token === token) return settle(early.response, options);
  return get(path, options);
}

/** Forget early.js's answers not taken (from here on, every request is a new one). */
export function dropEarly() {
  window.interlockEarly = undefined;
}

async function settle(pending, { quiet = false } = {}) {
  let res;
  try {
    res = await pending;
  } catch (err) {
    return { ok: false, status: 0, data: { error: "NetworkError",
      message: `The server could not be reached (${err.message}).` } };
  }
  let data;
  try {
    data = parseJSON(await res.text());
  } catch {
    data = { message: `HTTP ${res.status}` };
  }
  if (res.status === 401 && !quiet) onUnauthorized(data);
  return { ok: res.ok, status: res.status, data };
}

export const get = (path, options) => request("GET", path, undefined, options);
export const post = (path, body) => request("POST", path, body ?? {});
export const del = (path) => request("DELETE", path);

function parseBlock(block) {
  const ev = { event: "message", data: "", id: null };
  let seen = false;
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const i = line.indexOf(":");
    const field = i < 0 ? line : line.slice(0, i);
    const value = i < 0 ? "" : line.slice(i + 1).replace(/^ /, "");
    if (field === "event") { ev.event = value; seen = true; }
    else if (field === "data") { ev.data += (ev.data ? "\n" : "") + value; seen = true; }
    else if (field === "id") ev.id = value;
  }
  if (!seen) return null;
  try {
    ev.data = ev.data ? parseJSON(ev.data) : null;
  } catch {
    return null;
  }
  return ev;
}

/**
 * Follow an SSE endpoint, reconnecting with backoff. Callbacks: onEvent(name, data),
 * onOpen(isReconnect), onDown(). Returns {close()}.
 */
export function stream(path, { onEvent, onOpen = () => {}, onDown = () => {} }) {
  let stopped = false;
  let controller = null;
  let lastId = null;
  let opened = false;

  async function run() {
    let delay = 500;
    while (!stopped) {
      controller = new AbortController();
      try {
        const extra = { Accept: "text/event-stream" };
        if (lastId) extra["Last-Event-ID"] = lastId;
        const res = await fetch(url(path), { headers: headers(extra), signal: controller.signal,
          cache: "no-store" });
        if (res.status === 401) {
          onUnauthorized(await res.json().catch(() => ({})));
          return;
        }
        if (!res.ok || !res.body) throw new Error(`HTTP ${res.status}`);
        onOpen(opened);
        opened = true;
        delay = 500;
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buf = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buf += value.replace(/\r\n?/g, "\n");
          let cut;
          while ((cut = buf.indexOf("\n\n")) >= 0) {
            const ev = parseBlock(buf.slice(0, cut));
            buf = buf.slice(cut + 2);
            if (!ev) continue;
            if (ev.id) lastId = ev.id;
            onEvent(ev.event, ev.data);
          }
        }
      } catch (err) {
        if (stopped) return;
      }
      if (stopped) return;
      onDown();
      await new Promise((r) => setTimeout(r, delay));
      delay = Math.min(delay * 2, 10000);
    }
  }

  run();
  return {
    close() {
      stopped = true;
      if (controller) controller.abort();
    },
  };
}

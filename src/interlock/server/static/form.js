// Arguments editor generated from a tool's JSON schema: one field per argument for simple
// types (text, numbers, booleans, choices, optional values), a JSON box for anything else,
// and a raw-JSON mode for the whole object. Values are checked against the schema before the
// edit can be submitted; the server checks again and its message is shown if it disagrees.

import { h, pretty } from "./dom.js";
import { isRaw, numberText, parseJSON, rawKind, typedNumber } from "./exact.js";

function resolve(root, schema) {
  let s = schema || {};
  for (let i = 0; i < 10 && s.$ref; i++) {
    const path = s.$ref.replace(/^#\//, "").split("/");
    let target = root;
    for (const part of path) target = target ? target[part] : undefined;
    s = { ...(target || {}), ...Object.fromEntries(Object.entries(s).filter(([k]) => k !== "$ref")) };
  }
  return s;
}

/** {inner, nullable} for Optional[X] (anyOf [X, {type: null}]); else {inner: schema}. */
function unwrapOptional(root, schema) {
  const s = resolve(root, schema);
  const alts = s.anyOf || s.oneOf;
  if (Array.isArray(alts)) {
    const rest = alts.filter((a) => resolve(root, a).type !== "null");
    if (rest.length === 1 && rest.length < alts.length) {
      return { inner: { ...resolve(root, rest[0]), title: s.title, description: s.description,
        default: s.default }, nullable: true };
    }
  }
  return { inner: s, nullable: false };
}

function typeOf(value) {
  if (value === null) return "null";
  if (isRaw(value)) return rawKind(value);
  if (Array.isArray(value)) return "array";
  if (Number.isInteger(value)) return "integer";
  return typeof value;
}

function typeMatches(type, value) {
  const actual = typeOf(value);
  if (type === "number") return actual === "number" || actual === "integer";
  return actual === type;
}

/** Errors (strings) of ``value`` against ``schema``; a useful subset of JSON schema. */
export function validate(root, schema, value, path = "") {
  const s = resolve(root, schema);
  const where = path || "arguments";
  const errors = [];
  const alts = s.anyOf || s.oneOf;
  if (Array.isArray(alts)) {
    const ok = alts.some((alt) => validate(root, alt, value, path).length === 0);
    return ok ? [] : [`${where}: does not match any allowed form`];
  }
  if (s.enum && !s.enum.some((e) => JSON.stringify(e) === JSON.stringify(value))) {
    errors.push(`${where}: must be one of ${s.enum.map((e) => JSON.stringify(e)).join(", ")}`);
  }
  if ("const" in s && JSON.stringify(s.const) !== JSON.stringify(value)) {
    errors.push(`${where}: must be ${JSON.stringify(s.const)}`);
  }
  const types = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (types.length && !types.some((t) => typeMatches(t, value))) {
    errors.push(`${where}: expected ${types.join(" or ")}, got ${typeOf(value)}`);
    return errors;
  }
  if (typeof value === "string") {
    if (s.minLength !== undefined && value.length < s.minLength) {
      errors.push(`${where}: at least ${s.minLength} characters`);
    }
    if (s.maxLength !== undefined && value.length > s.maxLength) {
      errors.push(`${where}: at most ${s.maxLength} characters`);
    }
    if (s.pattern) {
      try {
        if (!new RegExp(s.pattern, "u").test(value)) errors.push(`${where}: must match ${s.pattern}`);
      } catch { /* a pattern JavaScript cannot compile is left to the server */ }
    }
  }
  if (typeof value === "number") {
    if (s.minimum !== undefined && value < s.minimum) errors.push(`${where}: at least ${s.minimum}`);
    if (s.maximum !== undefined && value > s.maximum) errors.push(`${where}: at most ${s.maximum}`);
    if (s.exclusiveMinimum !== undefined && value <= s.exclusiveMinimum) {
      errors.push(`${where}: more than ${s.exclusiveMinimum}`);
    }
    if (s.exclusiveMaximum !== undefined && value >= s.exclusiveMaximum) {
      errors.push(`${where}: less than ${s.exclusiveMaximum}`);
    }
  }
  if (Array.isArray(value)) {
    if (s.minItems !== undefined && value.length < s.minItems) errors.push(`${where}: at least ${s.minItems} items`);
    if (s.maxItems !== undefined && value.length > s.maxItems) errors.push(`${where}: at most ${s.maxItems} items`);
    if (s.items && typeof s.items === "object") {
      value.forEach((item, i) => errors.push(...validate(root, s.items, item, `${where}[${i}]`)));
    }
  }
  if (typeOf(value) === "object") {
    const props = s.properties || {};
    for (const name of s.required || []) {
      if (!(name in value)) errors.push(`${path ? path + "." : ""}${name}: required`);
    }
    for (const [name, item] of Object.entries(value)) {
      const sub = path ? `${path}.${name}` : name;
      if (name in props) errors.push(...validate(root, props[name], item, sub));
      else if (s.additionalProperties === false) errors.push(`${sub}: unknown argument`);
      else if (typeof s.additionalProperties === "object") {
        errors.push(...validate(root, s.additionalProperties, item, sub));
      }
    }
  }
  return errors;
}

let uid = 0;

function field(root, name, rawSchema, value, present, required) {
  const { inner, nullable } = unwrapOptional(root, rawSchema);
  const id = `arg-${++uid}`;
  const types = Array.isArray(inner.type) ? inner.type : [inner.type];
  // a text box turns a carriage return into a line break (and a one-line box drops it), so
  // text that holds one is edited as a JSON string, where it is the escape \r and is kept
  const cr = (v) => typeof v === "string" && v.includes("\r");
  const kind = inner.enum ? "enum"
    : types.includes("boolean") && types.length === 1 ? "boolean"
    : types.includes("integer") && types.length === 1 ? "integer"
    : types.includes("number") && types.length === 1 ? "number"
    : types.includes("string") && types.length === 1 && !(present && cr(value)) ? "string" : "json";
  let input;
  const isNull = value === null;
  if (kind === "enum") {
    input = h("select", { id },
      inner.enum.map((opt, i) => h("option", { value: String(i),
        selected: JSON.stringify(opt) === JSON.stringify(value) }, String(opt))));
  } else if (kind === "boolean") {
    input = h("input", { id, type: "checkbox", checked: value === true });
  } else if (kind === "integer" || kind === "number") {
    input = h("input", { id, type: "text", inputmode: kind === "integer" ? "numeric" : "decimal",
      value: present && !isNull ? numberText(value) : "", autocomplete: "off", spellcheck: "false" });
  } else if (kind === "string") {
    const text = present && !isNull ? String(value) : "";
    const multi = text.length > 60 || text.includes("\n") || inner.maxLength === undefined && /query|content|body|text|sql|message|script/i.test(name);
    input = multi
      ? h("textarea", { id, rows: Math.min(12, Math.max(3, text.split("\n").length + 1)), spellcheck: "false" })
      : h("input", { id, type: "text", autocomplete: "off", spellcheck: "false" });
    input.value = text;
  } else {
    input = h("textarea", { id, rows: 4, class: "mono", spellcheck: "false" });
    input.value = present && !isNull ? pretty(value) : "";
  }
  const nullBox = nullable ? h("input", { type: "checkbox", checked: present && isNull }) : null;
  const error = h("div", { class: "field-error", role: "alert" });
  const label = h("label", { for: id, class: "field-label" },
    h("span", { class: "field-name" }, name),
    required ? h("span", { class: "req", title: "required" }, " *") : null,
    h("span", { class: "field-type" }, nullable ? `${kind === "json" ? "JSON" : kind} or empty` : kind === "json" ? "JSON" : kind));
  const help = inner.description || (present && cr(value))
    ? h("div", { class: "field-help" }, inner.description || "",
      present && cr(value) ? `${inner.description ? " " : ""}This text holds carriage returns `
        + "(\\r), which a text box would change: it is edited as a JSON string." : "")
    : null;
  const wrap = h("div", { class: "field", dataset: { arg: name } }, label, help, input,
    nullBox ? h("label", { class: "null-toggle" }, nullBox, " no value (null)") : null, error);

  function read() {
    if (nullBox && nullBox.checked) return { set: true, value: null };
    if (kind === "enum") return { set: true, value: inner.enum[Number(input.value)] };
    if (kind === "boolean") {
      // an unticked box for an argument the call does not have adds nothing to it
      if (!input.checked && !present && !required) return { set: false };
      return { set: true, value: input.checked };
    }
    const text = input.value;
    if (kind === "string") {
      if (!text && !required && !present) return { set: false };
      return { set: true, value: text };
    }
    if (!text.trim()) {
      if (!required) return { set: false };
      return { set: true, error: "required" };
    }
    if (kind === "integer") {
      if (!/^-?\d+$/.test(text.trim())) return { set: true, error: "must be a whole number" };
      return { set: true, value: typedNumber(text.trim()) };
    }
    if (kind === "number") {
      const n = Number(text.trim());
      if (!Number.isFinite(n)) return { set: true, error: "must be a number" };
      return { set: true, value: typedNumber(text.trim()) };
    }
    try {
      return { set: true, value: parseJSON(text) };
    } catch (err) {
      return { set: true, error: `not valid JSON (${err.message})` };
    }
  }

  function write(v, has) {
    if (nullBox) nullBox.checked = has && v === null;
    if (kind === "enum") {
      const i = inner.enum.findIndex((opt) => JSON.stringify(opt) === JSON.stringify(v));
      input.value = String(Math.max(0, i));
    } else if (kind === "boolean") input.checked = v === true;
    else if (kind === "json") input.value = has && v !== null ? pretty(v) : "";
    else input.value = has && v !== null ? numberText(v) : "";
  }

  // whether the control can hold v as it is (a text box cannot hold a carriage return)
  const holds = (v) => kind !== "string" || !cr(v);

  return { name, el: wrap, input, nullBox, error, read, write, holds };
}

/**
 * Build the editor. Returns {el, read(): {ok, value, errors}, onChange(fn)}.
 */
export function argsEditor(schema, args) {
  const root = schema || {};
  const props = root.properties || {};
  const required = new Set(root.required || []);
  const names = Object.keys(props);
  for (const k of Object.keys(args || {})) if (!names.includes(k)) names.push(k);
  const fields = names.map((name) => field(root, name, props[name] || {}, (args || {})[name],
    Object.prototype.hasOwnProperty.call(args || {}, name), required.has(name)));
  const listeners = [];
  const formBox = h("div", { class: "form-fields" }, fields.map((f) => f.el));
  const raw = h("textarea", { class: "mono raw-json", rows: 10, spellcheck: "false",
    "aria-label": "Arguments as JSON" });
  const rawBox = h("div", { class: "raw-box", hidden: true }, raw);
  const summary = h("div", { class: "form-error", role: "alert" });
  const toggle = h("button", { type: "button", class: "link" }, "Edit as JSON");
  let rawMode = names.length === 0;

  function readForm() {
    const value = {};
    const local = [];
    for (const f of fields) {
      const r = f.read();
      f.error.textContent = r.error ? r.error : "";
      if (r.error) local.push(`${f.name}: ${r.error}`);
      else if (r.set) value[f.name] = r.value;
    }
    return { value, local };
  }

  function read() {
    let value;
    let errors = [];
    if (rawMode) {
      try {
        value = parseJSON(raw.value);
      } catch (err) {
        errors.push(`not valid JSON: ${err.message}`);
      }
      if (!errors.length && (value === null || typeof value !== "object" || Array.isArray(value))) {
        errors.push("the arguments must be a JSON object");
      }
    } else {
      const r = readForm();
      value = r.value;
      errors = r.local;
    }
    if (!errors.length) {
      errors = validate(root, root, value);
      if (!rawMode) {
        for (const f of fields) {
          const mine = errors.filter((e) => e.startsWith(`${f.name}:`) || e.startsWith(`${f.name}[`) || e.startsWith(`${f.name}.`));
          if (mine.length) f.error.textContent = mine.map((e) => e.slice(e.indexOf(":") + 1).trim()).join("; ");
        }
      }
    }
    summary.textContent = errors.length ? `Fix before submitting: ${errors.join("; ")}` : "";
    return { ok: errors.length === 0, value, errors };
  }

  function setMode(toRaw) {
    if (toRaw) {
      const { value } = readForm();
      raw.value = pretty(value);
    } else {
      let parsed;
      try {
        parsed = parseJSON(raw.value);
      } catch {
        summary.textContent = "Fix the JSON before switching back to the form.";
        return;
      }
      const lossy = fields.find((f) => !f.holds(parsed[f.name]));
      if (lossy) {
        summary.textContent = `${lossy.name} holds a carriage return (\\r), which its text box `
          + "would turn into a line break: keep editing the arguments as JSON.";
        return;
      }
      for (const f of fields) f.write(parsed[f.name], Object.prototype.hasOwnProperty.call(parsed, f.name));
    }
    rawMode = toRaw;
    formBox.hidden = toRaw;
    rawBox.hidden = !toRaw;
    toggle.textContent = toRaw ? "Edit as form" : "Edit as JSON";
    changed();
  }

  function changed() {
    const r = read();
    for (const fn of listeners) fn(r);
  }

  toggle.addEventListener("click", () => setMode(!rawMode));
  const el = h("div", { class: "args-editor" }, formBox, rawBox,
    names.length ? h("div", { class: "editor-tools" }, toggle) : null, summary);
  el.addEventListener("input", changed);
  el.addEventListener("change", changed);
  if (rawMode) {
    raw.value = pretty(args || {});
    formBox.hidden = true;
    rawBox.hidden = false;
  }
  return {
    el,
    read,
    onChange(fn) { listeners.push(fn); },
    focus() { (rawMode ? raw : fields[0]?.input)?.focus(); },
  };
}

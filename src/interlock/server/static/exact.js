// JSON numbers exactly as the server wrote them.
//
// A JavaScript number cannot hold every JSON number: an integer beyond 2^53 is rounded
// (9007199254740993 becomes ...992) and 1.0 becomes 1. A number whose text does not come back
// from the parsed value is kept as its text instead (JSON.rawJSON): shown as written,
// compared as written, and sent back unchanged by JSON.stringify, so what a card shows, an edit
// sends and an approval runs are the same number.

/** JSON.parse, keeping numbers a JavaScript number cannot hold as written. */
export function parseJSON(text) {
  return JSON.parse(text, (key, value, context) => (
    typeof value === "number" && context && typeof context.source === "string"
      && String(value) !== context.source ? JSON.rawJSON(context.source) : value));
}

/** Whether `value` is a number kept as its text (see parseJSON). */
export function isRaw(value) {
  return value !== null && typeof value === "object" && JSON.isRawJSON(value);
}

/** A number (or one kept as its text) as its text. */
export function numberText(value) {
  return isRaw(value) ? value.rawJSON : String(value);
}

/** "integer" or "number" for a number kept as its text. */
export function rawKind(value) {
  return /^-?\d+$/.test(value.rawJSON) ? "integer" : "number";
}

/** A number typed by a reviewer (already checked to be one), exact: kept as its text when a
 * JavaScript number would change it. */
export function typedNumber(text) {
  const n = Number(text);
  if (String(n) === text) return n;
  try {
    return JSON.rawJSON(text);  // valid JSON number text only
  } catch {
    return n;
  }
}

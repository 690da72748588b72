// Display integrity: what a reviewer sees is what runs. The same rules as the Python module
// interlock.display (the tests run both on the same texts and compare):
//
// * invisible, reordering and control characters (C0, DEL, C1, bidi controls, zero-width and
//   tag characters, every Default_Ignorable code point, unusual spaces, line/paragraph
//   separators, private-use, surrogate and unassigned code points) are shown as ⟨U+XXXX⟩;
//   the escape marks themselves (⟨ ⟩ ↵ ⇥) are escaped when they occur in the text;
// * text views keep line breaks and tabs, fold 4+ line breaks into "⟨N blank lines⟩" and make
//   the last blank of a line visible; one-line views show ↵ and ⇥;
// * words mixing scripts beyond UTS #39 "highly restrictive" are reported;
// * long texts are clipped with a visible count of what is hidden and a "Show all" button.
//
// Every element built here holds text nodes only (never HTML).

import { count, h } from "./dom.js";

const OPEN = "⟨";
const CLOSE = "⟩";
const NEWLINE_MARK = "↵";
const TAB_MARK = "⇥";
const FOLD_BREAKS = 4;

const INVISIBLE = String.raw`\p{Cf}\p{Co}\p{Cs}\p{Cn}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}`
  + String.raw`\u00A0\u1680\u2000-\u200A\u202F\u205F\u2800`;
const HIDDEN_CLASS = String.raw`\p{Cc}${INVISIBLE}\u27E8\u27E9\u21B5\u21E5`;
const HIDDEN = new RegExp(`[${HIDDEN_CLASS}]`, "gu");
const TOKEN = new RegExp(
  `(?<fold>\\n{${FOLD_BREAKS},})`
  + "|(?<trail>[ \\t](?=\\n|$))"
  + "|(?<emoji>(?<=\\p{So})(?<![\\u21B5\\u21E5])[\\uFE0E\\uFE0F])"
  + "|(?<brk>\\n)|(?<tab>\\t)"
  + `|(?<hidden>[${HIDDEN_CLASS}])`, "gu");
const SO = /\p{So}/u;
const BLANK_RUN = new RegExp(`\\n{${FOLD_BREAKS},}`, "g");
const WORD = /[\p{L}\p{M}\p{N}_]+/gu;

const BIDI = new Set([0x061C, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E,
  0x2066, 0x2067, 0x2068, 0x2069]);
const ZERO_WIDTH = new Set([0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF]);

export const KIND_LABELS = {
  bidi: ["bidi control", "bidi controls"],
  tag: ["tag character", "tag characters"],
  "zero-width": ["zero-width character", "zero-width characters"],
  control: ["control character", "control characters"],
  invisible: ["invisible character", "invisible characters"],
  space: ["unusual space", "unusual spaces"],
  unassigned: ["private-use or unassigned code point", "private-use or unassigned code points"],
  "escape-mark": ["escape mark", "escape marks"],
};

const fmt = count;  // en-US grouping, without Intl

const SURROGATE = /[\uD800-\uDFFF]/;

function cpLen(text) {
  if (!SURROGATE.test(text)) return text.length;  // no pair: one code point per unit
  let n = 0;
  for (const _ of text) n++;  // code points, as Python counts
  return n;
}

export function charKind(ch) {
  const cp = ch.codePointAt(0);
  if (BIDI.has(cp)) return "bidi";
  if (cp >= 0xE0000 && cp <= 0xE007F) return "tag";
  if (ZERO_WIDTH.has(cp)) return "zero-width";
  if (cp < 0x20 || (cp >= 0x7F && cp <= 0x9F) || cp === 0x2028 || cp === 0x2029) return "control";
  if ("⟨⟩↵⇥".includes(ch)) return "escape-mark";
  if (/[\p{Co}\p{Cs}\p{Cn}]/u.test(ch)) return "unassigned";
  if (/\p{Zs}/u.test(ch)) return "space";
  return "invisible";
}

export function escapeChar(ch) {
  return `${OPEN}U+${ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0")}${CLOSE}`;
}

/** [{start, end, shown, kind}] pieces of text (start/end in code units); kind is "plain",
 * "esc", "fold", "brk", "tab" or "emoji". */
function pieces(text, single) {
  const out = [];
  const brk = single ? NEWLINE_MARK : "\n";
  let pos = 0;
  for (const m of text.matchAll(TOKEN)) {
    const start = m.index;
    const end = start + m[0].length;
    if (start > pos) out.push({ start: pos, end: start, shown: text.slice(pos, start), kind: "plain" });
    const g = m.groups;
    if (g.fold !== undefined) {
      out.push({ start, end, shown: `${brk}${OPEN}${m[0].length - 1} blank lines${CLOSE}${brk}`, kind: "fold" });
    } else if (g.brk !== undefined) {
      out.push({ start, end, shown: brk, kind: single ? "mark" : "brk" });
    } else if (g.tab !== undefined) {
      out.push({ start, end, shown: single ? TAB_MARK : "\t", kind: single ? "mark" : "tab" });
    } else if (g.emoji !== undefined) {
      out.push({ start, end, shown: m[0], kind: "plain" });
    } else {
      out.push({ start, end, shown: escapeChar(m[0]), kind: "esc" });
    }
    pos = end;
  }
  if (pos < text.length) out.push({ start: pos, end: text.length, shown: text.slice(pos), kind: "plain" });
  return out;
}

/** text for a multi-line view (as Python's display.visible). */
export function visible(text) {
  return pieces(String(text ?? ""), false).map((p) => p.shown).join("");
}

/** The pieces of a one-line view, cut to `width` code points (with a "… (+N chars)" note). */
function oneLinePieces(text, width) {
  const all = pieces(text, true);
  const full = all.map((p) => p.shown).join("");
  if (width === undefined || width === null || cpLen(full) <= width) return { parts: all, note: null };
  const budget = Math.max(1, width - cpLen(` … (+${fmt(cpLen(text))} chars)`));
  const parts = [];
  let used = 0;
  let taken = 0;  // code units of text shown
  for (const p of all) {
    const len = cpLen(p.shown);
    if (used + len > budget) {
      const room = budget - used;
      if (room > 0 && p.kind === "plain") {
        const cut = Array.from(p.shown).slice(0, room).join("");
        parts.push({ ...p, shown: cut });
        taken = p.start + cut.length;
      }
      break;
    }
    parts.push(p);
    used += len;
    taken = p.end;
  }
  return { parts, note: ` … (+${fmt(cpLen(text.slice(taken)))} chars)` };
}

/** text on one line (as Python's display.one_line). */
export function oneLine(text, width) {
  const { parts, note } = oneLinePieces(String(text ?? ""), width);
  return parts.map((p) => p.shown).join("") + (note || "");
}

// -- scripts ------------------------------------------------------------------------------

export const SCRIPTS = (
  "Latin Greek Cyrillic Armenian Hebrew Arabic Syriac Thaana Devanagari Bengali Gurmukhi "
  + "Gujarati Oriya Tamil Telugu Kannada Malayalam Sinhala Thai Lao Tibetan Myanmar Georgian "
  + "Hangul Ethiopic Cherokee Canadian_Aboriginal Ogham Runic Khmer Mongolian Hiragana Katakana "
  + "Bopomofo Han Yi Old_Italic Gothic Deseret Tagalog Hanunoo Buhid Tagbanwa Limbu Tai_Le "
  + "Linear_B Ugaritic Shavian Osmanya Cypriot Braille Buginese Coptic New_Tai_Lue Glagolitic "
  + "Tifinagh Syloti_Nagri Old_Persian Kharoshthi Balinese Cuneiform Phoenician Phags_Pa Nko "
  + "Sundanese Lepcha Ol_Chiki Vai Saurashtra Kayah_Li Rejang Lycian Carian Lydian Cham "
  + "Tai_Tham Tai_Viet Avestan Egyptian_Hieroglyphs Samaritan Lisu Bamum Javanese Meetei_Mayek "
  + "Imperial_Aramaic Old_South_Arabian Inscriptional_Parthian Inscriptional_Pahlavi Old_Turkic "
  + "Kaithi Batak Brahmi Mandaic Chakma Meroitic_Cursive Meroitic_Hieroglyphs Miao Sharada "
  + "Sora_Sompeng Takri Caucasian_Albanian Bassa_Vah Duployan Elbasan Grantha Pahawh_Hmong "
  + "Khojki Linear_A Mahajani Manichaean Mende_Kikakui Modi Mro Old_North_Arabian Nabataean "
  + "Palmyrene Pau_Cin_Hau Old_Permic Psalter_Pahlavi Siddham Khudawadi Tirhuta Warang_Citi "
  + "Ahom Anatolian_Hieroglyphs Hatran Multani Old_Hungarian SignWriting Adlam Bhaiksuki "
  + "Marchen Newa Osage Tangut Masaram_Gondi Nushu Soyombo Zanabazar_Square Dogra "
  + "Gunjala_Gondi Makasar Medefaidrin Hanifi_Rohingya Sogdian Old_Sogdian Elymaic Nandinagari "
  + "Nyiakeng_Puachue_Hmong Wancho Chorasmian Dives_Akuru Khitan_Small_Script Yezidi"
).split(" ");

// built at the first non-ASCII letter (parsing its 160 Unicode script classes takes a slow
// machine ~20 ms, which a page of ASCII text need not pay before its first draw)
let scriptOf_ = null;
const scriptCache = new Map();

const ALLOWED_MIXES = [
  new Set(["Latin", "Han", "Hiragana", "Katakana"]),
  new Set(["Latin", "Han", "Bopomofo"]),
  new Set(["Latin", "Han", "Hangul"]),
];

export function scriptOf(ch) {
  if (ch.codePointAt(0) < 0x80) return /[A-Za-z]/.test(ch) ? "Latin" : null;
  if (scriptCache.has(ch)) return scriptCache.get(ch);
  scriptOf_ = scriptOf_
    || new RegExp(SCRIPTS.map((s) => `(?<${s}>\\p{Script=${s}})`).join("|"), "u");
  const m = scriptOf_.exec(ch);
  let found = null;
  if (m && m.index === 0) {
    for (const [name, value] of Object.entries(m.groups)) {
      if (value !== undefined) { found = name; break; }
    }
  }
  if (scriptCache.size < 65536) scriptCache.set(ch, found);
  return found;
}

export function wordScripts(word) {
  const seen = [];
  for (const ch of word) {
    const s = scriptOf(ch);
    if (s !== null && !seen.includes(s)) seen.push(s);
  }
  return seen;
}

export function isMixed(scripts) {
  const found = new Set(scripts);
  if (found.size <= 1) return false;
  return !ALLOWED_MIXES.some((allowed) => [...found].every((s) => allowed.has(s)));
}

const ASCII = /^[\x00-\x7F]*$/;

export function mixedScriptWords(text) {
  if (ASCII.test(text)) return [];
  const found = [];
  for (const m of text.matchAll(WORD)) {
    const word = m[0];
    if (ASCII.test(word)) continue;
    const scripts = wordScripts(word);
    if (isMixed(scripts)) found.push([word, scripts]);
  }
  return found;
}

// -- findings and warnings -------------------------------------------------------------------

/** Every string in a JSON-like value, keys included. */
export function strings(value, out = []) {
  if (typeof value === "string") out.push(value);
  else if (Array.isArray(value)) for (const v of value) strings(v, out);
  else if (value && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      out.push(k);
      strings(v, out);
    }
  }
  return out;
}

function prevChar(text, i) {
  if (i >= 2 && /[\uDC00-\uDFFF]/.test(text[i - 1]) && /[\uD800-\uDBFF]/.test(text[i - 2])) {
    return text.slice(i - 2, i);
  }
  return text[i - 1];
}

export function inspect(texts) {
  const found = { kinds: {}, samples: {}, mixed: [], blankLines: 0 };
  for (const text of texts) {
    for (const m of text.matchAll(HIDDEN)) {
      const ch = m[0];
      if (ch === "\n" || ch === "\t") continue;
      if ((ch === "\uFE0E" || ch === "\uFE0F") && m.index > 0 && SO.test(prevChar(text, m.index))) {
        continue;
      }
      const kind = charKind(ch);
      found.kinds[kind] = (found.kinds[kind] || 0) + 1;
      const sample = found.samples[kind] || (found.samples[kind] = []);
      const code = escapeChar(ch).slice(1, -1);
      if (sample.length < 3 && !sample.includes(code)) sample.push(code);
    }
    for (const m of text.matchAll(BLANK_RUN)) found.blankLines += m[0].length - 1;
    for (const [word, scripts] of mixedScriptWords(text)) {
      const known = found.mixed.some(([w, s]) => w === word && s.join() === scripts.join());
      if (found.mixed.length < 5 && !known) found.mixed.push([word, scripts]);
    }
  }
  return found;
}

export function warnings(found) {
  const out = [];
  const parts = [];
  for (const [kind, [one, many]] of Object.entries(KIND_LABELS)) {
    const n = found.kinds[kind] || 0;
    if (n) parts.push(`${n} ${n === 1 ? one : many} (${found.samples[kind].join(", ")})`);
  }
  if (parts.length) out.push(`Hidden characters, shown as ⟨U+…⟩: ${parts.join(", ")}.`);
  if (found.mixed.length) {
    const words = found.mixed.map(([w, s]) => `${oneLine(w)} (${s.join(" + ")})`).join(", ");
    out.push(`Mixed scripts in one word (look-alike letters?): ${words}.`);
  }
  if (found.blankLines) {
    out.push(`Padding: ${found.blankLines} blank lines folded, shown as ⟨N blank lines⟩.`);
  }
  return out;
}

/** Pretty JSON for a reader, hidden characters as ⟨U+XXXX⟩. */
export function jsonView(value) {
  let text;
  try {
    text = JSON.stringify(value, null, 2);
  } catch {
    text = String(value);
  }
  return text === undefined ? String(value) : text;
}

// -- DOM ----------------------------------------------------------------------------------

const PIECE_CLASS = { esc: "esc", fold: "esc fold", mark: "esc mark" };

function nodes(parts) {
  return parts.flatMap((p) => {
    if (!PIECE_CLASS[p.kind]) return [document.createTextNode(p.shown)];
    if (p.kind !== "fold") return [h("span", { class: PIECE_CLASS[p.kind] }, p.shown)];
    // the line breaks around a fold stay line breaks (the span itself does not wrap)
    const [, before, mark, after] = p.shown.match(/^(\n|↵)(.*)(\n|↵)$/su);
    const brk = (c) => (c === "\n" ? document.createTextNode(c) : h("span", { class: "esc mark" }, c));
    return [brk(before), h("span", { class: PIECE_CLASS.fold }, mark), brk(after)];
  });
}

/** A span with `text` on one line; escapes are highlighted. */
export function lineEl(text, width, attrs = {}) {
  const { parts, note } = oneLinePieces(String(text ?? ""), width);
  return h("span", { ...attrs, class: `shown${attrs.class ? ` ${attrs.class}` : ""}` },
    nodes(parts), note ? h("span", { class: "clip-note" }, note) : null);
}

/**
 * A block (default <pre>) showing `text` with escapes highlighted. Texts longer than
 * `lines` lines or `chars` characters are clipped: the block ends with how many lines and
 * characters are hidden and a button that shows everything.
 */
export function textEl(text, { tag = "pre", lines = 14, chars = 2000, attrs = {} } = {}) {
  const value = String(text ?? "");
  const all = pieces(value, false);
  const el = h(tag, { ...attrs, class: `shown${attrs.class ? ` ${attrs.class}` : ""}` });
  let shownLines = 1;
  let shownChars = 0;
  let cut = all.length;
  let cutAt = value.length;
  for (let i = 0; i < all.length; i++) {
    const p = all[i];
    const breaks = (p.shown.match(/\n/g) || []).length;
    const len = cpLen(p.shown);
    if (shownLines + breaks > lines || shownChars + len > chars) {
      cut = i;
      cutAt = p.start;
      if (p.kind === "plain") {  // keep what fits of a plain piece
        let taken = "";
        for (const ch of p.shown) {
          if (ch === "\n" && shownLines + 1 > lines) break;
          if (shownChars + 1 > chars) break;
          if (ch === "\n") shownLines++;
          shownChars++;
          taken += ch;
        }
        if (taken) {
          all.splice(i, 1, { ...p, shown: taken, end: p.start + taken.length },
            { ...p, start: p.start + taken.length, shown: p.shown.slice(taken.length) });
          cut = i + 1;
          cutAt = p.start + taken.length;
        }
      }
      break;
    }
    shownLines += breaks;
    shownChars += len;
  }
  el.append(...nodes(all.slice(0, cut)));
  if (cut < all.length) {
    const rest = value.slice(cutAt);
    const restLines = (rest.match(/\n/g) || []).length;
    const note = `${restLines ? `${fmt(restLines)} more line${restLines === 1 ? "" : "s"}, ` : ""}`
      + `${fmt(cpLen(rest))} more characters hidden`;
    const more = h("button", { type: "button", class: "link show-all" }, "Show all");
    const clip = h("div", { class: "clip-note", role: "note" }, `⋯ ${note} `, more);
    more.addEventListener("click", () => {
      el.replaceChildren(...nodes(all));
      el.dataset.clipped = "false";
      clip.remove();
    });
    el.dataset.clipped = "true";
    return h("div", { class: "clip-wrap" }, el, clip);
  }
  return el;
}

/**
 * Whether a part of a text shown in `root` by textEl is still hidden (clipped, "Show all" not
 * opened) in a view the reader has open (not inside a hidden element).
 */
export function partHidden(root) {
  return [...root.querySelectorAll('[data-clipped="true"]')]
    .some((el) => !el.parentElement.closest("[hidden]"));
}

/** Show whole every clipped text in `root` (as its "Show all" button does). */
export function showAll(root) {
  for (const button of root.querySelectorAll("button.show-all")) button.click();
}

/** Replace the content of `el` (an error line, a banner) by `text` with escapes. */
export function showText(el, text) {
  el.replaceChildren(textEl(text, { tag: "span", lines: 12, chars: 2000 }));
}

/** The visible warning for some texts (null when they hide nothing). */
// The warning sign, drawn by the stylesheet: U+26A0 needs a font that has it (an emoji font),
// and without one Chromium shows an empty box
/**
 * `code` in a description shown as code: the text nodes of `el` (made by textEl, so already
 * plain text) are split at backtick pairs into text nodes and <code> elements. Nothing is
 * parsed as HTML; a backtick without its pair stays as it is.
 */
export function codeSpans(el) {
  const walker = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
  const nodes = [];
  while (walker.nextNode()) nodes.push(walker.currentNode);
  for (const node of nodes) {
    const parts = node.data.split(/`([^`\n]+)`/);
    if (parts.length < 3) continue;
    const out = parts.map((part, i) => (i % 2 ? h("code", { class: "inline-code" }, part)
      : document.createTextNode(part)));
    node.replaceWith(...out);
  }
  return el;
}

export function warnSign() {
  return h("span", { class: "warn-sign", "aria-hidden": "true" });
}

export function warningEl(texts) {
  const lines = warnings(inspect(texts));
  if (!lines.length) return null;
  return h("div", { class: "display-warning", role: "alert" },
    h("strong", {}, warnSign(), "Check this request closely: "),
    lines.map((line) => h("div", {}, line)));
}

/** A small badge for a list row when its texts hide something (null otherwise). */
export function warningBadge(texts, serverWarnings = []) {
  const lines = [...new Set([...serverWarnings, ...warnings(inspect(texts))])];
  if (!lines.length) return null;
  return h("span", { class: "badge display-warn", title: lines.join("\n") }, warnSign(), "hidden text");
}

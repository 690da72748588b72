"""Display integrity: what a reviewer sees is what runs.

One policy for every surface that shows text a model, a tool or a user produced (the terminal
commands, and later Slack or e-mail); the web inbox applies the same rules in
``server/static/display.js``. All functions are pure.

* Characters that are invisible, reorder text or control a terminal are shown as escapes,
  ``⟨U+202E⟩``: control characters (C0, DEL, C1; ESC too), format characters (bidi controls,
  zero-width characters, tag characters U+E0000–U+E007F, the byte order mark), line and paragraph
  separators, private-use, surrogate and unassigned code points, every Default_Ignorable code
  point (variation selectors, Hangul fillers, ...), spaces other than U+0020 and U+3000, and
  the Braille blank. A variation selector U+FE0E/U+FE0F directly after a symbol (an emoji) is
  kept.
* The characters the escapes are made of (``⟨``, ``⟩``) and the one-line marks (``↵``, ``⇥``)
  are escaped too when they occur in the text, so an escape cannot be faked.
* Text views keep line breaks and tabs; a run of more than :data:`FOLD_BREAKS` - 1 empty lines
  becomes one line ``⟨N blank lines⟩``, and whitespace at the end of a line is made visible
  (its last character is escaped), so padding cannot push text out of sight unnoticed.
  One-line views show line breaks as ``↵`` and tabs as ``⇥``.
* Words that mix scripts beyond what UTS #39 calls "highly restrictive" (one script, or Latin
  with Han and Hiragana/Katakana, Bopomofo or Hangul) are reported, e.g. ``pаypal`` with a
  Cyrillic ``а``.

The mapping is injective: different texts are always shown differently, and a line's look
(trailing blanks ignored) determines it. :func:`inspect` says what was found, and
:func:`warnings` turns that into sentences for the visible warning.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import regex

OPEN, CLOSE = "⟨", "⟩"
NEWLINE_MARK, TAB_MARK = "↵", "⇥"
FOLD_BREAKS = 4
"""A run of this many line breaks or more (three or more empty lines) is folded."""

# The same character class as HIDDEN in display.js (tests compare both implementations).
_INVISIBLE = (
    r"\p{Cf}\p{Co}\p{Cs}\p{Cn}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}"
    r"\u00A0\u1680\u2000-\u200A\u202F\u205F\u2800"
)
_HIDDEN_CLASS = rf"\p{{Cc}}{_INVISIBLE}\u27E8\u27E9\u21B5\u21E5"
_HIDDEN = regex.compile(f"[{_HIDDEN_CLASS}]")
_TOKEN = regex.compile(
    rf"(?P<fold>\n{{{FOLD_BREAKS},}})"         # a run of line breaks to fold
    rf"|(?P<trail>[ \t](?=\n|$))"             # the last blank of a line: made visible
    # an emoji presentation selector is kept, but not after a mark this policy escapes (the
    # selector would then follow the escape's ``⟩``, where it shows nothing)
    rf"|(?P<emoji>(?<=\p{{So}})(?<![\u21B5\u21E5])[\uFE0E\uFE0F])"
    rf"|(?P<brk>\n)|(?P<tab>\t)"
    rf"|[{_HIDDEN_CLASS}]"
)
_SO = regex.compile(r"\p{So}")
_BLANK_RUN = regex.compile(rf"\n{{{FOLD_BREAKS},}}")
_WORD = regex.compile(r"[\p{L}\p{M}\p{N}_]+")
_ASCII_HIDDEN = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
"""The characters of :data:`_HIDDEN` that are ASCII, less the line break and tab (which
:func:`inspect` does not report): all it can find in an ASCII text."""

BIDI = frozenset([0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)])
ZERO_WIDTH = frozenset([0x200B, 0x200C, 0x200D, 0x2060, 0xFEFF])

KIND_LABELS = {
    "bidi": ("bidi control", "bidi controls"),
    "tag": ("tag character", "tag characters"),
    "zero-width": ("zero-width character", "zero-width characters"),
    "control": ("control character", "control characters"),
    "invisible": ("invisible character", "invisible characters"),
    "space": ("unusual space", "unusual spaces"),
    "unassigned": ("private-use or unassigned code point", "private-use or unassigned code points"),
    "escape-mark": ("escape mark", "escape marks"),
}


def char_kind(ch: str) -> str:
    """Which kind of hidden character ``ch`` is (a key of :data:`KIND_LABELS`)."""
    cp = ord(ch)
    if cp in BIDI:
        return "bidi"
    if 0xE0000 <= cp <= 0xE007F:
        return "tag"
    if cp in ZERO_WIDTH:
        return "zero-width"
    if cp < 0x20 or 0x7F <= cp <= 0x9F or cp in (0x2028, 0x2029):
        return "control"
    if ch in "⟨⟩↵⇥":
        return "escape-mark"
    if regex.match(r"[\p{Co}\p{Cs}\p{Cn}]", ch):
        return "unassigned"
    if regex.match(r"\p{Zs}", ch):
        return "space"
    return "invisible"


def escape(ch: str) -> str:
    """``⟨U+XXXX⟩`` for one character."""
    return f"{OPEN}U+{ord(ch):04X}{CLOSE}"


def _pieces(text: str, single: bool) -> Iterator[tuple[int, int, str]]:
    """(start, end, shown) for consecutive pieces of ``text``; plain runs are shown as they
    are (``shown == text[start:end]``)."""
    pos = 0
    brk = NEWLINE_MARK if single else "\n"
    for m in _TOKEN.finditer(text):
        start, end = m.span()
        if start > pos:
            yield pos, start, text[pos:start]
        s = m.group()
        kind = m.lastgroup
        if kind == "fold":
            shown = f"{brk}{OPEN}{len(s) - 1} blank lines{CLOSE}{brk}"
        elif kind == "brk":
            shown = brk
        elif kind == "tab":
            shown = TAB_MARK if single else s
        elif kind == "emoji":
            shown = s
        else:
            shown = escape(s)
        yield start, end, shown
        pos = end
    if pos < len(text):
        yield pos, len(text), text[pos:]


def visible(text: str) -> str:
    """``text`` for a multi-line view: hidden characters escaped, blank runs folded, the
    last blank of every line made visible."""
    return "".join(piece for _, _, piece in _pieces(text, False))


def one_line(text: str, width: int | None = None) -> str:
    """``text`` on one line: line breaks as ``↵``, tabs as ``⇥``, otherwise as :func:`visible`.

    With ``width``, a longer result is cut and ends with ``… (+N chars)``, N counting the
    characters of ``text`` left out.
    """
    full = "".join(piece for _, _, piece in _pieces(text, True))
    if width is None or len(full) <= width:
        return full
    budget = max(1, width - len(f" … (+{len(text):,} chars)"))
    out: list[str] = []
    used = 0
    taken = 0
    for start, end, piece in _pieces(text, True):
        if used + len(piece) > budget:
            room = budget - used
            if room > 0 and piece == text[start:end]:
                out.append(piece[:room])
                taken = start + room
            break
        out.append(piece)
        used += len(piece)
        taken = end
    return "".join(out) + f" … (+{len(text) - taken:,} chars)"


# -- scripts ----------------------------------------------------------------------------------

_SCRIPT_NAMES = (
    "Latin Greek Cyrillic Armenian Hebrew Arabic Syriac Thaana Devanagari Bengali Gurmukhi "
    "Gujarati Oriya Tamil Telugu Kannada Malayalam Sinhala Thai Lao Tibetan Myanmar Georgian "
    "Hangul Ethiopic Cherokee Canadian_Aboriginal Ogham Runic Khmer Mongolian Hiragana Katakana "
    "Bopomofo Han Yi Old_Italic Gothic Deseret Tagalog Hanunoo Buhid Tagbanwa Limbu Tai_Le "
    "Linear_B Ugaritic Shavian Osmanya Cypriot Braille Buginese Coptic New_Tai_Lue Glagolitic "
    "Tifinagh Syloti_Nagri Old_Persian Kharoshthi Balinese Cuneiform Phoenician Phags_Pa Nko "
    "Sundanese Lepcha Ol_Chiki Vai Saurashtra Kayah_Li Rejang Lycian Carian Lydian Cham "
    "Tai_Tham Tai_Viet Avestan Egyptian_Hieroglyphs Samaritan Lisu Bamum Javanese Meetei_Mayek "
    "Imperial_Aramaic Old_South_Arabian Inscriptional_Parthian Inscriptional_Pahlavi Old_Turkic "
    "Kaithi Batak Brahmi Mandaic Chakma Meroitic_Cursive Meroitic_Hieroglyphs Miao Sharada "
    "Sora_Sompeng Takri Caucasian_Albanian Bassa_Vah Duployan Elbasan Grantha Pahawh_Hmong "
    "Khojki Linear_A Mahajani Manichaean Mende_Kikakui Modi Mro Old_North_Arabian Nabataean "
    "Palmyrene Pau_Cin_Hau Old_Permic Psalter_Pahlavi Siddham Khudawadi Tirhuta Warang_Citi "
    "Ahom Anatolian_Hieroglyphs Hatran Multani Old_Hungarian SignWriting Adlam Bhaiksuki "
    "Marchen Newa Osage Tangut Masaram_Gondi Nushu Soyombo Zanabazar_Square Dogra "
    "Gunjala_Gondi Makasar Medefaidrin Hanifi_Rohingya Sogdian Old_Sogdian Elymaic Nandinagari "
    "Nyiakeng_Puachue_Hmong Wancho Chorasmian Dives_Akuru Khitan_Small_Script Yezidi"
)
SCRIPTS = tuple(_SCRIPT_NAMES.split())
"""Unicode scripts told apart (Common and Inherited characters belong to every word)."""

_SCRIPT_OF = regex.compile("|".join(f"(?P<{s}>\\p{{Script={s}}})" for s in SCRIPTS))
_script_cache: dict[str, str | None] = {}

ALLOWED_MIXES = (
    frozenset({"Latin", "Han", "Hiragana", "Katakana"}),
    frozenset({"Latin", "Han", "Bopomofo"}),
    frozenset({"Latin", "Han", "Hangul"}),
)
"""UTS #39 "highly restrictive": one script, or a subset of one of these."""


def script_of(ch: str) -> str | None:
    """The Unicode script of ``ch``, None for Common, Inherited and unlisted ones."""
    if ch < "\x80":
        return "Latin" if ch.isalpha() else None
    found = _script_cache.get(ch, "")
    if found == "":
        m = _SCRIPT_OF.match(ch)
        found = m.lastgroup if m else None
        if len(_script_cache) < 65536:
            _script_cache[ch] = found
    return found


def word_scripts(word: str) -> list[str]:
    """The scripts of ``word`` in order of first appearance."""
    seen: dict[str, None] = {}
    for ch in word:
        s = script_of(ch)
        if s is not None:
            seen.setdefault(s)
    return list(seen)


def is_mixed(scripts: Iterable[str]) -> bool:
    found = set(scripts)
    if len(found) <= 1:
        return False
    return not any(found <= allowed for allowed in ALLOWED_MIXES)


def mixed_script_words(text: str) -> list[tuple[str, list[str]]]:
    """Words of ``text`` that mix scripts, with their scripts, e.g. ``("pаypal", ["Latin",
    "Cyrillic"])``."""
    if text.isascii():
        return []
    found: list[tuple[str, list[str]]] = []
    for m in _WORD.finditer(text):
        word = m.group()
        if word.isascii():
            continue
        scripts = word_scripts(word)
        if is_mixed(scripts):
            found.append((word, scripts))
    return found


# -- findings and warnings --------------------------------------------------------------------


@dataclass
class Findings:
    """What :func:`inspect` found in some texts."""

    kinds: Counter[str] = field(default_factory=Counter)
    """Escaped characters by kind (see :data:`KIND_LABELS`)."""
    samples: dict[str, list[str]] = field(default_factory=dict)
    """Up to three distinct code points (``U+202E``) per kind."""
    mixed: list[tuple[str, list[str]]] = field(default_factory=list)
    blank_lines: int = 0
    """Empty lines folded away (runs of :data:`FOLD_BREAKS` line breaks or more)."""

    def __bool__(self) -> bool:
        return bool(self.kinds or self.mixed or self.blank_lines)


def inspect(texts: Iterable[str]) -> Findings:
    found = Findings()
    for text in texts:
        # fast path (most arguments): in ASCII only controls and blank runs can be found
        if text.isascii() and _ASCII_HIDDEN.search(text) is None:
            if "\n" * FOLD_BREAKS in text:
                for m in _BLANK_RUN.finditer(text):
                    found.blank_lines += len(m.group()) - 1
            continue
        for m in _HIDDEN.finditer(text):
            ch = m.group()
            if ch in "\n\t" or (ch in "\uFE0E\uFE0F" and m.start() > 0
                                 and _SO.match(text[m.start() - 1])):
                continue
            kind = char_kind(ch)
            found.kinds[kind] += 1
            sample = found.samples.setdefault(kind, [])
            code = f"U+{ord(ch):04X}"
            if len(sample) < 3 and code not in sample:
                sample.append(code)
        for m in _BLANK_RUN.finditer(text):
            found.blank_lines += len(m.group()) - 1
        for word, scripts in mixed_script_words(text):
            if len(found.mixed) < 5 and (word, scripts) not in found.mixed:
                found.mixed.append((word, scripts))
    return found


def warnings(found: Findings) -> list[str]:
    """Sentences for the visible warning of a request (empty when nothing was found)."""
    out: list[str] = []
    if found.kinds:
        parts = []
        for kind in KIND_LABELS:
            n = found.kinds.get(kind, 0)
            if n:
                label = KIND_LABELS[kind][n != 1]
                parts.append(f"{n} {label} ({', '.join(found.samples[kind])})")
        out.append("Hidden characters, shown as ⟨U+…⟩: " + ", ".join(parts) + ".")
    if found.mixed:
        words = ", ".join(f"{one_line(w)} ({' + '.join(s)})" for w, s in found.mixed)
        out.append(f"Mixed scripts in one word (look-alike letters?): {words}.")
    if found.blank_lines:
        out.append(f"Padding: {found.blank_lines} blank lines folded, shown as "
                   f"⟨N blank lines⟩.")
    return out


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON-like value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield str(k)
            yield from strings(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from strings(v)


# -- JSON -------------------------------------------------------------------------------------


def safe_json(value: Any, *, indent: int | None = 2, default: Any = None) -> str:
    """JSON text with every hidden character (and the escape marks) written as ``\\uXXXX``:
    still valid JSON that loads back to the same value, and safe for any terminal."""
    text = json.dumps(value, ensure_ascii=False, indent=indent, default=default)
    return _HIDDEN.sub(_json_escape, text)


def _json_escape(m: regex.Match[str]) -> str:
    ch = m.group()
    if ch == "\n":  # only the indentation's line breaks are left raw by json.dumps
        return ch
    cp = ord(ch)
    if cp > 0xFFFF:
        cp -= 0x10000
        return f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}"
    return f"\\u{cp:04x}"


def json_view(value: Any) -> str:
    """Pretty JSON for a reader: the JSON text with hidden characters as ``⟨U+XXXX⟩``."""
    return visible(json.dumps(value, ensure_ascii=False, indent=2, default=str))


_HIDDEN_NOT_NEWLINE = regex.compile(
    rf"(?P<emoji>(?<=\p{{So}})[\uFE0E\uFE0F])|[^\n\t\P{{Cc}}]|[{_INVISIBLE}]")


def escape_hidden(text: str) -> str:
    """Every control and invisible character of ``text`` except line breaks and tabs as
    ``⟨U+XXXX⟩``, nothing else changed (the escape marks stay as they are): a last line of
    defence for output that was already laid out."""
    return _HIDDEN_NOT_NEWLINE.sub(
        lambda m: m.group() if m.lastgroup == "emoji" else escape(m.group()), text)


def call_texts(name: str, description: str | None, args: Any, *more: str) -> list[str]:
    """The texts of a call that a reviewer is shown, for :func:`inspect`: the tool's name, the
    description as the card shows it (:func:`shown_description`: not the default
    description's copy of the arguments, so a hidden character of an argument is counted
    once, as it is shown once) and every string of the arguments."""
    shown = shown_description(description or "", name, args) \
        if isinstance(args, dict) else description or ""
    return [name, shown, *more, *strings(args)]


def default_part(description: str, name: str, args: dict[str, Any]) -> int:
    """Where the default description's ``Tool: NAME / Args: <the arguments as JSON>`` lines
    start in ``description`` (-1: it has none). Only lines that end the description and hold
    exactly these arguments count: text a model wrote into an argument (a copy of the marker
    in the middle of a query) never cuts what a policy says after it."""
    marker = f"\n\nTool: {name}\nArgs: "
    at = description.rfind(marker)
    if at < 0:
        return -1
    try:
        shown = json.loads(description[at + len(marker):])
    except ValueError:
        return -1
    return at if shown == args else -1


def shown_description(description: str, name: str, args: dict[str, Any]) -> str:
    """A request's description without what the card shows right below it anyway: the default
    description's ``Tool: NAME / Args: ...`` lines (:func:`default_part`), and a trailing
    argument text ("The agent asks you: <question>", the question being an argument). The web
    inbox does the same."""
    cut = default_part(description, name, args)
    text = description[:cut] if cut >= 0 else description
    for value in args.values():
        if isinstance(value, str) and len(value.strip()) >= 8 \
                and text.rstrip().endswith(value.strip()):
            text = text.rstrip()[: -len(value.strip())].rstrip()
    return text

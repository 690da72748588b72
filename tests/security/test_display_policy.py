"""The display policy (interlock.display) as properties: whatever the text, every character
shown is visible, and different texts are always shown differently (the shown form can be
decoded back), so an argument cannot look like another one on screen."""

from __future__ import annotations

import json
import re

import pytest
import regex
from hypothesis import example, given, settings
from hypothesis import strategies as st

from interlock import display

DANGEROUS = [
    "\x1b", "\r", "\x00", "\x07", "\x08", "\x7f", "\x85", "\x9b",      # C0, DEL, C1 (CSI)
    "\u202a", "\u202b", "\u202c", "\u202d", "\u202e",                   # bidi embeddings
    "\u2066", "\u2067", "\u2068", "\u2069", "\u200e", "\u200f", "\u061c",  # isolates, marks
    "\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u034f",  # zero-width
    "\U000e0001", "\U000e0041", "\U000e007f",                           # tags
    "\ufe0f", "\U000e0100", "\u3164", "\u115f", "\u2800",                 # selectors, fillers
    "\u00a0", "\u2007", "\u202f", "\u2028", "\u2029",                     # spaces, separators
    "\ue000", "\U000f0000", "\ufdd0", "\uffff", "\ud800", "\udfff",        # private, nonchar, lone
    "⟨", "⟩", "↵", "⇥", "⟨U+202E⟩", "\n", "\n\n\n\n\n", "\t", " ", "a", "а", "❤", "調",
]

texts = st.lists(st.one_of(st.sampled_from(DANGEROUS), st.text(max_size=8),
                           st.characters(codec=None)), max_size=24).map("".join)

_VISIBLE_BAD = regex.compile(
    r"[\p{Cc}\p{Cf}\p{Co}\p{Cs}\p{Cn}\p{Zl}\p{Zp}\p{Default_Ignorable_Code_Point}"
    r"\u00A0\u1680\u2000-\u200A\u202F\u205F\u2800]")
_TOKEN = re.compile(r"⟨U\+([0-9A-F]{4,6})⟩|\n⟨(\d+) blank lines⟩\n|↵⟨(\d+) blank lines⟩↵|(.)",
                    re.S)


def decode(shown: str, *, single: bool = False) -> str:
    """The text that ``shown`` is the display of (the inverse of the policy)."""
    out = []
    for m in _TOKEN.finditer(shown):
        code, blank, blank1, ch = m.groups()
        if code:
            out.append(chr(int(code, 16)))
        elif blank or blank1:
            out.append("\n" * (int(blank or blank1) + 1))
        elif single and ch == "↵":
            out.append("\n")
        elif single and ch == "⇥":
            out.append("\t")
        else:
            assert ch not in "⟨⟩", f"a bare escape mark in {shown!r}"
            out.append(ch)
    return "".join(out)


def is_kept_selector(shown: str, i: int) -> bool:
    return shown[i] in "\ufe0e\ufe0f" and i > 0 and regex.match(r"\p{So}", shown[i - 1]) is not None


@settings(max_examples=400)
@given(texts)
@example("SELECT * FROM t WHERE id = 1 \u2067OR 1=1 --\u2069")
@example("rm -rf /tmp/cache\x1b[2K\r\x1b[1Aecho done")
@example("ok" + "\n" * 80 + "DROP TABLE users")
@example("\u21b5\ufe0f \u21e5\ufe0e")  # an escaped mark followed by a selector
def test_every_shown_character_is_visible(text: str) -> None:
    for shown, allowed in ((display.visible(text), "\n\t"), (display.one_line(text), "")):
        for i, ch in enumerate(shown):
            if ch in allowed or is_kept_selector(shown, i):
                continue
            assert not _VISIBLE_BAD.match(ch), (text, shown, i)
        # the last character of a line is never a blank, so a line looks like what it is
        assert all(not line.endswith((" ", "\t")) for line in shown.split("\n")), shown
    assert "\n" not in display.one_line(text) and "\t" not in display.one_line(text)


@settings(max_examples=400)
@given(texts)
def test_the_shown_form_determines_the_text(text: str) -> None:
    assert decode(display.visible(text)) == text
    assert decode(display.one_line(text), single=True) == text


@settings(max_examples=300)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz.-/ =;'", min_size=1, max_size=30),
       st.integers(min_value=0), st.sampled_from(DANGEROUS[:38]))
def test_an_inserted_hidden_character_is_shown_and_warned(base: str, at: int, hidden: str) -> None:
    at %= len(base) + 1
    tampered = base[:at] + hidden + base[at:]
    assert display.visible(tampered) != display.visible(base)
    assert display.one_line(tampered) != display.one_line(base)
    assert display.warnings(display.inspect([tampered])), tampered
    assert display.warnings(display.inspect([base])) == []


HOMOGLYPHS = {"a": "а", "e": "е", "o": "о", "p": "р", "c": "с", "x": "х", "y": "у",
              "i": "і", "s": "ѕ", "j": "ј"}  # Cyrillic look-alikes of Latin letters


@settings(max_examples=300)
@given(st.text(alphabet="aeopcxyisj" + "bdfghklmnqrtuvwz", min_size=2, max_size=20),
       st.integers(min_value=0))
def test_a_look_alike_letter_in_a_word_is_flagged(word: str, at: int) -> None:
    candidates = [i for i, ch in enumerate(word) if ch in HOMOGLYPHS]
    if not candidates or len(word) < 2:
        return
    i = candidates[at % len(candidates)]
    tampered = word[:i] + HOMOGLYPHS[word[i]] + word[i + 1:]
    if set(tampered) <= set(HOMOGLYPHS.values()):
        return  # a word written wholly in Cyrillic is one script
    text = f"https://{tampered}.com/login"
    words = display.mixed_script_words(text)
    assert [w for w, _ in words] == [tampered]
    assert words[0][1] in (["Latin", "Cyrillic"], ["Cyrillic", "Latin"])
    [warning] = display.warnings(display.inspect([text]))
    assert "Mixed scripts" in warning and tampered in warning


def test_scripts_that_belong_together_are_not_flagged() -> None:
    for text in ("删除数据库中的旧记录", "使用API调用", "日本語のテキストとカタカナ", "한국어 API",
                 "注音ㄅㄆㄇ", "naïve café", "Ελληνικά", "Привет мир", "version 2.0-beta_3"):
        assert display.mixed_script_words(text) == [], text
    assert display.mixed_script_words("Gооgle") == [("Gооgle", ["Latin", "Cyrillic"])]
    assert display.mixed_script_words("ΑpΙ") == [("ΑpΙ", ["Greek", "Latin"])]


@settings(max_examples=200)
@given(texts, st.integers(min_value=30, max_value=200))
def test_cut_one_line_says_how_much_is_left_out(text: str, width: int) -> None:
    shown = display.one_line(text, width)
    assert len(shown) <= width
    if shown == display.one_line(text):
        return
    m = re.fullmatch(r"(.*) … \(\+([\d,]+) chars\)", shown, re.S)
    assert m, shown
    kept = decode(m.group(1), single=True)
    assert text.startswith(kept)
    assert len(kept) + int(m.group(2).replace(",", "")) == len(text)


def test_padding_and_long_runs_are_folded_and_counted() -> None:
    text = "SELECT * FROM t WHERE id = 1" + "\n" * 80 + "; DROP TABLE users"
    shown = display.visible(text)
    assert shown == "SELECT * FROM t WHERE id = 1\n⟨79 blank lines⟩\n; DROP TABLE users"
    assert display.warnings(display.inspect([text])) == [
        "Padding: 79 blank lines folded, shown as ⟨N blank lines⟩."]
    assert display.visible("a\n\nb\n\n\nc") == "a\n\nb\n\n\nc"  # short gaps stay as written


def test_json_is_escaped_but_still_loads() -> None:
    import json
    value = {"q\u202e": ["\x1b[2J", "\u2067x\u2069", "\U000e0041", "ok ✓"]}
    text = display.safe_json(value)
    assert json.loads(text) == value
    assert not _VISIBLE_BAD.search(text.replace("\n", ""))
    assert "\\u202e" in text and "\\udb40\\udc41" in text and "ok ✓" in text


def test_warning_names_each_kind() -> None:
    found = display.inspect(["a\u2067b\u2069", "c\u200bd", "tag\U000e0041", "\x1b[1A"])
    assert display.warnings(found) == [
        "Hidden characters, shown as ⟨U+…⟩: 2 bidi controls (U+2067, U+2069), "
        "1 tag character (U+E0041), 1 zero-width character (U+200B), "
        "1 control character (U+001B)."]


ascii_texts = st.lists(st.one_of(st.sampled_from(["\n", "\n\n\n\n\n", "\t", "\r", "\x1b[31m",
                                                  "\x00", "\x7f", " ", "a"]),
                                 st.text(st.characters(max_codepoint=127), max_size=8)),
                       max_size=24).map("".join)


@settings(max_examples=300, deadline=None)
@given(ascii_texts)
@example("".join(chr(i) for i in range(128)))
def test_an_ascii_text_is_inspected_like_any_other(text: str) -> None:
    # ASCII texts take a fast path; a non-ASCII letter of the same script ("é", Latin, not
    # hidden) sends the same text through the full scan: the findings must be the same
    fast, full = display.inspect([text]), display.inspect([text + " é"])
    assert (fast.kinds, fast.samples, fast.mixed, fast.blank_lines) == \
        (full.kinds, full.samples, full.mixed, full.blank_lines)
    assert display.warnings(fast) == display.warnings(full)


@pytest.mark.anyio
async def test_langgraph_and_agent_inbox_output_follow_the_display_policy() -> None:
    """A call whose arguments hide a bidi override and a zero-width space reaches Agent Inbox
    escaped, with the warning first in its description, and both LangGraph formats flag it
    (``display_warnings``); the LangChain-shaped data keeps the values as they are."""
    from interlock import MemoryCheckpointer
    from server.conftest import BOB, TOKENS, running
    from server.server_agents import make_agent

    hidden = "DELETE FROM t \u202e-- tcelés\u200b"
    async with running(make_agent(MemoryCheckpointer()), tokens=TOKENS,
                       langgraph_api=True) as s:
        c = s.client
        r = await c.post("/langgraph/threads/lg-hidden/runs/wait", headers={"x-api-key": BOB},
                         json={"assistant_id": "agent", "if_not_exists": "create", "input": {
                             "messages": [{"role": "user", "content": f"sql {hidden}"}]}})
        assert r.status_code == 200, r.text
        inbox = await c.get("/langgraph/agent-inbox/threads/lg-hidden/state",
                            headers={"x-api-key": BOB})
        (intr,) = inbox.json()["interrupts"]
        shown = json.dumps(intr, ensure_ascii=False)
        assert "\u202e" not in shown and "\u200b" not in shown
        assert intr["value"]["action_request"]["args"]["query"] == \
            "DELETE FROM t ⟨U+202E⟩-- tcelés⟨U+200B⟩"
        description = intr["value"]["description"]
        # a plain first line for the list row, then the header, then the warning first
        lines = description.split("\n")
        assert lines[0] == "Review a call of execute_sql." and lines[2].startswith("**interlock")
        assert lines[4].startswith("**⚠ Check this request closely:** Hidden characters")
        assert "U+202E" in description and "U+200B" in description
        assert intr["display_warnings"] and "U+202E" in intr["display_warnings"][0]
        hitl = await c.get("/langgraph/threads/lg-hidden/state", headers={"x-api-key": BOB})
        (raw,) = hitl.json()["interrupts"]
        assert raw["value"]["action_requests"][0]["args"]["query"] == hidden
        assert raw["display_warnings"] == intr["display_warnings"]

"""Text made safe for a terminal: the one rule every view, every error line and every JSON writer uses.

Names come from files users paste and machines they rent: a host, GPU, NIC, step or run label (and a
library's error message quoting one) may hold an escape sequence, a newline, a tab, a bidirectional
override, a line separator, a lone surrogate. Written raw, ``ESC [2J`` clears a real terminal, an OSC
sequence retitles it, U+202E reverses what follows, and U+2028 / U+2029 / U+0085 start a new line in
many terminals and viewers, so ``node1\\u2028PASS  forged line`` prints a forged line (issue 36).

:func:`safe_text` writes each such character visibly: ``\\xNN`` at or below U+00FF, ``\\uNNNN`` above:

- every C0 control (U+0000–U+001F, tab and newline included unless kept), DEL and every C1 control
  (U+007F–U+009F, which holds U+0085 NEXT LINE);
- the bidirectional controls U+061C, U+200E, U+200F, U+202A–U+202E and U+2066–U+2069;
- the line and paragraph separators U+2028 and U+2029;
- lone surrogates (no UTF-8 can carry them) and the non-characters U+FFFE and U+FFFF.

:func:`json_text` and :func:`json_bytes` keep JSON faithful (a reader gets the same string back) while
writing those same characters as ``\\uNNNN`` escapes, so a JSON document shown on a terminal is safe
too. Nothing here imports any library.
"""

from __future__ import annotations

import functools
import re

#: The ranges of every character :func:`safe_text` writes as an escape (see the module docstring).
_RANGES = (
    (0x00, 0x1F), (0x7F, 0x9F), (0x061C, 0x061C), (0x200E, 0x200F), (0x2028, 0x2029), (0x202A, 0x202E),
    (0x2066, 0x2069), (0xD800, 0xDFFF), (0xFFFE, 0xFFFF),
)  # fmt: skip


@functools.lru_cache(maxsize=16)
def _pattern(keep: str) -> re.Pattern[str]:
    """One character class of the unsafe characters less those in ``keep``: a kept newline costs no call."""
    parts: list[str] = []
    for lo, hi in _RANGES:
        start = None
        for code in range(lo, hi + 2):
            inside = code <= hi and chr(code) not in keep
            if inside and start is None:
                start = code
            elif not inside and start is not None:
                parts.append(f"\\u{start:04x}" + (f"-\\u{code - 1:04x}" if code - 1 > start else ""))
                start = None
    return re.compile("[" + "".join(parts) + "]")


#: Every character :func:`safe_text` writes as an escape.
UNSAFE = _pattern("")
#: The same characters as UTF-8 bytes (surrogates have none) less JSON's layout (tab, newline, return),
#: for JSON already encoded. A lead byte of UTF-8 is never a continuation byte, so these sequences
#: match whole characters only.
_UNSAFE_UTF8 = re.compile(
    rb"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]|\xc2[\x80-\x9f]|\xd8\x9c|\xe2\x80[\x8e\x8f\xa8-\xae]|\xe2\x81[\xa6-\xa9]"
    rb"|\xef\xbf[\xbe\xbf]"
)
#: Every byte but those an unsafe character's UTF-8 starts with: deleting them leaves nothing when
#: the bytes hold no unsafe character (the fast path: one C loop, where the pattern takes seconds on 60 MB).
_LEADS = (*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F, 0xC2, 0xD8, 0xE2, 0xEF)
_NOT_LEAD = bytes(c for c in range(256) if c not in _LEADS)
#: What a JSON writer may leave raw of :data:`UNSAFE` outside strings: the whitespace between tokens.
_JSON_LAYOUT = " \t\n\r"


def escape_char(char: str) -> str:
    """One character as its visible escape: ``\\x1b``, ``\\u2028``."""
    code = ord(char)
    return f"\\x{code:02x}" if code < 256 else f"\\u{code:04x}"


def safe_text(text: str, keep: str = "") -> str:
    """``text`` with every character of :data:`UNSAFE` written as its escape; those in ``keep`` (for
    whole outputs: ``"\\n\\t"``, the layout of a table) stay as they are."""
    return _pattern(keep).sub(lambda m: escape_char(m.group()), text)


def is_safe(text: str, keep: str = "") -> bool:
    """True when ``text`` holds no character of :data:`UNSAFE` other than those in ``keep``."""
    return _pattern(keep).search(text) is None


def _json_escape(char: str) -> str:
    return f"\\u{ord(char):04x}"


def json_text(text: str) -> str:
    """JSON text (as any encoder wrote it) with every unsafe character written as ``\\uNNNN``. Valid
    JSON holds such characters only inside strings (the layout between tokens is space, tab, newline
    and return, left as they are), where the escape stands for the same character: the document reads
    back the same."""
    if text.isascii():  # what json.dumps writes: only DEL can be left raw
        return text.replace("\x7f", "\\u007f")
    return _pattern(_JSON_LAYOUT).sub(lambda m: _json_escape(m.group()), text)


def json_bytes(data: bytes) -> bytes:
    """:func:`json_text` for UTF-8 JSON bytes (msgspec writes non-ASCII characters raw)."""

    if not data.translate(None, _NOT_LEAD):
        return data
    return _UNSAFE_UTF8.sub(lambda m: _json_escape(m.group().decode("utf-8")).encode("ascii"), data)

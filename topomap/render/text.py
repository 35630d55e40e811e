"""The one rule for putting a string from a file on a terminal.

Names come from files users paste and machines they rent: a host, GPU, NIC, step or run label may
hold an escape sequence, a newline or a tab. :func:`visible` writes every control character (C0,
DEL, C1) as ``\\xNN``, so no input can recolour the terminal, move the cursor, split a line or shift
a table's columns. This module imports no library, so the light commands (`matrix`, `show`) can use
it. (DOT, XML and HTML have their own rules, for their own syntax: render/dot.py, export.py, report.py.)
"""

from __future__ import annotations

import re

#: Control characters (C0, DEL, C1): escape sequences, newlines, tabs, bells.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def visible(text: str) -> str:
    """``text`` with its control characters written visibly as ``\\xNN``."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)

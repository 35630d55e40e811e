"""How much of a file's own text an error may show: a few characters, never a whole line.

An error names the file and the line; quoting the line helps only when the file is of the kind the
reader expects and one value in it is wrong. A flow's ``work.durations_csv: /etc/shadow`` printed
``header: root:*:20228:…`` and ``../.env`` printed ``API_KEY=sk-live-…``, whole for short secrets
(issue 36 item 4). So a reader that finds a file is not of its kind says so without quoting it
(the first line of a durations CSV that is neither a header nor a duration is not shown), and a value
it cannot read in a file of its kind is shown by :func:`excerpt`: at most :data:`EXCERPT_CHARS`
characters, then how long it was.
"""

from __future__ import annotations

#: The most characters of a file's own text an error quotes.
EXCERPT_CHARS = 12


def excerpt(text: str, most: int = EXCERPT_CHARS) -> str:
    """``text`` quoted for a message: whole when it has at most ``most`` characters (``'12 mins'``),
    else its first ``most`` and its length (``'9999999999…' (406 characters)``)."""
    if len(text) <= most:
        return repr(text)
    return f"{text[:most]!r}… ({len(text):,} characters)".replace("'…", "…'")

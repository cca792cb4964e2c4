"""Untrusted text (test names, messages, log lines) made inert for a GitHub markdown cell (pure).

Both the PR results comment and the nightly issue carry text that a test run produced,
so one function makes it safe: one line, cut short, no HTML or markdown markup, and
nothing GitHub would turn into a notification or a link. An HTML entity such as
``&#64;`` is not enough there: GitHub decodes it back to ``@`` before it looks for
mentions. A zero-width joiner after ``@`` and ``#`` breaks mentions and issue
references, and one inside ``http://``, ``www.`` and the like breaks autolinks, while the
text still reads the same. GitHub also links ``GH-123`` (any case) to issue 123: a joiner
after ``GH`` breaks that too.
"""

from __future__ import annotations

import re

ZWJ = "\u200d"
_ESCAPES = str.maketrans(
    {
        "&": "&amp;",
        "<": "&lt;",
        ">": "&gt;",
        "|": "\\|",
        "`": "&#96;",
        "@": "@" + ZWJ,  # no @user or @org/team mentions
        "#": "#" + ZWJ,  # no #123 or owner/repo#123 references
        "[": "\\[",
        "]": "\\]",
        "*": "\\*",
        "_": "\\_",
        "~": "\\~",
        "\\": "\\\\",
    }
)
# GFM's extended autolinks: a scheme followed by ``:`` and ``www.`` (any case).
_AUTOLINK_RE = re.compile(r"(?i)\b(https?|ftp|mailto|xmpp|www)(?=[:.])")
# GitHub's ``GH-<number>`` issue references (any case, as a word).
_GH_REF_RE = re.compile(r"(?i)\b(gh)(?=-[0-9])")


def escape(text: str, limit: int) -> str:
    """One table cell's worth of untrusted text: one line, inert, at most ``limit`` characters."""
    flat = re.sub(r"\s+", " ", text.replace("\x00", "")).strip()
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    flat = _AUTOLINK_RE.sub(lambda m: m.group(1) + ZWJ, flat)
    return _GH_REF_RE.sub(lambda m: m.group(1) + ZWJ, flat).translate(_ESCAPES)

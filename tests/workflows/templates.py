"""The adoption templates (.github/adopt/) as an adopter fills them in: the README's
placeholders ``<owner>`` and ``<sha>`` replaced."""

from __future__ import annotations

OWNER = "qnn-lab"  # the owner the tests adopt from (``bot doctor``'s default --bot-repo)
SHA = "0" * 40  # a commit the workflow tests pin to when the test needs none in particular


def filled(text: str, sha: str = SHA, owner: str = OWNER) -> str:
    """``text`` with ``<owner>`` and ``<sha>`` filled in."""
    return text.replace("<owner>", owner).replace("<sha>", sha)

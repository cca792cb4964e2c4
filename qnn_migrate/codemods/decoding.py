"""The text of a Python source file's bytes, read as Python reads them (PEP 263), or why not.

``qnn-migrate rewrite`` and ``/qnn migrate`` both decode through :func:`decode_source`. The
encoding a file declares is chosen by whoever wrote the file (for ``/qnn migrate``, the PR's
author), so every way a declaration can go wrong is a :class:`SourceDecodeError` naming it,
never a traceback: a codec Python does not know, one that is not a text encoding (``rot13``,
``hex``, ``zlib``, ``base64``, ``uu``, ``bz2``, ``quopri``: bytes to bytes), bytes that are
not valid in the encoding, and a text encoding that does not give the file's bytes back
(``unicode_escape``, ``utf-7``): the rewrite writes a file back in its own encoding, which
must change nothing but the rewritten lines. Pure: bytes in, text out.
"""

from __future__ import annotations

import codecs
import io
import re
import tokenize

# PEP 263's declaration, on line 1 or 2 (only used to say where the declaration is).
_COOKIE_RE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)", re.ASCII)
_SAVE_AS_UTF8 = "save it as UTF-8 or declare its encoding with a `# -*- coding: ... -*-` line"
_NOT_TEXT = (
    "cannot be processed: declares encoding {name}, which is not a text encoding; save it as "
    "UTF-8 and declare `# -*- coding: utf-8 -*-` (or no encoding)"
)


class SourceDecodeError(ValueError):
    """A source file whose bytes cannot be read as text; ``line`` is where it says why."""

    def __init__(self, message: str, line: int = 1) -> None:
        super().__init__(message)
        self.line = line


def declared_encoding(data: bytes) -> tuple[str, int] | None:
    """The encoding name a PEP 263 line declares in ``data``, as written, and its line."""
    for number, line in enumerate(data.splitlines()[:2], start=1):
        match = _COOKIE_RE.match(line)
        if match:
            return match.group(1).decode("ascii"), number
        if number == 1 and not line.lstrip(b" \t\f").startswith(b"#") and line.strip():
            return None  # code on line 1: a declaration on line 2 does not count
    return None


def decode_source(data: bytes) -> tuple[str, str]:
    """The text and the encoding of a Python source file (PEP 263, BOM -> utf-8-sig)."""
    declared = declared_encoding(data)
    line = declared[1] if declared else 1
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as error:
        if declared and not _known(declared[0]):
            message = (
                f"cannot be processed: declares encoding {declared[0]}, which Python does not "
                f"know; {_SAVE_AS_UTF8}"
            )
            raise SourceDecodeError(message, line) from None
        raise SourceDecodeError(f"cannot be decoded ({error.msg}); {_SAVE_AS_UTF8}", line) from None
    try:
        text = data.decode(encoding)
    except (LookupError, TypeError):  # a bytes-to-bytes codec, or one that gives no str
        raise SourceDecodeError(_NOT_TEXT.format(name=encoding), line) from None
    except UnicodeError as error:  # UnicodeDecodeError, or the plain one some codecs raise
        where = (
            f"byte {error.start}: {error.reason}"
            if isinstance(error, UnicodeDecodeError)
            else error
        )
        raise SourceDecodeError(
            f"is not valid {encoding} ({where}); {_SAVE_AS_UTF8}", line
        ) from None
    try:
        same = text.encode(encoding) == data
    except (LookupError, TypeError, UnicodeError):
        same = False
    if not same:
        raise SourceDecodeError(
            f"cannot be processed: declares encoding {encoding}, which does not give the "
            f"file's bytes back when written (a rewrite would change more than the rewritten "
            f"lines); {_SAVE_AS_UTF8}",
            line,
        )
    return text, encoding


def _known(name: str) -> bool:
    try:
        codecs.lookup(name)
    except LookupError:
        return False
    return True

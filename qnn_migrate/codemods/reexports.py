"""Which modules of a run other files import the old name from, so those keep it bound.

``from mypkg.export_utils import to_edge_transform_and_lower_to_qnn`` in one file means that
``mypkg/export_utils.py`` must still bind the name after its own calls are rewritten, or the
importing file breaks. :func:`reexport_scan` finds those modules from the texts of the run's
files (only files that mention the name can import it, so the caller passes just those);
:func:`imported_here` says whether a given file is one of them. Pure and cheap: regular
expressions over the text, no parsing, and linear in its size whatever it holds (the PR
check and ``/qnn migrate`` run it on a PR's files): no pattern backtracks, and each
character is read by one match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping

from qnn_migrate.codemods.deprecations import lower_to_qnn

# `from MODULE import` (MODULE may be relative), then the names: `a, b` up to a comment, a
# `;` or the end of the line (backslash continuations included), or `(\n a,\n b,\n)`.
# Every quantifier is possessive: a line that is not such an import (`from ....` or
# `from` and blanks, with no `import`) fails within itself, once, instead of trying every
# split of its dots and blanks. (`from  import x`, no module, matches as it always did.)
_FROM_IMPORT = re.compile(
    r"^[ \t]*+from(?:[ \t]++([\w.]++)[ \t]++|[ \t]{2,}+)import[ \t]*+", re.MULTILINE
)
_NAMES_ON_LINE = re.compile(r"(?:[^\n#;\\]++|\\\n?+)*+")
_WORD = re.compile(r"\w++")


def reexport_scan(sources: Mapping[str, str | bytes]) -> frozenset[str]:
    """Dotted names of the modules that ``sources`` ({path: text}) import the old name from.

    Relative imports are resolved against the importing file's directory, every directory
    of its path counting as a package (so ``from .export_utils import ...`` in
    ``src/mypkg/consumer.py`` gives ``src.mypkg.export_utils``, which
    :func:`imported_here` matches by its last parts).
    """
    deprecation = lower_to_qnn()
    name = deprecation.name
    # Importing the name from ExecuTorch's own modules says nothing about the run's modules
    # (whose names may end alike: a `utils.py`); the rule knows ExecuTorch's module by itself.
    executorch = {deprecation.defining_module} | {
        q.rpartition(".")[0] for q in deprecation.qualified_names
    }
    found: set[str] = set()
    for path, text in sources.items():
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        if name not in text:
            continue
        for module, names in _imports(text):
            if name not in _WORD.findall(names):
                continue
            resolved = _resolve(module, path)
            if resolved and resolved not in executorch:
                found.add(resolved)
    return frozenset(found)


def _imports(text: str) -> Iterator[tuple[str, str]]:
    """(MODULE, names) of each `from MODULE import names` in ``text``, top to bottom.

    A parenthesized list runs to its `)`; with no `)` left in the text, only the rest of the
    line counts (asking for the `)` again at every such line read the text to its end each
    time: quadratic).
    """
    last_close = text.rfind(")")
    pos = 0
    while (head := _FROM_IMPORT.search(text, pos)) is not None:
        start = head.end()
        if start < last_close and text.startswith("(", start):
            pos = text.index(")", start) + 1
        else:
            names = _NAMES_ON_LINE.match(text, start)  # matches always, maybe nothing
            pos = names.end() if names else start
        yield head.group(1) or "", text[start:pos]


def _resolve(module: str, path: str) -> str | None:
    """``module`` as a dotted name; relative ones against ``path``'s directory."""
    dots = len(module) - len(module.lstrip("."))
    if not dots:
        return module
    parts = [p for p in path.replace("\\", "/").split("/")[:-1] if p not in ("", ".")]
    if dots - 1 > len(parts):
        return None
    base = parts[: len(parts) - (dots - 1)]
    rest = module[dots:]
    return ".".join([*base, *([rest] if rest else [])]) or None


def module_names(filename: str) -> list[str]:
    """The dotted names ``filename`` could be imported as: every tail of its path
    (``a/b/c.py`` -> ``c``, ``b.c``, ``a.b.c``; a package ``__init__.py`` by its directory)."""
    parts = [p for p in filename.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or not parts[-1].endswith((".py", ".pyi")):
        return []
    parts[-1] = parts[-1].rsplit(".", 1)[0]
    if parts[-1] == "__init__":
        parts.pop()
    return [".".join(parts[i:]) for i in range(len(parts) - 1, -1, -1)]


def imported_here(filename: str | None, imported_from: Iterable[str]) -> bool:
    """True if some file of the run imports the old name from the module at ``filename``.

    A scanned name matches when one of them ends with the other, dot-wise: the scan knows
    ``mypkg.export_utils`` and the file is ``/src/mypkg/export_utils.py``.
    """
    if not filename:
        return False
    names = module_names(filename)
    for module in imported_from:
        for name in names:
            if name == module or name.endswith("." + module) or module.endswith("." + name):
                return True
    return False

"""The third corpus's manifest (tests/codemods/fixtures/corpus/manifest.toml): read and check it.

One reader for the format, used by the suite (test_corpus.py) and by run_real_corpus.py.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path

CORPUS = Path(__file__).resolve().parent / "fixtures" / "corpus"
MANIFEST = CORPUS / "manifest.toml"
HEX40 = re.compile(r"[0-9a-f]{40}")
FIELDS = (
    "id",
    "repository",
    "path",
    "commit",
    "blob",
    "licence",
    "kind",
    "calls",
    "release_similarity",
    "fixture",
    "shapes",
)


@dataclass(frozen=True)
class Entry:
    """One real file: where it is, which version, and the distilled fixture that stands for it."""

    id: str
    repository: str  # owner/name
    path: str
    commit: str
    blob: str  # git's blob id of the file at that commit
    licence: str
    kind: str
    calls: int  # calls of the old function in the file
    release_similarity: float  # to the nearest release's file at that path (0: none has it)
    fixture: str  # the distilled script, fixtures/corpus/<fixture>.py
    shapes: str

    def local(self, folder: Path) -> Path:
        """Where run_real_corpus.py expects the fetched file: <folder>/<owner>/<name>/<path>."""
        return folder / self.repository / self.path


def read_manifest(path: Path = MANIFEST) -> list[Entry]:
    """The entries, each with every field (a KeyError or TypeError names what is missing)."""
    with open(path, "rb") as handle:
        data = tomllib.load(handle)
    entries = []
    for raw in data["file"]:
        missing = [name for name in FIELDS if name not in raw]
        if missing:
            raise KeyError(f"{path}: entry {raw.get('id', '?')} lacks {', '.join(missing)}")
        entries.append(Entry(**{name: raw[name] for name in FIELDS}))
    return entries


def blob_id(data: bytes) -> str:
    """git's object id of a file with these bytes (``git hash-object``)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def fixtures() -> dict[str, Path]:
    """The distilled scripts: name -> path."""
    return {path.stem: path for path in sorted(CORPUS.glob("*.py"))}

"""The test registry: every ``TestClass.test_method`` id of ExecuTorch's QNN delegate tests, as data.

The bot never imports ExecuTorch. The registry is read from the test file's syntax tree
(``ast``) once, written to ``bot/data/test_registry.json`` with the version it came from,
and regenerated with ``qnn-migrate matrix registry --from PATH``.
"""

from __future__ import annotations

import ast
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from qnn_migrate.bot.model import TEST_ID_RE

SCHEMA = 1
DEFAULT_SOURCE_PATH = "backends/qualcomm/tests/test_qnn_delegate.py"


class RegistryError(ValueError):
    """A registry document or test file that cannot be read as a registry."""


@dataclass(frozen=True)
class Registry:
    """Test ids by class, in source order, and where they came from."""

    classes: Mapping[str, tuple[str, ...]]
    package: str
    version: str
    path: str
    sha256: str

    def ids(self) -> tuple[str, ...]:
        return tuple(f"{cls}.{m}" for cls, methods in self.classes.items() for m in methods)

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": SCHEMA,
            "generated_by": "qnn-migrate matrix registry --from PATH --version VERSION",
            "source": {
                "package": self.package,
                "version": self.version,
                "path": self.path,
                "sha256": self.sha256,
            },
            "count": sum(len(m) for m in self.classes.values()),
            "classes": {cls: list(methods) for cls, methods in self.classes.items()},
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=1, sort_keys=False) + "\n"

    @classmethod
    def from_dict(cls, doc: Mapping[str, Any], where: str = "registry") -> Registry:
        if doc.get("schema") != SCHEMA:
            raise RegistryError(f"{where}: schema must be {SCHEMA}, got {doc.get('schema')!r}")
        source = doc.get("source")
        classes = doc.get("classes")
        if not isinstance(source, Mapping) or not isinstance(classes, Mapping):
            raise RegistryError(f"{where}: needs 'source' and 'classes' objects")
        out: dict[str, tuple[str, ...]] = {}
        for name, methods in classes.items():
            if not isinstance(methods, list) or not all(isinstance(m, str) for m in methods):
                raise RegistryError(f"{where}: class {name!r} must list method names")
            bad = [f"{name}.{m}" for m in methods if not TEST_ID_RE.match(f"{name}.{m}")]
            if bad:
                raise RegistryError(f"{where}: malformed test id(s): {', '.join(bad[:5])}")
            out[name] = tuple(methods)
        count = doc.get("count")
        total = sum(len(m) for m in out.values())
        if count != total:
            raise RegistryError(f"{where}: 'count' is {count!r} but the classes hold {total}")
        return cls(
            classes=out,
            package=str(source.get("package", "")),
            version=str(source.get("version", "")),
            path=str(source.get("path", "")),
            sha256=str(source.get("sha256", "")),
        )


def _is_test_class(node: ast.ClassDef) -> bool:
    return node.name.startswith("Test")


def extract(
    source: str,
    *,
    package: str = "executorch",
    version: str,
    path: str = DEFAULT_SOURCE_PATH,
) -> Registry:
    """Read test ids from the text of ``test_qnn_delegate.py`` (module-level Test* classes)."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        raise RegistryError(f"{path}:{exc.lineno}: cannot parse: {exc.msg}") from exc
    except (RecursionError, MemoryError) as exc:  # the parser's own limits on nesting
        raise RegistryError(f"{path}: cannot parse: nested too deep") from exc
    classes: dict[str, tuple[str, ...]] = {}
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or not _is_test_class(node):
            continue
        methods = [
            item.name
            for item in node.body
            if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef)
            and item.name.startswith("test_")
        ]
        # A redefined method shadows the earlier one at import time; keep one id.
        classes[node.name] = tuple(dict.fromkeys(methods))
    if not classes:
        raise RegistryError(f"{path}: no module-level Test* classes with test_ methods")
    digest = hashlib.sha256(source.encode("utf-8")).hexdigest()
    return Registry(classes=classes, package=package, version=version, path=path, sha256=digest)

"""The import graph of a package's modules, read from their source, and its circles.

Every ``import`` and ``from ... import`` counts, wherever it is: at module level, inside a
function, and under ``if TYPE_CHECKING:`` (a type-only import is still an edge a reader, mypy
and an import linter follow). ``from package import name`` is an edge to ``package.name`` when
that is a module of the graph, else to ``package``.
"""

from __future__ import annotations

import ast
from pathlib import Path


def module_names(root: Path, package: str) -> dict[str, Path]:
    """Every module of ``package`` (the folder ``root``) by its dotted name."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join([package, *parts])] = path
    return found


def edges(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Module -> the modules of the graph it imports."""
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = name.split(".")
                    keep = len(parts) - node.level + (1 if is_package else 0)
                    base = ".".join([*parts[:keep], *([base] if base else [])])
                targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
                targets = [t for t in targets[:-1] if t in modules] or [base]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm),
    each sorted: every circle of the graph lies in one of them."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(start: str) -> None:
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found

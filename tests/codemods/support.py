"""Helpers shared by the rewrite's tests (the golden fixtures are read by rewrite_goldens.py).

``SOURCES``: the code the tree index, scopes and name collection are compared with libcst on:
a syntax zoo, every golden fixture (input and output) and every example.
"""

from __future__ import annotations

from pathlib import Path

import libcst as cst
from qnn_migrate_tests.codemods.rewrite_goldens import cases, read

ROOT = Path(__file__).resolve().parents[2]
OLD = "to_edge_transform_and_lower_to_qnn"


def parse_call(code: str) -> cst.Call:
    """``code``, one call expression, parsed."""
    node = cst.parse_expression(code)
    assert isinstance(node, cst.Call)
    return node


def big_module(extra: str = "") -> str:
    """A test-suite-like module: many methods, a few of which call the old API."""
    head = (
        '"""Big test module."""\n\nimport unittest\n\nimport torch\n'
        "from executorch.backends.qualcomm.utils.utils import (\n"
        "    generate_htp_compiler_spec,\n"
        f"    {OLD},\n)\n\nSPECS = []\n\n\n"
        "def helper(x):\n    # a module-level function that does not call the API\n"
        "    return x * 2\n\n\n"
    )
    methods = []
    for i in range(60):
        if i in (7, 41):
            body = (
                f"        edge = {OLD}(self.model, self.inputs, SPECS)  # site {i}\n"
                "        self.assertTrue(edge.methods)\n"
            )
        elif i == 23:
            body = f"        self.assertTrue(callable({OLD}))\n"
        else:
            body = (
                f'        """Method {i}."""\n        y = helper({i})\n'
                "        self.assertEqual(y, y)\n        self.assertIsNotNone(self)\n"
            )
        methods.append(f"    def test_{i}(self):\n{body}\n")
    cls = "class TestBig(unittest.TestCase):\n" + "".join(methods)
    other = "\n\nclass Unrelated:\n" + "".join(
        f"    def m{i}(self):\n        return {i}\n\n" for i in range(40)
    )
    return head + cls + other + extra


# Every kind of statement and expression libcst has, new syntax included.
SYNTAX_ZOO = '''"""doc"""
from __future__ import annotations
import a.b as c, d
from .e import (f as g, h)
from . import *
@dec(1)
@other
async def fn[T: int, *Ts, **P](x: int = 1, /, y=2, *args: T, z, w=3, **kw) -> "R":
    global q
    async with a as (b, c), d:
        async for i, j in k:
            yield i
            await j
            yield from j
    try:
        pass
    except* ValueError as e:
        raise X from e
    else:
        pass
    finally:
        del a, b[1], c.d
    match command.split():
        case [Point(x=0, y=0) as p, *rest] if p and rest:
            pass
        case {"k": v, **others}:
            pass
        case 1 | 2 | None:
            pass
        case _:
            pass
    return lambda a, *b, c=1, **d: (a if b else c, [x for x in y if x], {k: v for k, v in z})
type Alias[K] = dict[K, int]
class C[T](Base, metaclass=M):
    x: int = 1
    y += 2
    def m(self): return f"{self.x!r:>{width}} {y=}" + f"""{
        z}"""
while (n := next(it)) is not None:  # comment
    print(*a, **b, sep="")
else:
    assert x, "m"
for x in y: pass
else: pass
if a: b
elif c: d
else: e
with open(x) as f: pass
try:
    pass
except (A, B) as e:
    pass
x = a[1:2:3, ..., ::2]; y = not -a ** ~b @ c // d
print(a < b <= c != d is not e in f not in g, \\
    (yield), *[1])
'''


def _sources() -> list[tuple[str, str]]:
    sources = [("syntax-zoo", SYNTAX_ZOO), ("syntax-zoo-crlf", SYNTAX_ZOO.replace("\n", "\r\n"))]
    sources += [(case.name, read(case.source)) for case in cases()]
    sources += [(case.name + ".out", read(case.expected)) for case in cases()]
    sources += [(str(p.relative_to(ROOT)), read(p)) for p in sorted(ROOT.glob("examples/**/*.py"))]
    return sources


SOURCES = _sources()

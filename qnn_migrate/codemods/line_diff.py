"""A line diff whose work is bounded whatever the lines are: Myers' algorithm with a budget.

``difflib.SequenceMatcher`` (without autojunk) spends time proportional to the product of the
two sides' counts of each repeated line, and recurses on top: a file of many identical lines
with changes among them takes minutes to hours. The texts diffed here come from other
people (a PR's files for ``/qnn migrate``, any file for the rewrite's excerpt splice), so
:func:`opcodes` does what ``git diff --patience`` does: after cutting the common head and
tail, the lines that occur once on each side and keep their order anchor the diff
(a longest increasing subsequence, O(N log N)), and Myers' O((N+M)·D) algorithm (``git
diff``'s default: minimal edits, lines compared as interned integers) diffs each stretch
between anchors. Every step is counted: past ``MAX_DIFF_STEPS`` the stretches not yet done
are each reported as one replacement. That answer is still exact (applying it gives the
new text), only coarser. A change that can slide up onto the one before it is joined to
it, as git compacts them. Pure: sequences of lines in, difflib-style opcodes out.

Why not a library: difflib is the standard one and is the problem; ``diff-match-patch``
bounds its work by a wall-clock deadline (``Diff_Timeout``: the suggestions would depend on
the machine's load); any other would be a new dependency of the core install (the rewrite
needs only libcst, click and pathspec). The algorithm here is the textbook one, about a
hundred lines, and ``tests/codemods/test_line_diff.py`` checks it against difflib.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

# Steps of the diff of one file: one per line read, per (edit count, diagonal) visited and
# per line compared. A rewrite's diff of a 10,000-line file with a hundred rewritten calls
# takes tens of thousands; this many take about a third of a second.
MAX_DIFF_STEPS = 1_000_000

Opcode = tuple[str, int, int, int, int]  # (tag, i1, i2, j1, j2), as difflib's get_opcodes


@dataclass
class DiffWork:
    """What :func:`opcodes` did: its steps, and whether it gave up for the budget."""

    steps: int = 0
    coarse: bool = False


def opcodes(
    a: Sequence[str],
    b: Sequence[str],
    *,
    budget: int = MAX_DIFF_STEPS,
    work: DiffWork | None = None,
) -> list[Opcode]:
    """How to turn ``a`` into ``b``: ``equal``, ``replace``, ``delete`` and ``insert`` ranges
    covering both sides in order, as ``difflib.SequenceMatcher.get_opcodes`` gives them."""
    work = DiffWork() if work is None else work
    n, m = len(a), len(b)
    head = 0
    while head < n and head < m and a[head] == b[head]:
        head += 1
    end_a, end_b = n, m
    while end_a > head and end_b > head and a[end_a - 1] == b[end_b - 1]:
        end_a, end_b = end_a - 1, end_b - 1
    work.steps += head + (n - end_a)
    ids: dict[str, int] = {}
    x = [ids.setdefault(line, len(ids)) for line in a[head:end_a]]
    y = [ids.setdefault(line, len(ids)) for line in b[head:end_b]]
    work.steps += len(x) + len(y)
    middle = _anchored(x, y, budget, work)
    blocks = [(0, 0, head)] if head else []
    blocks += [(i + head, j + head, size) for i, j, size in middle]
    if end_a < n:
        blocks.append((end_a, end_b, n - end_a))
    codes: list[Opcode] = []
    i = j = 0
    for block_i, block_j, size in [*blocks, (n, m, 0)]:
        if i < block_i or j < block_j:
            tag = (
                "replace" if i < block_i and j < block_j else "delete" if i < block_i else "insert"
            )
            codes.append((tag, i, block_i, j, block_j))
        if size:
            if codes and codes[-1][0] == "equal" and codes[-1][2] == block_i:
                codes[-1] = ("equal", codes[-1][1], block_i + size, codes[-1][3], block_j + size)
            else:
                codes.append(("equal", block_i, block_i + size, block_j, block_j + size))
        i, j = block_i + size, block_j + size
    return _slid_up(codes, a, b)


def _slid_up(codes: list[Opcode], a: Sequence[str], b: Sequence[str]) -> list[Opcode]:
    """``codes`` with each insertion or deletion that can slide up onto the change before it
    joined to that change (as ``git diff`` compacts them, and difflib's matcher tends to
    place them): ``-x`` `` )`` ``+y`` ``+)`` becomes ``-x`` ``+)`` ``+y`` `` )``, one change.
    A slide moves the lines it passes to the other side of the change, so it is taken only
    when those lines end the inserted (or deleted) block: the text stays the same."""
    out: list[Opcode] = []
    for code in codes:
        tag, i1, i2, j1, j2 = code
        if len(out) >= 2 and tag in ("insert", "delete") and out[-1][0] == "equal":
            _, e_i1, e_i2, e_j1, e_j2 = out[-1]
            size = e_i2 - e_i1
            moved = b[j2 - size : j2] if tag == "insert" else a[i2 - size : i2]
            if size <= max(i2 - i1, j2 - j1) and list(moved) == list(a[e_i1:e_i2]):
                _, c_i1, c_i2, c_j1, c_j2 = out[-2]
                if tag == "insert":  # the equal lines now match the block's last lines
                    joined = (c_i1, c_i2, c_j1, j2 - size)
                    equal = ("equal", e_i1, e_i2, j2 - size, j2)
                else:
                    joined = (c_i1, i2 - size, c_j1, c_j2)
                    equal = ("equal", i2 - size, i2, e_j1, e_j2)
                out[-2:] = [(_tag(*joined), *joined), equal]
                continue
        if out and tag == "equal" and out[-1][0] == "equal":
            out[-1] = ("equal", out[-1][1], i2, out[-1][3], j2)
        else:
            out.append(code)
    return out


def _tag(i1: int, i2: int, j1: int, j2: int) -> str:
    return "replace" if i1 < i2 and j1 < j2 else "delete" if i1 < i2 else "insert"


def _anchored(
    x: list[int], y: list[int], budget: int, work: DiffWork
) -> list[tuple[int, int, int]]:
    """Matching blocks ``(i, j, size)``: the anchors, and Myers' blocks between them."""
    once_x, once_y = Counter(x), Counter(y)
    where_y = {line: j for j, line in enumerate(y) if once_y[line] == 1}
    pairs = [
        (i, where_y[line]) for i, line in enumerate(x) if once_x[line] == 1 and line in where_y
    ]
    work.steps += len(x) + len(y) + len(pairs)
    blocks: list[tuple[int, int, int]] = []
    i = j = 0
    for anchor_i, anchor_j in [*_increasing(pairs), (len(x), len(y))]:
        between = _myers(x[i:anchor_i], y[j:anchor_j], budget, work)
        if between is None:  # over the budget: this stretch is one replacement
            work.coarse = True
            between = []
        blocks += [(i + bi, j + bj, size) for bi, bj, size in between]
        if anchor_i < len(x):
            last_i, last_j, size = blocks[-1] if blocks else (-1, -1, 0)
            if (last_i + size, last_j + size) == (anchor_i, anchor_j):
                blocks[-1] = (last_i, last_j, size + 1)
            else:
                blocks.append((anchor_i, anchor_j, 1))
        i, j = anchor_i + 1, anchor_j + 1
    return blocks


def _increasing(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The longest chain of ``pairs`` (sorted by ``i``) whose ``j`` increase (patience sort)."""
    tails: list[int] = []  # the smallest last j of a chain of each length
    tail_at: list[int] = []  # ...and the index of its pair
    before = [-1] * len(pairs)
    for index, (_, j) in enumerate(pairs):
        length = bisect_left(tails, j)
        if length == len(tails):
            tails.append(j)
            tail_at.append(index)
        else:
            tails[length], tail_at[length] = j, index
        before[index] = tail_at[length - 1] if length else -1
    chain: list[tuple[int, int]] = []
    index = tail_at[-1] if tail_at else -1
    while index >= 0:
        chain.append(pairs[index])
        index = before[index]
    chain.reverse()
    return chain


def _myers(
    x: list[int], y: list[int], budget: int, work: DiffWork
) -> list[tuple[int, int, int]] | None:
    """The matching blocks ``(i, j, size)`` of a shortest edit script, or None past ``budget``.

    Greedy forward search on diagonals ``k = i - j``; ``trace[d]`` keeps the furthest ``i``
    of each diagonal after ``d - 1`` edits (only diagonals ``-d-1..d+1``: memory grows with
    the edits, not with the lines), and the path is read back from it.
    """
    n, m = len(x), len(y)
    if not n or not m:
        return []
    if work.steps > budget:
        return None
    offset = n + m + 1
    furthest = array("i", bytes(4 * (2 * offset + 1)))
    trace: list[array[int]] = []
    for d in range(n + m + 1):
        trace.append(furthest[offset - d - 1 : offset + d + 2])
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and furthest[offset + k - 1] < furthest[offset + k + 1]):
                i = furthest[offset + k + 1]  # down: one line inserted
            else:
                i = furthest[offset + k - 1] + 1  # right: one line deleted
            j = i - k
            start = i
            while i < n and j < m and x[i] == y[j]:
                i, j = i + 1, j + 1
            work.steps += 1 + i - start
            furthest[offset + k] = i
            if i >= n and j >= m:
                return _path(trace, n, m)
            if work.steps > budget:
                return None
    raise AssertionError("unreachable: n + m edits always reach the end")


def _path(trace: list[array[int]], n: int, m: int) -> list[tuple[int, int, int]]:
    """The matching blocks of the path that reached ``(n, m)``, top to bottom."""
    blocks: list[tuple[int, int, int]] = []
    i, j = n, m
    for d in range(len(trace) - 1, -1, -1):
        before, k, base = trace[d], i - j, d + 1
        if k == -d or (k != d and before[base + k - 1] < before[base + k + 1]):
            prev_k = k + 1
            prev_i = before[base + prev_k]
            mid_i, mid_j = prev_i, prev_i - prev_k + 1
        else:
            prev_k = k - 1
            prev_i = before[base + prev_k]
            mid_i, mid_j = prev_i + 1, prev_i - prev_k
        if d == 0:
            mid_i, mid_j = 0, 0
        if i > mid_i:
            blocks.append((mid_i, mid_j, i - mid_i))
        i, j = prev_i, prev_i - prev_k
    blocks.reverse()
    return blocks


def unified_lines(
    a: Sequence[str], b: Sequence[str], fromfile: str, tofile: str, context: int = 3
) -> Iterator[str]:
    """``difflib.unified_diff(a, b, fromfile, tofile, n=context)``'s lines, over
    :func:`opcodes` (so bounded the same way)."""
    groups = _grouped(opcodes(a, b), context)
    first = next(groups, None)
    if first is None:
        return
    yield f"--- {fromfile}\n"
    yield f"+++ {tofile}\n"
    for group in (first, *groups):
        yield f"@@ -{_range(group[0][1], group[-1][2])} +{_range(group[0][3], group[-1][4])} @@\n"
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                yield from (" " + line for line in a[i1:i2])
                continue
            yield from ("-" + line for line in a[i1:i2])
            yield from ("+" + line for line in b[j1:j2])


def _grouped(codes: list[Opcode], context: int) -> Iterator[list[Opcode]]:
    """The changes with ``context`` equal lines around each; changes closer than twice that
    share a group (difflib's ``get_grouped_opcodes``)."""
    if not codes:
        return
    tag, i1, i2, j1, j2 = codes[0]
    if tag == "equal":
        codes[0] = (tag, max(i1, i2 - context), i2, max(j1, j2 - context), j2)
    tag, i1, i2, j1, j2 = codes[-1]
    if tag == "equal":
        codes[-1] = (tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context))
    group: list[Opcode] = []
    for tag, i1, i2, j1, j2 in codes:
        if tag == "equal" and i2 - i1 > 2 * context:
            group.append((tag, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            yield group
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((tag, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0] == "equal"):
        yield group


def _range(start: int, stop: int) -> str:
    """A unified diff's ``start,length`` (1-based; an empty range names the line before)."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start if not length else start + 1},{length}"

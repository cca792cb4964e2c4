"""What a rule reports about a file: sites it rewrote and sites it will not touch, with why."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

OLD = "to_edge_transform_and_lower_to_qnn"

# User-facing reasons. Each says what was found and what to do next.
STAR_ARGS = (
    f"{OLD} is called with *args/**kwargs whose contents are unknown here; pass the "
    "arguments explicitly (or rewrite this call by hand), then run qnn-migrate again"
)
AS_VALUE = (
    f"{OLD} is {{how}} here, not called, so the rewrite cannot follow it to where it is "
    "called. Call the replacement there explicitly (see docs/rewrite.md)"
)
PATCH_STRING = (
    f"a patch target string names {OLD}; after the rewrite nothing calls it any more. "
    "Patch what the rewritten code calls instead (executorch.exir.to_edge_transform_and_lower, "
    "the qnn_passes functions, or QnnManagerContext)"
)
STRING = (
    f"a string mentions {OLD}; strings are not rewritten. Update it by hand if it names "
    "the API (docs, log messages, import strings)"
)
UNKNOWN_KEYWORD = (
    f"{OLD} is called with keyword argument(s) {{names}} that ExecuTorch's wrapper does not "
    "have (a fork's extension?); the rewrite cannot know what they mean. Rewrite this call by hand"
)
BAD_CALL = f"{OLD} is called with {{problem}}; this call would fail as written. Fix it first"
OTHER_OBJECT = (
    f"`{{receiver}}.{OLD}(...)` is a method of another object, not ExecuTorch's function; "
    "left alone. Migrate that method's body instead"
)
DEFINING_MODULE = (
    f"this file defines {OLD} itself (ExecuTorch's own implementation); the file is left alone"
)
AMBIGUOUS = (
    f"here {OLD} may also be {{other}}, so the rewrite cannot tell what is called. "
    "Rewrite this call by hand, or remove the other binding"
)
COMPREHENSION_ITERABLE = (
    f"{OLD} is called in the iterable of a comprehension, where Python forbids the `:=` the "
    "rewrite needs; assign the call's result to a name before the comprehension, then run "
    "qnn-migrate again"
)
CLASS_COMPREHENSION = (
    f"{OLD} is called in a comprehension in a class body, where Python forbids the `:=` the "
    "rewrite needs; move the call into a function or a separate statement, then run again"
)
FSTRING = f"{OLD} is called inside an f-string; assign the result to a name first, then run again"
ORDER = (
    "the arguments {names} have side effects and the rewritten expression would evaluate them "
    "in a different order; assign them to names before this statement, then run again"
)
ORDER_LOOP_VARIABLE = (
    "the arguments {names} have side effects and the rewritten expression would evaluate them "
    "in a different order; they read {variables}, which {where} binds, so they cannot be "
    "assigned to names before this statement. Turn {where} into a statement of its own (a "
    f"`for` loop or a `def`) that calls {OLD}, then run again"
)
EXECUTORCH_EXPRESSION = (
    f"--target executorch needs the {OLD} call in a statement of its own (it becomes several "
    "statements); here it is in {where}. Assign the result to a name in its own "
    "statement, or use the default target (--target qnn-passes)"
)


@dataclass(frozen=True, order=True)
class Unfixable:
    """A site the rule found and left alone (or, ``kind`` "info", a note about a rewrite).

    ``line`` is 1-based, ``column`` 0-based (libcst's positions); ``code`` names the reason
    (the same for every site left alone for that reason), for counting per reason.
    """

    line: int
    reason: str
    column: int = 0
    kind: str = "unfixable"  # or "info": the site was handled, the user may want to look
    code: str = ""

    def render(self, path: str) -> str:
        """``path:line:col: reason``, the form editors and CI logs link to."""
        prefix = "info: " if self.kind == "info" else ""
        return f"{path}:{self.line}:{self.column + 1}: {prefix}{self.reason}"

    def moved(self, line: int) -> Unfixable:
        """The same finding at another line (an excerpt's line mapped back to the file's)."""
        return Unfixable(line, self.reason, self.column, self.kind, self.code)


OTHER_FUNCTION = f"this calls a different {OLD} ({{where}}), not ExecuTorch's; left alone"
BOUND_AT_RUN_TIME = (
    f"here {OLD} is what line {{line}} binds ({{what}}), not an import of ExecuTorch's "
    "function, so what it calls is only known at run time; left alone. If it is ExecuTorch's, "
    "import it by its full name (from executorch.backends.qualcomm.utils.utils import ...), "
    "then run again"
)
UNRESOLVED = (
    f"cannot tell where this {OLD} comes from (a star import, a relative import, or a name "
    "defined elsewhere at run time); left alone. Import it by its full name "
    "(from executorch.backends.qualcomm.utils.utils import ...), then run again"
)
OLD_COMMENT = (
    f"this comment above a rewritten call names {OLD}; update it if it describes the old call"
)
AVAILABILITY_CHECK = (
    f"this tests whether {OLD} could be imported; the test stays, and so does the old "
    "import it needs. Test a name of the new imports instead (with an `except ImportError:` "
    "fallback of `None` for it), then remove the old import"
)
AVAILABILITY_REWRITTEN = (
    f"this test of whether {OLD} could be imported now tests {{new}}, which the new imports "
    "bind in the same `try` (its `except` clause sets it to None instead)"
)
IMPORTS_BEFORE_OLD = (
    f"the new imports go before the import of {OLD} in this `try`: that import stays (the "
    "name is still used), and when ExecuTorch drops the name it must not take the new imports "
    "with it. An import sorter would move them after it; keep them before"
)
KEPT_IMPORT = (
    f"the import of {OLD} stays although this file no longer calls it: {{why}}; remove it "
    "once nothing imports the name from here"
)
UNUSED_IMPORT_REMOVED = (
    f"the import of {OLD} is removed: nothing in this file uses it, and it would fail once "
    "ExecuTorch removes the function"
)
UNUSED_IMPORT_KEPT = (
    f"the import of {OLD} stays although nothing in this file uses it: {{why}}. It fails once "
    "ExecuTorch removes the function: migrate the code that gets the name through this "
    "module, then remove the import"
)
NESTED = (
    f"this {OLD} call has another one inside its arguments; rewrite the inner call into a "
    "statement of its own first, then run again"
)


@dataclass
class Report:
    """What one rule found in one file: rewritten sites and sites left alone."""

    rewritten: int = 0
    unfixable: list[Unfixable] = field(default_factory=list)
    rewritten_at: list[tuple[int, int]] = field(default_factory=list)  # (line, 0-based column)

    def leave(self, line: int, reason: str, column: int = 0) -> None:
        """Record a site left alone."""
        self.unfixable.append(Unfixable(line, reason, column, "unfixable", _code(reason)))

    def note(self, line: int, reason: str, column: int = 0) -> None:
        """Record something about a rewritten site the user may want to look at."""
        self.unfixable.append(Unfixable(line, reason, column, "info", _code(reason)))


def _code(reason: str) -> str:
    """A short name for the reason: the name of its message in this module, in kebab case."""
    for name, pattern in _PATTERNS.items():
        if pattern.fullmatch(reason):
            return name.lower().replace("_", "-")
    return "other"


# Each message as a pattern: its ``{field}`` parts match anything.
_PATTERNS = {
    name: re.compile(".*".join(re.escape(part) for part in re.split(r"\{\w+\}", value)), re.S)
    for name, value in dict(globals()).items()
    if name.isupper() and isinstance(value, str) and name != "OLD"
}

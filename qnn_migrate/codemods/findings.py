"""What a rule reports about a file: sites it rewrote and sites it will not touch, with why.

Every reason carries a stable code (``QM101``), as ruff's and torchfix's rules do: tools and
tests match the code, never the wording; ``data/codes.toml`` holds each code's page
(``qnn-migrate rewrite --explain QM101``, and the codes table of docs/rewrite.md). The
ranges: ``QM0xx`` a rewritten call, ``QM1xx`` a call the rewrite cannot write,
``QM2xx`` a mention that is not (or not surely) a call of ExecuTorch's function, ``QM3xx``
the imports of the old name, ``QM4xx`` other notes, ``QM9xx`` a file or path the run could
not process. A code is never reused for another meaning.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

OLD = "to_edge_transform_and_lower_to_qnn"


class Reason(NamedTuple):
    """A user-facing reason and its stable code; ``{field}`` parts are filled by :meth:`format`."""

    code: str
    text: str

    def format(self, **fields: object) -> Reason:
        """The reason with its fields filled in; the same code."""
        return Reason(self.code, self.text.format(**fields))


# The rewritten call (what every rewritten site reports).
REWRITTEN = Reason("QM001", f"{OLD} -> executorch.exir.to_edge_transform_and_lower")
# A call that a noqa comment (bare, or naming QM001) keeps: reported under the code it suppresses.
SUPPRESSED_REWRITE = Reason(
    "QM001",
    f"{OLD} is not rewritten: a `# noqa` comment on this line suppresses QM001; remove it "
    "to have the call rewritten",
)

# User-facing reasons. Each says what was found and what to do next.
STAR_ARGS = Reason(
    "QM101",
    f"{OLD} is called with *args/**kwargs whose contents are unknown here; pass the "
    "arguments explicitly (or rewrite this call by hand), then run qnn-migrate again",
)
AS_VALUE = Reason(
    "QM201",
    f"{OLD} is {{how}} here, not called, so the rewrite cannot follow it to where it is "
    "called. Call the replacement there explicitly (qnn-migrate rewrite --explain QM201)",
)
PATCH_STRING = Reason(
    "QM209",
    f"a patch target string names {OLD}; after the rewrite nothing calls it any more. "
    "Patch what the rewritten code calls instead (executorch.exir.to_edge_transform_and_lower, "
    "the qnn_passes functions, or QnnManagerContext)",
)
STRING = Reason(
    "QM208",
    f"a string mentions {OLD}; strings are not rewritten. Update it by hand if it names "
    "the API (docs, log messages, import strings)",
)
UNKNOWN_KEYWORD = Reason(
    "QM102",
    f"{OLD} is called with keyword argument(s) {{names}} that ExecuTorch's wrapper does not "
    "have (a fork's extension?); the rewrite cannot know what they mean. Rewrite this call by hand",
)
BAD_CALL = Reason(
    "QM103", f"{OLD} is called with {{problem}}; this call would fail as written. Fix it first"
)
OTHER_OBJECT = Reason(
    "QM202",
    f"`{{receiver}}.{OLD}(...)` is a method of another object, not ExecuTorch's function; "
    "left alone. Migrate that method's body instead",
)
DEFINING_MODULE = Reason(
    "QM207",
    f"this file defines {OLD} itself (ExecuTorch's own implementation); the file is left alone",
)
AMBIGUOUS = Reason(
    "QM206",
    f"here {OLD} may also be {{other}}, so the rewrite cannot tell what is called. "
    "Rewrite this call by hand, or remove the other binding",
)
COMPREHENSION_ITERABLE = Reason(
    "QM107",
    f"{OLD} is called in the iterable of a comprehension, where Python forbids the `:=` the "
    "rewrite needs; assign the call's result to a name before the comprehension, then run "
    "qnn-migrate again",
)
CLASS_COMPREHENSION = Reason(
    "QM108",
    f"{OLD} is called in a comprehension in a class body, where Python forbids the `:=` the "
    "rewrite needs; move the call into a function or a separate statement, then run again",
)
FSTRING = Reason(
    "QM106",
    f"{OLD} is called inside an f-string; assign the result to a name first, then run again",
)
ORDER = Reason(
    "QM104",
    "the arguments {names} have side effects and the rewritten expression would evaluate them "
    "in a different order; assign them to names before this statement, then run again",
)
ORDER_LOOP_VARIABLE = Reason(
    "QM110",
    "the arguments {names} have side effects and the rewritten expression would evaluate them "
    "in a different order; they read {variables}, which {where} binds, so they cannot be "
    "assigned to names before this statement. Turn {where} into a statement of its own (a "
    f"`for` loop or a `def`) that calls {OLD}, then run again",
)
# QM109 (--target executorch: a call inside an expression) is no longer reported: that
# target now rewrites every call where it sits. The code stays retired, never reused.
EXECUTORCH_NOT_WHOLE = Reason(
    "QM111",
    f"this {OLD} call is left as it is: --target executorch migrates a file's calls all "
    "together or not at all, and the call(s) at line(s) {lines} cannot be rewritten (see "
    "their own reasons). Fix those, then run again; or use the default target "
    "(--target qnn-passes), which rewrites the others",
)
PATCH_LOST = Reason(
    "QM112",
    f"this {OLD} call is left as it is: `{{code}}` in this file patches `{{patched}}`, which the old "
    "call runs but the rewritten code would not, so the patch would silently stop applying. "
    "{ways}, then run again",
)


@dataclass(frozen=True, order=True)
class Unfixable:
    """A site the rule found and left alone (or, ``kind`` "info", a note about a rewrite).

    ``line`` is 1-based, ``column`` 0-based (libcst's positions); ``code`` is the reason's
    stable code (``QM101``: the same for every site left alone for that reason).
    """

    line: int
    reason: str
    column: int = 0
    kind: str = "unfixable"  # or "info": the site was handled, the user may want to look
    code: str = ""

    def render(self, path: str) -> str:
        """``path:line:col: CODE reason``, the form editors and CI logs link to."""
        prefix = "info: " if self.kind == "info" else ""
        code = f"{self.code} " if self.code else ""
        return f"{path}:{self.line}:{self.column + 1}: {prefix}{code}{self.reason}"

    def moved(self, line: int) -> Unfixable:
        """The same finding at another line (an excerpt's line mapped back to the file's)."""
        return Unfixable(line, self.reason, self.column, self.kind, self.code)


OTHER_FUNCTION = Reason(
    "QM203", f"this calls a different {OLD} ({{where}}), not ExecuTorch's; left alone"
)
BOUND_AT_RUN_TIME = Reason(
    "QM204",
    f"here {OLD} is what line {{line}} binds ({{what}}), not an import of ExecuTorch's "
    "function, so what it calls is only known at run time; left alone. If it is ExecuTorch's, "
    "import it by its full name (from executorch.backends.qualcomm.utils.utils import ...), "
    "then run again",
)
UNRESOLVED = Reason(
    "QM205",
    f"cannot tell where this {OLD} comes from (a star import, a relative import, or a name "
    "defined elsewhere at run time); left alone. Import it by its full name "
    "(from executorch.backends.qualcomm.utils.utils import ...), then run again",
)
OLD_COMMENT = Reason(
    "QM401",
    f"this comment above a rewritten call names {OLD}; update it if it describes the old call",
)
PATCH_EXPORTED = Reason(
    "QM402",
    "this patches `{patched}`, which ExecuTorch's QNN export stage runs: the calls of "
    f"{OLD} in this file export with qnn_passes.qnn_export, which runs that stage, so the "
    "patch still applies",
)
AVAILABILITY_CHECK = Reason(
    "QM301",
    f"this tests whether {OLD} could be imported; the test stays, and so does the old "
    "import it needs. Test a name of the new imports instead (with an `except ImportError:` "
    "fallback of `None` for it), then remove the old import",
)
AVAILABILITY_REWRITTEN = Reason(
    "QM306",
    f"this test of whether {OLD} could be imported now tests {{new}}, which the new imports "
    "bind in the same `try` (its `except` clause sets it to None instead)",
)
IMPORTS_BEFORE_OLD = Reason(
    "QM305",
    f"the new imports go before the import of {OLD} in this `try`: that import stays (the "
    "name is still used), and when ExecuTorch drops the name it must not take the new imports "
    "with it. An import sorter would move them after it; keep them before",
)
KEPT_IMPORT = Reason(
    "QM303",
    f"the import of {OLD} stays although this file no longer calls it: {{why}}; remove it "
    "once nothing imports the name from here",
)
UNUSED_IMPORT_REMOVED = Reason(
    "QM304",
    f"the import of {OLD} is removed: nothing in this file uses it, and it would fail once "
    "ExecuTorch removes the function",
)
UNUSED_IMPORT_KEPT = Reason(
    "QM302",
    f"the import of {OLD} stays although nothing in this file uses it: {{why}}. It fails once "
    "ExecuTorch removes the function: migrate the code that gets the name through this "
    "module, then remove the import",
)
IPYTHON_MENTION = Reason(
    "QM210",
    f"a notebook's IPython line (a magic, a shell escape) or cell magic names {OLD}; IPython "
    "syntax is not rewritten. Rewrite it by hand, or move the call into a plain Python line",
)
NESTED = Reason(
    "QM105",
    f"this {OLD} call has another one inside its arguments; rewrite the inner call into a "
    "statement of its own first, then run again",
)


@dataclass
class Report:
    """What one rule found in one file: rewritten sites and sites left alone."""

    rewritten: int = 0
    unfixable: list[Unfixable] = field(default_factory=list)
    rewritten_at: list[tuple[int, int]] = field(default_factory=list)  # (line, 0-based column)

    def leave(self, line: int, reason: Reason, column: int = 0) -> None:
        """Record a site left alone."""
        self.unfixable.append(Unfixable(line, reason.text, column, "unfixable", reason.code))

    def note(self, line: int, reason: Reason, column: int = 0) -> None:
        """Record something about a rewritten site the user may want to look at."""
        self.unfixable.append(Unfixable(line, reason.text, column, "info", reason.code))


# File-level problems: the run reports them as errors, and the file is left untouched.
CANNOT_READ = Reason("QM901", "cannot be read ({error}); skipped")
CANNOT_DECODE = Reason("QM902", "{error}; skipped")
DOES_NOT_PARSE = Reason("QM903", "does not parse ({error}); fix the syntax error, then run again")
CANNOT_WRITE = Reason("QM904", "cannot be written ({error}); left unchanged")
DIRECTORY_UNREADABLE = Reason("QM905", "directory cannot be read ({error})")
LINK_LOOP = Reason("QM906", "is a symbolic link loop (it resolves to itself); skipped")
IGNORE_FILE_UNREADABLE = Reason("QM907", "cannot be read ({error}); its rules not applied")
BROKEN_LINK = Reason("QM908", "is a symbolic link to a path that does not exist; skipped")
NOT_A_NOTEBOOK = Reason(
    "QM910",
    "cannot be processed as a Jupyter notebook ({error}); skipped, left as it was",
)
NOT_A_FILE = Reason(
    "QM909",
    "is {what}, not a regular file; skipped (reading it could wait for ever). Remove it, "
    "rename it, or exclude it (--extend-exclude)",
)
INVALID_OUTPUT = Reason(
    "QM998",
    "internal error: the rewrite {problem}; the file was left unchanged; please report this "
    "with the file attached",
)
INTERNAL_ERROR = Reason(
    "QM999", "internal error ({error}); skipped, please report it (with the file if you can)"
)


def every_reason() -> dict[str, Reason]:
    """Every reason of this module by its constant's name (the docs and tests list them)."""
    return {name: value for name, value in globals().items() if isinstance(value, Reason)}

"""Is a nightly program baseline stale against the PR's merge base? (pure over a gateway)

A program baseline was recorded at a nightly commit; the PR branched from main at its
merge base. When files that shape programs (``programs.shapes_programs``) differ between the
two, a CHANGED program may come from main rather than from the PR, and the Programs
section says so (``programs.stale_note``). GitHub's compare API answers both questions:

* ``<base branch>...<PR head>`` gives the PR's merge base (one call per report);
* ``<baseline>...<merge base>`` gives the files changed from the baseline to the merge base
  when the baseline is older (GitHub's status ``ahead``), which is one call per distinct
  baseline commit. When the baseline is newer (``behind``) or on another line of history
  (``diverged``), the files main changed after the merge base are on the other side:
  ``<merge base>...<baseline>`` is asked too, and both sides count.

GitHub lists at most 300 changed files and does not say when it cut the list, so a list of
300 is taken as "may matter". A compare that fails (404: the baseline's commit is gone;
the network) loses nothing else: the section says the staleness could not be checked, and
why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from qnn_migrate.bot.github.gateway import GatewayError, GitHubGateway
from qnn_migrate.bot.pr.programs import ProgramGroup, stale_note, stale_unknown
from qnn_migrate.bot.text import escape


@dataclass(frozen=True)
class Drift:
    """What lies between a baseline's commit and the PR's merge base."""

    baseline_sha: str
    merge_base: str
    direction: str  # older | newer | apart | same: where the baseline stands
    paths: tuple[str, ...] = ()  # the paths that differ (both sides when apart)
    capped: bool = False  # GitHub's list of changed files may have been cut
    error: str = ""  # the compare failed: the drift is unknown, and this says why

    def note(self) -> str:
        """The stale note for the Programs section ("" when nothing that matters changed)."""
        if self.error:
            return stale_unknown(self.baseline_sha, self.error)
        if self.direction == "same":
            return ""
        return stale_note(
            self.baseline_sha,
            self.merge_base,
            self.paths,
            capped=self.capped,
            direction=self.direction,
        )


class DriftChecker:
    """Drift of each baseline commit from one merge base, asked of GitHub once per commit
    (the SoCs and tiers that share a nightly share its answer)."""

    def __init__(self, gw: GitHubGateway, merge_base: str | None, why_not: str = "") -> None:
        self._gw = gw
        self._merge_base = merge_base
        self._why_not = why_not
        self._cache: dict[str, Drift] = {}

    def drift(self, baseline_sha: str) -> Drift:
        if baseline_sha not in self._cache:
            self._cache[baseline_sha] = self._ask(baseline_sha)
        return self._cache[baseline_sha]

    def _compare(self, base: str, head: str) -> tuple[str, tuple[str, ...], bool]:
        found = self._gw.compare(base, head)
        return found.status, found.files, found.capped

    def _ask(self, baseline: str) -> Drift:
        merge_base = self._merge_base
        if merge_base is None:
            return Drift(baseline, "", "unknown", error=self._why_not)
        if baseline == merge_base:
            return Drift(baseline, merge_base, "same")
        try:
            status, files, capped = self._compare(baseline, merge_base)
            if status == "identical":
                return Drift(baseline, merge_base, "same")
            if status == "ahead":  # the merge base descends from the baseline
                return Drift(baseline, merge_base, "older", files, capped)
            # Main moved past the merge base to the baseline (behind), or the two are on
            # different lines (diverged): what main changed since the merge base counts too.
            _, others, cut = self._compare(merge_base, baseline)
        except GatewayError as exc:
            return Drift(baseline, merge_base, "unknown", error=_why(exc, baseline))
        direction = "newer" if status == "behind" else "apart"
        paths = tuple(dict.fromkeys((*files, *others)))
        return Drift(baseline, merge_base, direction, paths, capped or cut)


def _why(exc: GatewayError, baseline: str) -> str:
    if exc.status == 404:
        return (
            f"GitHub cannot compare the baseline's commit `{baseline[:12]}` with the merge base "
            "(404: the commit is gone from the repository, or the two share no history)"
        )
    return f"GitHub's compare API failed ({escape(str(exc), 200)})"


def merge_base_of(gw: GitHubGateway, pr: int, head_sha: str) -> tuple[str | None, str]:
    """The merge base of PR ``pr`` at ``head_sha`` with its base branch, or (None, why not)."""
    try:
        pull = gw.pull(pr)
        if pull is None:
            return None, f"PR #{pr} could not be read"
        found = gw.compare(pull.base_ref or gw.default_branch(), head_sha)
    except GatewayError as exc:
        return None, f"the PR's merge base could not be read from GitHub ({escape(str(exc), 200)})"
    return found.merge_base, ""


def annotate(
    gw: GitHubGateway, groups: Sequence[ProgramGroup], pr: int | None, head_sha: str
) -> list[ProgramGroup]:
    """``groups`` with the stale note of each one compared with a nightly baseline.

    GitHub is asked only when some group has a baseline: the merge base once, then each
    distinct baseline commit once, twice when it is newer than the merge base or apart from
    it (``DriftChecker``).
    """
    checked = [g for g in groups if g.baseline_sha and not g.against_base]
    if not checked or pr is None:
        return list(groups)
    merge_base, why_not = merge_base_of(gw, pr, head_sha)
    checker = DriftChecker(gw, merge_base, why_not)
    return [
        replace(g, stale=checker.drift(g.baseline_sha).note())
        if g.baseline_sha and not g.against_base
        else g
        for g in groups
    ]

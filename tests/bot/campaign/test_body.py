"""campaign/body.py and marker.py: the PR's text, its hidden memory, inert and within GitHub's size."""

from __future__ import annotations

from qnn_migrate.bot.campaign import body as body_mod
from qnn_migrate.bot.campaign.marker import (
    PROOF_END,
    PROOF_START,
    REBASE_TAG,
    STOPPED,
    Marker,
    proof_section,
    read_marker,
    rebase_requested,
    with_proof,
)
from qnn_migrate.bot.campaign.tree import FileRewrite, SiteLeft, TreeRewrite

BASE, HEAD = "b" * 40, "d" * 40
FACTS = body_mod.Facts(
    repo_url="https://github.com/qnn-lab/executorch",
    default_branch="main",
    branch="qnn-migrate/campaign",
    base=BASE,
    head=HEAD,
    proof_command=f"/qnn test auto --sim --compare base --sha {HEAD}",
    version="1.2.3",
)


def tree(*files: FileRewrite) -> TreeRewrite:
    return TreeRewrite("qnn-passes", "canonical", (".",), "pyproject.toml", 10, files)


def test_the_marker_round_trips_and_refuses_what_is_malformed() -> None:
    marker = Marker(BASE, HEAD, "0123456789abcdef")
    assert read_marker(f"x\n{marker.line()}\ny") == marker
    closed = Marker(BASE, HEAD, "0123456789abcdef", closed=True)
    assert read_marker(closed.line()) == closed
    stalled = Marker(BASE, HEAD, "0123456789abcdef", prev="e" * 40)
    assert read_marker(stalled.line()) == stalled and stalled.ours == {HEAD, "e" * 40}
    assert read_marker(marker.line().replace(HEAD, HEAD[:39])) is None
    assert read_marker(marker.line().replace("head=", "head= ")) is None
    assert read_marker("no marker") is None


def test_the_box_counts_only_when_ticked_at_the_start_of_a_line() -> None:
    assert rebase_requested(f"- [x] {REBASE_TAG} tick")
    assert rebase_requested(f"text\n- [X] {REBASE_TAG} tick")
    assert not rebase_requested(f"- [ ] {REBASE_TAG} tick")
    assert not rebase_requested(f"> - [x] {REBASE_TAG} quoted")


def test_the_body_counts_files_links_lines_and_makes_reasons_inert() -> None:
    files = (
        FileRewrite(
            "a/one.py", b"new", rewritten=2, left=(SiteLeft(7, "QM101", "see `x` @team #12"),)
        ),
        FileRewrite("a/two.py", None, left=(SiteLeft(3, "QM201", "<b>x</b> https://evil"),)),
        FileRewrite("a/odd name|x.py", None, error="does not parse"),
    )
    text = body_mod.render(tree(*files), FACTS)
    assert text.startswith(Marker(BASE, HEAD, tree(*files).changes() or "").line())
    assert "**2 calls rewritten in 1 file; 2 sites left for a person**" in text
    assert (
        f"| [`a/one.py`](https://github.com/qnn-lab/executorch/blob/{HEAD}/a/one.py) | 2 | 1 |"
        in text
    )
    # A site in a rewritten file links to the campaign's commit, one in an untouched file to
    # the base; the rewrite's code spans are kept, the rest made inert.
    assert (
        f"(https://github.com/qnn-lab/executorch/blob/{HEAD}/a/one.py#L7): QM101 see `x` @\u200dteam #\u200d12"
        in text
    )
    assert f"/blob/{BASE}/a/two.py#L3): QM201 &lt;b&gt;x&lt;/b&gt; https\u200d://evil" in text
    assert "| a/odd name\\|x.py | not rewritten: does not parse | — |" in text
    assert (
        f"git checkout {BASE}\nqnn-migrate rewrite --diff --target qnn-passes --flow canonical -- ."
        in text
    )
    assert f"- [ ] {REBASE_TAG}" in text and not rebase_requested(text)
    assert proof_section(text) is not None and "Its link appears here" in text


def test_the_body_stays_under_githubs_limit_and_counts_what_it_leaves_out() -> None:
    many = tuple(
        FileRewrite(f"pkg/m{i:05}.py", b"x", rewritten=1, left=(SiteLeft(1, "QM101", "r" * 250),))
        for i in range(3000)
    )
    text = body_mod.render(tree(*many), FACTS)
    assert len(text) <= body_mod.MAX_BODY_CHARS
    assert "more files not shown" in text or "more sites not listed" in text
    # The parts after the lists are all there.
    assert proof_section(text) is not None and REBASE_TAG in text and "Reproduce it locally" in text


def test_the_stop_notice_is_added_once_after_the_heading() -> None:
    text = body_mod.render(tree(FileRewrite("a.py", b"x", rewritten=1)), FACTS)
    marker = read_marker(text)
    once = body_mod.with_stop_notice(text, branch=FACTS.branch, tip="e" * 40, marker=marker)
    assert once.count(STOPPED) == 1 and "`eeeeeeeeeeee`, not the campaign's last commit" in once
    assert once.index(STOPPED) > once.index("## Migrate off")
    assert body_mod.with_stop_notice(once, branch=FACTS.branch, tip="f" * 40, marker=marker) == once
    assert read_marker(once) == marker  # the memory is kept


def test_the_proof_section_is_replaced_in_place() -> None:
    text = body_mod.render(tree(FileRewrite("a.py", b"x", rewritten=1)), FACTS)
    done = body_mod.proof_done(FACTS.proof_command, "https://x/r", "https://x/run")
    replaced = with_proof(text, done)
    assert proof_section(replaced) == done and replaced.count(PROOF_START) == 1
    assert replaced.replace(done, "") == text.replace(proof_section(text) or "", "")
    # A later run with the same code keeps it.
    kept = body_mod.render(tree(FileRewrite("a.py", b"x", rewritten=1)), FACTS, proof=done)
    assert kept == replaced
    assert with_proof("no section here", done) == "no section here"
    assert PROOF_END in body_mod.proof_not_run(FACTS.proof_command, "refused @x")


def test_a_closed_body_says_why_and_marks_the_marker() -> None:
    text = body_mod.render(tree(FileRewrite("a.py", b"x", rewritten=1)), FACTS)
    closed = body_mod.closed_body(text, default_branch="main", base="c" * 40, version="1.2.3")
    marker = read_marker(closed)
    assert marker is not None and marker.closed and marker.head == HEAD
    assert "nothing is left to rewrite" in closed and "`cccccccccccc`" in closed

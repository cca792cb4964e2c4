"""The comment grammar: named hostile cases, and properties over arbitrary text (hypothesis)."""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from html.parser import HTMLParser
from typing import Any

import cmarkgfm
import cmarkgfm.cmark
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.model import RunsOn
from qnn_migrate.bot.pr.commands import COMMAND_RE, command_lines, parse
from qnn_migrate.bot.pr.grammar import CommandError
from qnn_migrate.bot.pr.verbs import VERBS
from qnn_migrate.bot.pr.verbs.help import help_text as _help_text
from qnn_migrate.bot.pr.verbs.retry import RetryCommand

CONV = "canonicalize_conv"
FP_CONV2D = "TestQNNFloatingPointOperator.test_qnn_backend_conv2d"


def ok(body: str, catalog: Catalog) -> Any:
    command = parse(body, catalog)
    assert command is not None
    return command


def help_text(catalog: Catalog) -> str:
    return _help_text(catalog, VERBS)


def err(body: str, catalog: Catalog) -> str:
    with pytest.raises(CommandError) as info:
        parse(body, catalog)
    return str(info.value)


def test_defaults_come_from_the_data(catalog: Catalog) -> None:
    c = ok(f"/qnn test {CONV}", catalog)
    assert (c.verb, c.matrices, c.socs, c.backend, c.seed) == (
        "test",
        (CONV,),
        ("SM8650",),
        "htp",
        1126,
    )
    assert c.canonical() == f"/qnn test {CONV} --soc SM8650 --backend htp --seed 1126"


def test_full_test_command(catalog: Catalog) -> None:
    c = ok(
        f"/qnn test {CONV} auto {FP_CONV2D} --soc sm8650,SM8750 --soc SM8850 --backend=gpu "
        "--seed 7 --sha " + "0123456789abCDEF" * 2 + "01234567",
        catalog,
    )
    assert c.matrices == (CONV,) and c.auto and c.tests == (FP_CONV2D,)
    assert c.socs == ("SM8650", "SM8750", "SM8850")
    assert (c.backend, c.seed, c.sha) == ("gpu", 7, "0123456789abcdef" * 2 + "01234567")


def test_bare_test_means_auto_and_bare_qnn_means_help(catalog: Catalog) -> None:
    assert ok("/qnn test", catalog).auto
    assert ok("/qnn", catalog).verb == "help"
    assert ok("/qnn help", catalog).verb == "help"


def test_retry_cancel(catalog: Catalog) -> None:
    assert ok("/qnn retry", catalog) == RetryCommand()
    assert ok("/qnn retry failed", catalog).failed_only
    assert ok("/qnn cancel", catalog).verb == "cancel"
    assert "takes only `failed`" in err("/qnn retry everything", catalog)
    assert "takes no arguments" in err("/qnn cancel now", catalog)


def test_only_a_line_starting_with_qnn_counts(catalog: Catalog) -> None:
    assert parse("please run /qnn test", catalog) is None
    assert parse("- /qnn test", catalog) is None
    assert parse("/qnnx test", catalog) is None
    assert ok("LGTM\n\n   /qnn test canonicalize_conv\nthanks", catalog).line == 3
    assert parse("    /qnn test", catalog) is None  # indented code
    assert parse("\t/qnn test", catalog) is None


@pytest.mark.parametrize(
    "body",
    [
        "```\n/qnn test\n```",
        "~~~~\n/qnn test\n~~~~",
        "```sh\nfoo\n/qnn test\n",  # an unclosed fence runs to the end
        "> /qnn test",
        "  > quoted\n> /qnn cancel",
        "<!-- \n/qnn test\n-->",
        "<!-- /qnn test -->",
    ],
)
def test_code_quotes_and_html_comments_are_ignored(body: str, catalog: Catalog) -> None:
    assert parse(body, catalog) is None


def test_a_fence_closed_then_a_command(catalog: Catalog) -> None:
    assert ok("```\n/qnn cancel\n```\n/qnn retry", catalog).verb == "retry"


@pytest.mark.parametrize(
    "body",
    [
        "/ＱＮＮ test",  # full-width letters
        "／qnn test",  # full-width solidus
        "∕qnn test",  # division slash
        "/qոո test",  # Armenian vo
        "/ԛnn test",  # Cyrillic qa
        "/q\u200bnn test",  # zero-width space
        "/qnn\u00a0test",  # no-break space after /qnn
        "/QNN test",
        "\u2044qnn test",  # fraction slash
    ],
)
def test_unicode_look_alikes_are_refused_not_run(body: str, catalog: Catalog) -> None:
    assert "looks like a /qnn command" in err(body, catalog)


@pytest.mark.parametrize(
    ("body", "needle"),
    [
        ("/qnn test canonicalize_conv;rm -rf /", "characters other than"),
        ("/qnn test $(reboot)", "characters other than"),
        ("/qnn test `id`", "characters other than"),
        ("/qnn test a|b", "characters other than"),
        ("/qnn test --soc SM8650&&id", "characters other than"),
        ("/qnn test canonicalize_conv'", "characters other than"),
        ("/qnn test TestQNNFloatingPointOperator.test_qnn_backend_conv2d\x00", "NUL"),
        ("/qnn test Test\x00X.test_y", "NUL"),
        ("/qnn test TestA.test_b\r\n/qnn cancel", "one /qnn command per comment"),
        ("/qnn test canonicalize_conv\u2028--soc SM8650", "U+2028"),
        ("/qnn test canonicalize_conv é", "U+00E9"),
    ],
)
def test_shell_metacharacters_newlines_and_nuls(body: str, needle: str, catalog: Catalog) -> None:
    assert needle in err(body, catalog)


def test_unknown_names_get_close_matches(catalog: Catalog) -> None:
    assert "did you mean `canonicalize_conv`" in err("/qnn test canonicalise_conv", catalog)
    assert "did you mean `canonicalize_conv`" in err("/qnn test conv", catalog)
    message = err("/qnn test TestQNNFloatingPointOperator.test_qnn_backend_conv2", catalog)
    assert "not in the registry (executorch 1.5.1)" in message
    assert "`TestQNNFloatingPointOperator.test_qnn_backend_conv2d`" in message
    assert "did you mean `SM8650`" in err("/qnn test --soc SM8605", catalog)
    assert "did you mean `test`" in err("/qnn tset", catalog)
    assert "did you mean `--soc`" in err("/qnn test --socs SM8650", catalog)
    assert "unknown backend `npu`; backends: htp, gpu, lpai" in err(
        "/qnn test --backend npu", catalog
    )


def test_catalog_rules(catalog: Catalog) -> None:
    assert "no device runner has a SA8797 phone" in err("/qnn test --soc SA8797", catalog)
    assert "runs on SM8850, SAR2230P" in err("/qnn test --backend lpai", catalog)
    assert ok("/qnn test --backend lpai --soc SM8850", catalog).backend == "lpai"
    assert "whole number" in err("/qnn test --seed -1", catalog)
    assert "whole number" in err("/qnn test --seed 99999999999", catalog)
    assert "full 40-hexadecimal-digit SHA" in err("/qnn test --sha abc123", catalog)
    assert "full 40-hexadecimal-digit SHA" in err("/qnn test --sha " + "a" * 39, catalog)
    assert "needs a value" in err("/qnn test --soc", catalog)
    assert "may be given once" in err("/qnn test --seed 1 --seed 2", catalog)


def test_caps(catalog: Catalog) -> None:
    ids = sorted(catalog.test_ids)[:65]
    assert "at most 64 per command" in err("/qnn test " + " ".join(ids), catalog)
    socs = ",".join(catalog.lab_socs[:7])
    assert "at most 6" in err(f"/qnn test --soc {socs}", catalog)
    assert "words; at most 96" in err("/qnn test" + " auto" * 100, catalog)
    assert "at most 4096" in err("/qnn test " + "a" * 4100, catalog)


def test_a_one_megabyte_comment_is_refused_quickly(catalog: Catalog) -> None:
    body = "/qnn test canonicalize_conv\n" + "x" * (1 << 20)
    assert "the bot reads commands only from comments up to 65536" in err(body, catalog)


def test_errors_never_echo_markup_or_mentions(catalog: Catalog) -> None:
    message = err("/qnn test @maintainers`", catalog)
    assert "`@maintainers\\x60`" in message  # inside a code span, backtick escaped


def test_stored_commands_are_revalidated(catalog: Catalog) -> None:
    c = ok(f"/qnn test {CONV} --soc SM8750", catalog)
    assert VERBS.load(c.to_dict(), catalog) == c
    doc = c.to_dict() | {"socs": ["SM8750;id"]}
    with pytest.raises(CommandError):
        VERBS.load(doc, catalog)


def test_help_lists_the_data(catalog: Catalog) -> None:
    text = help_text(catalog)
    assert "`canonicalize_conv`" in text and "SM8650" in text and "write" in text


# ---------------------------------------------------------------- properties (hypothesis)

_alphabet = st.sampled_from(
    [*"/qnt estauo-_.,=;|&$`'\"\\\n\r\t >~#*", "\x00", "ｑ", "\u200b", "\u2028", "é", "𝐪"]
)
_word = st.sampled_from(
    [
        "/qnn",
        "test",
        "retry",
        "failed",
        "cancel",
        "help",
        "auto",
        "canonicalize_conv",
        "convert_linear_to_conv2d",
        "--soc",
        "--backend",
        "--seed",
        "--sha",
        "SM8650",
        "sm8750,SM8850",
        "lpai",
        "gpu",
        "1126",
        FP_CONV2D,
        "TestQNNFloatingPointOperator.test_nope",
        "TestX.test_y",
        "```",
        "> ",
        "\n",
        " ",
    ]
)
_bodies = st.one_of(
    st.text(max_size=300),
    st.text(_alphabet, max_size=200),
    st.lists(st.one_of(_word, st.text(_alphabet, max_size=4)), max_size=30).map(" ".join),
    st.lists(_word, max_size=20).map(lambda ws: "/qnn " + " ".join(ws)),
)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=_bodies)
def test_parser_raises_only_its_own_error_and_yields_only_catalog_names(
    body: str, catalog: Catalog
) -> None:
    try:
        command = parse(body, catalog)
    except CommandError as exc:
        assert str(exc)
        return
    if command is None:
        return
    if command.verb == "test":
        assert set(command.tests) <= catalog.test_ids
        assert set(command.matrices) <= set(catalog.matrices)
        assert all(catalog.socs[s].in_lab for s in command.socs)
        assert command.backend in catalog.backends and command.socs
        assert all(command.backend in catalog.socs[s].backends for s in command.socs)
    # A parsed command always round-trips through its canonical text.
    again = parse(command.canonical(), catalog)
    assert again is not None and again.canonical() == command.canonical()


# ------------------------------------------- block structure as GitHub renders it (GFM)


@pytest.mark.parametrize(
    "body",
    [
        # `\<!--` is literal text, so the fence after it opens and hides the rest as code.
        "\\<!--\n```\n-->\n/qnn test\n```",
        # A lazy continuation line belongs to the quote above it.
        "> please check\n/qnn test",
        # The title of a link reference definition may span lines and is never shown.
        '[docs]: https://example.com "the\n/qnn test\ntitle"',
        # List items (lazy continuation too), headings, tables and HTML blocks.
        "- item\n/qnn test",
        "1. item\n   /qnn test",
        "/qnn test\n---",
        "/qnn test | x\n--- | ---",
        "<div>\n/qnn test\n</div>",
        # Inside a code span, a link or emphasis that spans lines.
        "see `foo\n/qnn test` here",
        "[a\n/qnn test](https://example.com)",
        "*a\n/qnn test*",
        "text <!-- a\n/qnn test\n--> more",
        # A GFM footnote definition: hidden when nothing refers to it (5aad75f ran the lazy
        # line), shown at the end inside a list item when something does.
        "[^1]: note\n/qnn test",
        "see[^1]\n\n[^1]: note\n/qnn test",
        "[^n]:\n    /qnn test",
    ],
)
def test_lines_github_does_not_render_as_paragraph_text_never_run(
    body: str, catalog: Catalog
) -> None:
    assert parse(body, catalog) is None


def test_paragraph_lines_after_other_blocks_still_run(catalog: Catalog) -> None:
    assert ok("> quote\n\n/qnn cancel", catalog).line == 3
    assert ok("first line  \n/qnn cancel", catalog).line == 2  # after a hard break
    assert ok("first line\\\n/qnn cancel", catalog).line == 2  # after a backslash break
    assert ok("a `code` span\n/qnn cancel", catalog).line == 2
    assert ok("<!-- a\nb -->\n/qnn cancel", catalog).line == 3
    assert ok("x\r\n\r\n/qnn cancel\r\n", catalog).line == 3
    assert ok("[^1]: note\n\n/qnn cancel", catalog).line == 3  # after a footnote definition


def test_tabs_separate_words(catalog: Catalog) -> None:
    c = ok(f"/qnn\ttest\t{CONV}\t--soc\tSM8750", catalog)
    assert (c.matrices, c.socs) == ((CONV,), ("SM8750",))
    assert ok("/qnn\tcancel\t", catalog).verb == "cancel"


def test_error_replies_are_capped(catalog: Catalog) -> None:
    body = "\n\n".join("/qnn cancel" for _ in range(3000))
    message = err(body, catalog)
    assert len(message) <= 600 and message.endswith("…")


def test_sim_flag(catalog: Catalog) -> None:
    c = ok(f"/qnn test {CONV} --sim", catalog)
    assert c.runs_on is RunsOn.SIMULATOR and c.canonical().endswith("--seed 1126 --sim")
    assert VERBS.load(c.to_dict(), catalog) == c
    assert ok(f"/qnn test {CONV}", catalog).runs_on is RunsOn.PHONE
    assert "takes no value" in err("/qnn test --sim=yes", catalog)
    assert "did you mean `--sim`" in err("/qnn test --simm", catalog)
    assert "--sim" in help_text(catalog)


def test_compare_base(catalog: Catalog) -> None:
    c = ok(f"/qnn test {CONV} --compare base", catalog)
    assert (c.compare, c.runs_on) == ("base", RunsOn.SIMULATOR)  # the merge base: simulator
    assert c.canonical().endswith("--seed 1126 --sim --compare base")
    assert VERBS.load(c.to_dict(), catalog) == c
    assert ok(f"/qnn test {CONV} --compare=BASE --sim", catalog) == c
    assert "compare" not in ok(f"/qnn test {CONV}", catalog).to_dict()  # stored state as before
    assert "did you mean `base`?" in err(f"/qnn test {CONV} --compare bsae", catalog)
    assert "takes only `base`" in err(f"/qnn test {CONV} --compare main", catalog)
    assert "write `--compare base`" in err(f"/qnn test {CONV} --compare nightly", catalog)
    assert "may be given once" in err(f"/qnn test {CONV} --compare base --compare base", catalog)
    assert "needs a value" in err(f"/qnn test {CONV} --compare", catalog)
    assert "--compare base" in help_text(catalog)


def test_migrate(catalog: Catalog) -> None:
    c = ok("/qnn migrate", catalog)
    assert (c.verb, c.target, c.paths) == ("migrate", "qnn-passes", ())
    c = ok("/qnn migrate --target executorch examples/qualcomm/ src/a_b.py", catalog)
    assert (c.target, c.paths) == ("executorch", ("examples/qualcomm", "src/a_b.py"))
    assert c.canonical() == "/qnn migrate --target executorch examples/qualcomm src/a_b.py"
    assert ok(c.canonical(), catalog) == c
    assert "unknown target" in err("/qnn migrate --target torch", catalog)
    assert "not a path" in err("/qnn migrate ../secrets.py", catalog)
    assert "not a path" in err("/qnn migrate a//b.py", catalog)
    assert "characters other than" in err("/qnn migrate /etc/passwd", catalog)
    assert "characters other than" in err("/qnn migrate a;b", catalog)
    assert "/qnn migrate" in help_text(catalog)


# ------------------------------------- differential: GitHub's own parser (cmark-gfm) as oracle


class _GitHubLineStarts(HTMLParser):
    """Texts that begin a line directly inside a top-level ``<p>`` of GitHub's rendering."""

    VOID = frozenset({"br", "img", "input", "hr"})

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.depth = self.inline = 0
        self.in_p = self.fresh = False
        self.starts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "p" and self.depth == 0:
            self.in_p, self.inline, self.fresh = True, 0, True
        elif self.in_p:
            if tag == "br":
                self.fresh = True
                return
            self.fresh = False
            self.inline += tag not in self.VOID
        self.depth += tag not in self.VOID

    def handle_endtag(self, tag: str) -> None:
        if tag in self.VOID:
            return
        self.depth -= 1
        if self.in_p:
            if tag == "p" and self.depth == 0:
                self.in_p = False
            else:
                self.inline -= 1

    def handle_comment(self, data: str) -> None:
        self.fresh = False  # raw HTML (omitted by cmark-gfm) begins the line

    def handle_data(self, data: str) -> None:
        text = data.lstrip("\n")
        if self.in_p and self.fresh and text:
            if self.inline == 0:
                self.starts.append(text)
            self.fresh = False


def github_command_lines(body: str) -> list[str]:
    """Lines GitHub shows as plain paragraph text starting with ``/qnn``: comments render
    with hard line breaks and footnotes; raw HTML is omitted so the element tree stays
    balanced."""
    html = cmarkgfm.github_flavored_markdown_to_html(
        body,
        options=cmarkgfm.cmark.Options.CMARK_OPT_HARDBREAKS
        | cmarkgfm.cmark.Options.CMARK_OPT_FOOTNOTES,
    )
    parser = _GitHubLineStarts()
    parser.feed(html)
    parser.close()
    return [t for t in parser.starts if re.match(r"/qnn(?:[ \t]|$)", t)]


_ATOMS = [
    *["/qnn cancel", "/qnn", " /qnn help", "> ", ">", "- ", "1. ", "+ ", "* ", "- [ ] "],
    *["```", "~~~", "    ", "\t", "<!--", "-->", "\\<!--", "`", '[a]: /u "', '"', "*", "_"],
    *["[", "](x)", "![", "|", "---", "===", "#", "# ", "<div>", "</div>", "<b>", "</b>"],
    *["<details>", "</details>", "~~", "&amp;", "&#47;", "\\", "[^1]: ", "[^1]", "<", ">"],
    *["http://x ", "<x@y.z>", "text", "  ", "  \n", "\\\n", "\n", "\n", "\n\n", "\r\n", "\r"],
]


def _unsound(find: Callable[[str], Sequence[object]], seed: int, n: int) -> list[str]:
    """Bodies where ``find`` reports more command lines than GitHub shows as paragraph text."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        body = "".join(rng.choice(_ATOMS) for _ in range(rng.randint(1, 20)))
        try:
            found = find(body)
        except CommandError:
            continue
        if len(found) > len(github_command_lines(body)):
            out.append(body)
    return out


def test_the_bot_never_runs_a_line_github_does_not_show_as_paragraph_text() -> None:
    assert _unsound(command_lines, seed=13, n=4000) == []
    # Control: matching lines without the block structure runs lines GitHub shows otherwise.
    naive = _unsound(lambda b: [ln for ln in b.split("\n") if COMMAND_RE.match(ln)], 13, 4000)
    assert len(naive) >= 10

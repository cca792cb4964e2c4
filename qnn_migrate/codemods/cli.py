"""``qnn-migrate rewrite``: the command line, and only that.

Click parses the options into one :class:`~qnn_migrate.codemods.runner.RunOptions` (with the
``[tool.qnn-migrate]`` table of ``codemods/config.py`` filling what the flags leave open), the
batch runner (``codemods/runner.py``) does the work, ``codemods/output.py`` says what to
print, and this module prints it and picks the exit code.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import click

from qnn_migrate.codemods import config as configuration
from qnn_migrate.codemods import output, runner
from qnn_migrate.codemods.cache import default_directory
from qnn_migrate.codemods.deprecations import (
    DEFAULT_FLOW,
    FLOWS,
    default_target,
    lower_to_qnn,
    target_names,
)
from qnn_migrate.codemods.discovery import DEFAULT_EXCLUDES, Selection, discover, excluded
from qnn_migrate.codemods.options import RuleOptions
from qnn_migrate.codemods.output import Mode, RunReport

__all__ = ["DEFAULT_EXCLUDES", "rewrite"]

EXIT_OK = 0
EXIT_CHANGES_NEEDED = 1
EXIT_USAGE = 2
EXIT_FILE_ERRORS = 3

PROGRESS_MIN_FILES = 200  # smaller trees finish before a bar would be useful

EPILOG = """\b
Exit codes (the highest that applies wins: 3 over 1 over 0):
  0  done (with --check: nothing to change)
  1  --check or --diff: some files would change
  2  usage error (bad option, missing path, bad [tool.qnn-migrate])
  3  some files could not be processed (unreadable, not UTF-8 or their
     declared encoding, not valid Python, a directory that cannot be
     read, a symbolic link loop, a FIFO or other file that is not a
     regular file); they were left untouched, every other file was
     processed

\b
Every site reported carries a stable code (QM101 ...): match the code,
not the wording; --explain CODE prints what it means and what to do.
A comment "# noqa: CODE" (or a bare "# noqa") on a site's line
suppresses it; on a call's line it keeps the call as it is.

\b
Configuration: [tool.qnn-migrate] in the nearest pyproject.toml above
the paths (target, exclude, extend-exclude, jobs, respect-gitignore,
force-exclude); flags win over it. Also: python -m qnn_migrate rewrite.
Shell completion: eval "$(_QNN_MIGRATE_COMPLETE=bash_source qnn-migrate)".
"""


def _explain(ctx: click.Context, _: click.Parameter, code: str | None) -> None:
    """``--explain CODE``: print the code's page (``codemods/codes.py``) and stop."""
    if code is None or ctx.resilient_parsing:
        return
    from qnn_migrate.codemods import codes

    try:
        click.echo(codes.page(code))
    except KeyError:
        known = ", ".join(codes.every_code())
        raise click.BadParameter(f"no code {code!r}; the codes are {known}") from None
    ctx.exit(EXIT_OK)


class ConfigurationError(click.ClickException):
    """A bad ``[tool.qnn-migrate]`` table: a usage error, without the usage text."""

    exit_code = EXIT_USAGE


@click.command(
    "rewrite",
    epilog=EPILOG,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.argument("paths", nargs=-1, metavar="PATH...")
@click.option(
    "--explain",
    metavar="CODE",
    expose_value=False,
    is_eager=True,
    callback=_explain,
    help="Print what a code (QM101, ...) means, an example and what to do; then exit "
    "(ruff's `ruff rule`).",
)
@click.option(
    "--stdin-filename",
    metavar="PATH",
    default=None,
    help="Standard input's file name (PATH may then be - or left out): the configuration "
    "is found from it, messages name it, and --force-exclude applies the exclusions to it "
    "(an excluded file is printed back unchanged), as ruff's option does.",
)
@click.option(
    "--diff",
    "show_diff",
    is_flag=True,
    help="Print a unified diff; write nothing; exit 1 if any file would change (as ruff).",
)
@click.option("--check", is_flag=True, help="Write nothing; exit 1 if any file would change.")
@click.option(
    "--output-format",
    type=click.Choice(output.FORMATS),
    default=None,
    help="text (default): files, errors and counts on stderr. json: one record per site "
    "(path, line, column, kind, reason, target) on stdout. github: workflow commands on "
    "stdout, shown as annotations on a pull request. Never changes what is written.",
)
@click.option("--json", "as_json", is_flag=True, help="Shorthand for --output-format json.")
@click.option(
    "-q",
    "--quiet",
    count=True,
    help="Text output: -q the summary only, -qq nothing (the exit code still tells).",
)
@click.option(
    "-v",
    "--verbose",
    count=True,
    help="Text output: every site left for you (path:line:col), not a count per reason.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=0),
    default=None,
    help="Worker processes for the files that need rewriting [default: jobs from the "
    "config, else 0: one per CPU].",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="GLOB",
    help="Skip files and directories whose name, or path relative to the project root, "
    "matches; repeatable. Replaces the config's exclude and the built-in list (.git, "
    "virtualenvs, build, dist, caches, site-packages, ...).",
)
@click.option(
    "--extend-exclude",
    multiple=True,
    metavar="GLOB",
    help="Like --exclude, but added to the config's exclude and the built-in list.",
)
@click.option(
    "--respect-gitignore/--no-respect-gitignore",
    default=None,
    help="Skip what .gitignore files and .git/info/exclude ignore [default: on].",
)
@click.option(
    "--force-exclude/--no-force-exclude",
    default=None,
    help="Apply the exclusions and ignore files to files named on the command line too "
    "(the pre-commit hooks pass it) [default: off].",
)
@click.option(
    "--target",
    type=click.Choice(target_names()),
    default=None,
    help="How the replacement is written [default: target from the config, else "
    + default_target()
    + "]. "
    + " ".join(f"{t.name}: {t.help}" for t in lower_to_qnn().targets),
)
@click.option(
    "--flow",
    type=click.Choice(FLOWS),
    default=DEFAULT_FLOW,
    show_default=True,
    help="qnn-passes target: canonical writes your own torch.export.export(..., strict=True) "
    "wherever the source shows the module's shape and whether inputs and dynamic_shapes are "
    "per method (qnn_export elsewhere); qnn-export always calls qnn_passes.qnn_export.",
)
@click.option(
    "--cache/--no-cache",
    "use_cache",
    default=True,
    help="Reuse the results of files unchanged since an earlier run [default: on].",
)
@click.option(
    "--cache-dir",
    type=click.Path(file_okay=False),
    default=None,
    envvar="QNN_MIGRATE_CACHE_DIR",
    help="Where the cache lives [default: $XDG_CACHE_HOME/qnn-migrate or ~/.cache/qnn-migrate; "
    "env: QNN_MIGRATE_CACHE_DIR].",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Progress on stderr: a bar over the files, and what the rewrite of a long file "
    "(250 kB or more) is doing (default: the bar when stderr is a terminal and the tree is "
    "large; the long files when stderr is a terminal and the output is text).",
)
def rewrite(
    paths: tuple[str, ...],
    show_diff: bool,
    check: bool,
    output_format: str | None,
    as_json: bool,
    quiet: int,
    verbose: int,
    jobs: int | None,
    exclude: tuple[str, ...],
    extend_exclude: tuple[str, ...],
    respect_gitignore: bool | None,
    force_exclude: bool | None,
    target: str | None,
    flow: str,
    use_cache: bool,
    cache_dir: str | None,
    progress: bool | None,
    stdin_filename: str | None,
) -> None:
    """Rewrite to_edge_transform_and_lower_to_qnn calls to to_edge_transform_and_lower.

    PATH is a file or a directory (searched for *.py), or - to rewrite standard input to
    standard output. Each file rewritten (or, with --check, that would be) is named; sites
    that cannot be rewritten safely are left alone and counted per reason (-v lists each as
    path:line:col: reason).
    """
    if stdin_filename is not None:
        if paths not in ((), ("-",)):
            raise click.UsageError(
                "--stdin-filename names standard input: give - (or no PATH), not other paths"
            )
        paths = ("-",)
    elif not paths:
        raise click.UsageError("Missing argument 'PATH...': a file, a directory, or -")
    if as_json and output_format not in (None, "json"):
        raise click.UsageError(f"--json and --output-format {output_format} disagree; use one")
    fmt = "json" if as_json else output_format or "text"
    if show_diff and fmt != "text":
        raise click.UsageError(f"--diff and --output-format {fmt} both print to stdout; use one")
    mode: Mode = "diff" if show_diff else "check" if check else "write"
    if "-" in paths and len(paths) > 1:
        raise click.UsageError("- (standard input) cannot be combined with other paths")
    if paths == ("-",) and mode == "write" and fmt != "text":
        # Both would go to stdout; printing only the report would lose the code, silently.
        raise click.UsageError(
            f"- (standard input) prints the rewritten code on stdout, where --output-format "
            f"{fmt} prints its report; use one: drop --output-format for the code (the report "
            f"goes to stderr as text), add --check for the {fmt} report alone, or pass a file "
            f"path to rewrite it in place and get the {fmt} report"
        )
    missing = [p for p in paths if p != "-" and not os.path.lexists(p)]
    if missing:
        raise click.UsageError(f"no such file or directory: {', '.join(missing)}")
    try:
        found_config = configuration.find(
            configuration.start_directory([stdin_filename] if stdin_filename else paths),
            target_names(),
        )
    except configuration.ConfigError as error:
        raise ConfigurationError(str(error)) from None
    options = runner.RunOptions(
        rule=RuleOptions(
            target=target or found_config.target or default_target(),
            line_length=found_config.line_length,
            flow=flow,
        ),
        mode=mode,
        jobs=jobs if jobs is not None else found_config.jobs or 0,
        cache_dir=(cache_dir or default_directory()) if use_cache else None,
        # What the rewrite of a long file is doing: for people (a terminal, text output),
        # unless asked for (--progress) or against (--no-progress, -q).
        file_progress=tell
        if (
            progress
            if progress is not None
            else sys.stderr.isatty() and fmt == "text" and verbose - quiet >= 0
        )
        else None,
        roots=tuple(paths),
    )
    report = RunReport(mode=mode, target=options.rule.target)
    selection = Selection(
        root=found_config.root,
        exclude=exclude
        or (DEFAULT_EXCLUDES if found_config.exclude is None else found_config.exclude),
        extend_exclude=(*found_config.extend_exclude, *extend_exclude),
        respect_gitignore=_first(respect_gitignore, found_config.respect_gitignore, True),
        force_exclude=_first(force_exclude, found_config.force_exclude, False),
    )
    if paths == ("-",):
        data = sys.stdin.buffer.read()
        if stdin_filename and selection.force_exclude and excluded(stdin_filename, selection):
            if mode == "write" and fmt == "text":
                sys.stdout.buffer.write(data)  # as ruff: an excluded file comes back as it was
            sys.exit(EXIT_OK)
        outcome, new = runner.process_stdin(data, options, stdin_filename or "-")
        runner.add_to(report, outcome)
        if mode == "write" and fmt == "text":
            sys.stdout.buffer.write(data if new is None else new)
        elif mode == "diff":
            sys.stdout.write(outcome.diff)
    else:
        found = discover(paths, selection)
        report.links = found.links
        runner.path_errors(report, found.errors)
        show = (
            progress
            if progress is not None
            else (sys.stderr.isatty() and len(found.files) >= PROGRESS_MIN_FILES)
        )
        with _progress_bar(len(found.files) if show else 0) as tick:
            outcomes = runner.run(found.files, dataclasses.replace(options, progress=tick))
        for outcome in outcomes:
            runner.add_to(report, outcome)
            if outcome.diff:
                click.echo(outcome.diff, nl=False)
    _print(report, fmt, verbose - quiet)
    errors = report.of_kind("error")
    if errors:
        sys.exit(EXIT_FILE_ERRORS)
    if (check or show_diff) and report.changed:
        sys.exit(EXIT_CHANGES_NEEDED)  # as ruff's --diff: a diff to show is a change needed
    sys.exit(EXIT_OK)


@contextmanager
def _progress_bar(length: int) -> Iterator[Callable[[], None] | None]:
    """A bar on stderr over ``length`` files, and the callable that advances it (None, and no
    bar, when ``length`` is 0)."""
    if not length:
        yield None
        return
    with click.progressbar(length=length, label="qnn-migrate rewrite", file=sys.stderr) as bar:
        yield lambda: bar.update(1)


def tell(path: str, what: str) -> None:
    """What the rewrite of a long file is doing, a line on stderr (module level: the worker
    processes are sent it)."""
    click.echo(f"qnn-migrate rewrite: {path}: {what}", err=True)


def _first(*values: bool | None) -> bool:
    return next(v for v in values if v is not None)


def _print(report: RunReport, fmt: str, verbosity: int) -> None:
    if fmt == "json":
        click.echo(output.as_json(report))
    elif fmt == "github":
        for line in output.github(report, os.getcwd()):
            click.echo(line)
    if fmt != "text":
        verbosity = min(verbosity, -1)  # the machine output is on stdout; stderr: the summary
    for line in output.text(report, verbosity):
        click.echo(line, err=True)

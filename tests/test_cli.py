"""`qnn-migrate` itself (qnn_migrate/cli.py) on the core install: help, matrix, missing extras.

Every test runs the command in a fresh interpreter where the extras' top-level modules cannot
be imported (``sys.modules[name] = None`` before ``qnn_migrate.cli`` is imported), which is
what ``pip install -e .`` without ``[bot]`` or ``[passes]`` looks like to the code.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from qnn_migrate.bot import catalog

ROOT = Path(__file__).resolve().parent.parent
BOT_MODULES = ("github", "defusedxml", "markdown_it")  # what the [bot] extra installs
PASSES_MODULES = ("torch", "executorch", "torchao")  # what the [passes] extra installs
RUN_MAIN = "from qnn_migrate.cli import main\nmain(sys.argv[1:], prog_name='qnn-migrate')\n"
# Every command and subcommand, found by walking the click tree (so a new one is covered
# without a change here), with the exit code and output of its `--help`, as JSON.
WALK_HELP = """
import json
import click
from click.testing import CliRunner
from qnn_migrate.cli import main

def walk(group, path):
    ctx = click.Context(group, info_name=" ".join(["qnn-migrate", *path]))
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        yield [*path, name]
        if isinstance(command, click.Group):
            yield from walk(command, [*path, name])

helps = {}
for path in [[], *walk(main, [])]:
    result = CliRunner().invoke(main, [*path, "--help"], prog_name="qnn-migrate")
    helps[" ".join(path)] = [result.exit_code, result.output + repr(result.exception)]
print(json.dumps(helps))
"""
INSTALL_FROM_A_CLONE = {
    "bot": "From a clone of qnn-migrate: pip install -e '.[bot]'",
    "passes": "From a clone of qnn-migrate: pip install -e ./qnn-passes -e '.[passes]'",
}
REPOSITORY = "git+https://github.com/<owner>/qnn-migrate@<sha>"
INSTALL_FROM_GIT = {
    "bot": f'pip install "qnn-migrate[bot] @ {REPOSITORY}"',
    "passes": f'pip install "qnn-passes @ {REPOSITORY}#subdirectory=qnn-passes" '
    f'"qnn-migrate[passes] @ {REPOSITORY}"',
}


def _python(
    code: str,
    *args: str,
    blocked: tuple[str, ...] = BOT_MODULES + PASSES_MODULES,
    stdin: str = "",
) -> subprocess.CompletedProcess[str]:
    """Run ``code`` with ``args`` in a fresh interpreter where ``blocked`` cannot be imported."""
    block = f"import sys\nfor name in {blocked!r}:\n    sys.modules[name] = None\n"
    return subprocess.run(
        [sys.executable, "-c", block + code, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        input=stdin,
        timeout=300,
    )


def _assert_names_the_extra(
    proc: subprocess.CompletedProcess[str], command: str, extra: str
) -> None:
    assert proc.returncode == 1, (proc.stdout, proc.stderr)
    assert f"qnn-migrate {command} needs the [{extra}] extra (" in proc.stderr
    assert INSTALL_FROM_A_CLONE[extra] in proc.stderr
    assert INSTALL_FROM_GIT[extra] in proc.stderr
    assert f"pip install 'qnn-migrate[{extra}]'" not in proc.stderr  # no registry has it
    assert "Traceback" not in proc.stderr


def test_the_extras_modules_are_blocked_in_these_interpreters() -> None:
    """Control: the block works, so what passes below passes without the extras."""
    for name in BOT_MODULES + PASSES_MODULES:
        proc = _python(f"import {name}")
        assert proc.returncode == 1 and "ModuleNotFoundError" in proc.stderr, name


def test_every_command_and_subcommand_has_help_without_the_extras() -> None:
    proc = _python(WALK_HELP)
    assert proc.returncode == 0, proc.stderr
    helps: dict[str, list[object]] = json.loads(proc.stdout)
    # The walk reached every part and went down the nested groups.
    assert {
        "",
        "bot",
        "bot parse",
        "bot report",
        "bot device check",
        "bot nightly publish",
        "matrix list",
        "matrix show",
        "passes order",
        "rewrite",
    } <= set(helps)
    for path, (code, output) in helps.items():
        assert code == 0, (path, output)
        assert f"Usage: {' '.join(['qnn-migrate', path]).strip()} " in str(output), path


def test_matrix_list_show_and_check_need_only_the_core() -> None:
    bundled = catalog.load(catalog.DEFAULT_PATH)
    listed = _python(RUN_MAIN, "matrix", "list")
    assert listed.returncode == 0, listed.stderr
    assert all(f"  {name} " in listed.stdout for name in bundled.matrices)
    name, matrix = next(iter(bundled.matrices.items()))
    shown = _python(RUN_MAIN, "matrix", "show", name)
    assert shown.returncode == 0, shown.stderr
    assert f"tests ({len(matrix.tests)}):" in shown.stdout
    assert all(f"  {test}\n" in shown.stdout for test in matrix.tests)
    checked = _python(RUN_MAIN, "matrix", "check")
    assert checked.returncode == 0 and checked.stdout.startswith("ok: "), checked.stderr


def test_bot_parse_without_the_bot_extra_says_how_to_install_it() -> None:
    proc = _python(RUN_MAIN, "bot", "parse", stdin="/qnn help\n")
    _assert_names_the_extra(proc, "bot", "bot")


@pytest.mark.parametrize(
    ("missing", "argv"),
    [
        (
            "markdown_it",
            ["bot", "on-event", "--event-name", "issue_comment", "--event-path", "{file}"],
        ),
        ("defusedxml", ["bot", "run-shard", "--shard", "{file}"]),
        ("github", ["bot", "check-head", "--pr", "1", "--sha", "f" * 40]),
    ],
)
def test_each_module_of_the_bot_extra_is_named_when_it_is_missing(
    missing: str, argv: list[str], tmp_path: Path
) -> None:
    shard = tmp_path / "shard.json"
    shard.write_text("{}")
    proc = _python(RUN_MAIN, *(a.format(file=shard) for a in argv), blocked=(missing,))
    _assert_names_the_extra(proc, "bot", "bot")
    assert f"({missing} is not installed)" in proc.stderr


def test_passes_order_without_the_passes_extra_says_how_to_install_it() -> None:
    proc = _python(RUN_MAIN, "passes", "order")
    _assert_names_the_extra(proc, "passes", "passes")

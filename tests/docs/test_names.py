"""Every module path, dotted name, identifier and ``qnn-migrate`` command the docs name exists.

On failure each line says which doc line names what, so whoever moves or renames code sees
which sentence to fix (tests/docs/names.py says what counts as a reference).
"""

from __future__ import annotations

from pathlib import Path

from qnn_migrate_tests.docs.names import Reference, click_checker, dead, problem, references

ROOT = Path(__file__).resolve().parents[2]


def test_every_name_the_docs_give_exists() -> None:
    found = dead(ROOT, click_checker())
    assert found == [], "the docs name what does not exist:\n" + "\n".join(found)


def test_the_docs_give_names_of_every_kind() -> None:
    kinds = {ref.kind for ref in references(ROOT)}
    assert kinds == {"path", "dotted", "identifier", "command"}
    assert sum(1 for _ in references(ROOT)) > 300


def test_the_check_finds_dead_names_of_every_kind() -> None:
    """Controls: names 707dc17's docs gave for code that had moved or gone."""
    check = click_checker()
    for ref in (
        Reference("docs/bot.md", 216, "bot/dispatch.py", "path"),
        Reference("docs/runners.md", 369, "bot/junit_wrapper.py", "path"),
        Reference("docs/bot.md", 259, "bot.events.handle_workflow_run_event", "dotted"),
        Reference("docs/bot.md", 762, "EXTERNAL_COMMANDS", "identifier"),
        Reference("docs/bot.md", 1, "qnn_migrate.codemods.engine.no_such_function", "dotted"),
        Reference("README.md", 1, "qnn-migrate rewrite --no-such-option src/", "command"),
        Reference("README.md", 1, "qnn-migrate bot no-such-command", "command"),
    ):
        assert problem(ROOT, ref, check) is not None, ref
    for ref in (  # and what exists passes
        Reference("docs/bot.md", 1, "bot/pr/dispatch.py", "path"),
        Reference("docs/bot.md", 1, "pr/plan.py", "path"),
        Reference("docs/bot.md", 1, "qnn_migrate.codemods.engine.rewrite_code", "dotted"),
        Reference("docs/bot.md", 1, "handle_comment_event", "identifier"),
        Reference(
            "README.md", 1, "qnn-migrate rewrite --check --output-format json src/", "command"
        ),
    ):
        assert problem(ROOT, ref, check) is None, ref

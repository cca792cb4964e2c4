"""The lab's clock double (support.py's ``LabClock``), and the rule it exists for: no test of
the lab waits for a wall-clock budget to pass, and none sets one under 10 s."""

from __future__ import annotations

import ast
import time
from pathlib import Path

from qnn_migrate_tests.bot.lab.support import ABS, ADD, PER_TEST_S, SHARD_S, Lab, LabClock, statuses

from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.model import Status

BOT_TESTS = Path(__file__).resolve().parents[1]
# Keyword arguments and host-config keys that are a time budget of the runner.
BUDGETS = (
    "timeout_s",
    "per_test_timeout_s",
    "startup_timeout_s",
    "lock_wait_s",
    "progress_budget_s",
    "kill_grace_s",
)


def test_the_clock_adds_what_the_doubles_say_passed(tmp_path: Path) -> None:
    clock = LabClock(tmp_path / "lab-clock")
    start = clock()
    assert clock.passed() == 0
    (tmp_path / "lab-clock").write_text("30.0\n1e6\n2")  # the last line is still being written
    now = clock()
    assert 30 + 1e6 <= now - start < 30 + 1e6 + 5
    assert clock.passed() == 30 + 1e6
    # What the fake test script waits for: the runner's clock has read this much.
    assert float((tmp_path / "lab-clock.seen").read_text()) == 30 + 1e6
    clock.sleep(600)
    assert 600 <= clock() - now < 605


def test_the_labs_settings_read_their_budgets_on_it(lab: Lab) -> None:
    settings = lab.settings()
    assert settings.clock is lab.clock and settings.sleep == lab.clock.sleep
    assert settings.env["FAKE_LAB_CLOCK"] == str(lab.clock.path)
    shard = lab.shard("TestQNNFloatingPointOperator.test_qnn_backend_abs")
    budgets = {
        "per_test_timeout_s": shard.per_test_timeout_s,
        "timeout_s": shard.timeout_s,
        "lock_wait_s": settings.host.lock_wait_s,
        "startup_timeout_s": settings.host.startup_timeout_s,
        "kill_grace_s": settings.kill_grace_s,
    }
    assert (shard.per_test_timeout_s, shard.timeout_s) == (PER_TEST_S, SHARD_S)
    assert all(value >= 10 for value in budgets.values()), budgets


def short_budgets(source: str) -> list[str]:
    """Budgets under 10 s that ``source`` sets with a number: ``name=<n>`` (a call's
    keyword) or ``"name = <n>"`` (a host config's line)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.keyword) and node.arg in BUDGETS:
            value = node.value
            if (
                isinstance(value, ast.Constant)
                and isinstance(value.value, int | float)
                and value.value < 10
            ):
                found.append(f"{node.arg}={value.value!r}")
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            for line in node.value.splitlines():
                key, _, number = line.partition("=")
                if key.strip() in BUDGETS:
                    try:
                        if float(number) < 10:
                            found.append(line.strip())
                    except ValueError:
                        pass
    return found


def test_no_bot_test_sets_a_wall_clock_budget_under_10_s() -> None:
    found = {
        str(path.relative_to(BOT_TESTS)): hits
        for path in sorted(BOT_TESTS.rglob("*.py"))
        if path != Path(__file__).resolve() and (hits := short_budgets(path.read_text()))
    }
    # test_model.py builds a shard it never runs (a field's round trip, no clock involved).
    assert found == {"test_model.py": ["timeout_s=5"]}
    # Control: what this stop replaced is found.
    planted = 'run(lab.shard(ABS, per_test_timeout_s=1))\ncfg = "lock_wait_s = 0.5\\n"\n'
    assert sorted(short_budgets(planted)) == ["lock_wait_s = 0.5", "per_test_timeout_s=1"]


def test_a_hang_takes_no_wall_clock_time(lab: Lab) -> None:
    """The control of the whole: a hang that the per-test alarm ends costs the runner's clock
    the budget and the test almost nothing of its own."""
    lab.scenario(tests={ADD: "hang"})
    settings = lab.settings(devices=lab.host().devices[:1])
    started = time.monotonic()
    result = Runner(settings).run(lab.shard(ABS, ADD))
    assert statuses(result) == [Status.PASS, Status.INFRA]
    assert 59 <= lab.clock.passed() <= PER_TEST_S  # the budget passed on the lab's clock
    assert time.monotonic() - started < PER_TEST_S / 2  # and not in real time

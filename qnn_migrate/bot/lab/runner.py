"""Runs one shard on this runner host and returns an honest ``ShardResult``.

The order of work, each step able to end the shard with a reason:

1. merge the host config into the shard; take a job user and check out the commit fresh
   as that user (``hoststate``, ``job_user``: PR code never runs as the supervisor); on a
   long-lived host, restore and check a known state (the sealed trusted paths, a fresh
   Python environment for the job, the adb server restarted); pre-flight
   (``preflight``): the checkout is exactly the pinned commit, with no hooks, the host can
   run the shard, the ``executorch`` imported is the checkout's; a refusal is INFRA for
   every test with ``attempts == 0``;
2. tests the host cannot run read SKIP with the host's reason;
3. the first attempt on the shard's target (``targets``: a phone of the shard's SoC, or
   the x86 simulator), checks included;
4. tests that ended INFRA are run once more where the target says (another phone; the
   same simulator host); FAIL and ERROR are never retried;
5. end every process of the job user; on a long-lived host, check the trusted paths and
   the job's Python environment again (a change makes every result INFRA); what the host
   found is in ``host-check.json``;
6. the results: symlinks out of them removed, ``result.json``, ``attempts.json``,
   ``summary.txt``.

Processes are started only by ``process`` (and ``adb``); nothing here reads
``os.environ``: the environment for child processes is passed in by ``bot/cli/lab.py``.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

from qnn_migrate.bot.lab import hoststate, preflight, results
from qnn_migrate.bot.lab.attempt import Attempt
from qnn_migrate.bot.lab.preflight import RefusedError, sdk_version
from qnn_migrate.bot.lab.settings import RunSettings
from qnn_migrate.bot.lab.targets import PhoneTarget, SimulatorTarget, Target
from qnn_migrate.bot.model import HostShard, RunsOn, Shard, ShardResult, Status, TestResult


def drop_escaping_links(root: Path) -> list[str]:
    """Remove symlinks under ``root`` that point outside it (the upload would follow them)."""
    base = root.resolve()
    dropped: list[str] = []
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in [*dirs, *files]:
            path = Path(folder) / name
            if not path.is_symlink():
                continue
            target = path.resolve()
            if target != base and base not in target.parents:
                path.unlink()
                dropped.append(str(path.relative_to(root)))
    return dropped


class Runner:
    """Runs shards on this host; holds the per-host settings and the attempts log."""

    def __init__(self, settings: RunSettings, log_url: str | None = None) -> None:
        self.settings = settings
        self.log_url = log_url
        self.attempts: list[Attempt] = []

    def run(self, shard: Shard) -> ShardResult:
        """The whole shard: checks, first attempt, at most one retry of INFRA tests."""
        settings = self.settings
        # The test process runs in the checkout: a relative --out would land there.
        self.settings = settings = replace(settings, out_dir=settings.out_dir.resolve())
        shard = settings.host.apply(shard)
        out = settings.out_dir
        out.mkdir(parents=True, exist_ok=True)
        (out / "shard.json").write_text(json.dumps(shard.to_dict(), indent=1) + "\n")

        guard = hoststate.Guard(settings)
        try:
            settings, shard = guard.before(shard)
            self.settings = settings
            preflight.check_checkout(shard, settings)
            preflight.check_host_can_run(shard, settings)
            preflight.check_import(shard, settings, settings.host.python)
        except RefusedError as exc:
            return self._finish(guard.after(self._refused(shard, str(exc))))
        try:
            result = self._run_checked(shard)
        except BaseException:
            guard.after(ShardResult.all_infra(shard, "the runner itself failed"))
            raise
        return self._finish(guard.after(result))

    def _run_checked(self, shard: HostShard) -> ShardResult:
        """The shard on a host that passed its pre-flight."""
        settings = self.settings

        # Tests this host cannot run are not run; they read SKIP with the host's reason.
        skipped = {t: r for t in shard.tests if (r := settings.host.unsupported(t)) is not None}
        runnable = tuple(t for t in shard.tests if t not in skipped)
        skips = [
            TestResult(t, Status.SKIP, None, f"not run on this host: {reason}")
            for t, reason in skipped.items()
        ]
        if not runnable:
            return ShardResult.complete(shard, skips, attempts=0)
        inner = replace(shard, tests=runnable) if skipped else shard
        target: Target = (
            SimulatorTarget(settings, self.attempts)
            if inner.runs_on is RunsOn.SIMULATOR
            else PhoneTarget(settings, self.attempts)
        )
        result = self._on(target, inner)
        if skipped:
            result = replace(
                result,
                shard=shard,
                results=ShardResult.complete(shard, [*result.results, *skips]).results,
            )
        return result

    def _refused(self, shard: Shard, reason: str) -> ShardResult:
        return ShardResult.all_infra(
            shard,
            reason if reason.startswith("refused") else f"refused: {reason}",
            attempts=0,
            sdk_version=sdk_version(self.settings.host.qnn_sdk_root),
        )

    def _on(self, target: Target, shard: HostShard) -> ShardResult:
        """The first attempt on ``target`` and, if it left INFRA tests, one retry."""
        refusal = target.refusal(shard)
        if refusal is not None:
            return ShardResult.all_infra(shard, refusal, attempts=0)
        out = self.settings.out_dir
        first = target.attempt(shard, out / "attempt-1")
        retry_ids = tuple(r.test_id for r in first.results if r.status is Status.INFRA)
        if not retry_ids:
            return first
        retry = target.retry(shard, first, retry_ids)
        if retry.shard is None:
            if retry.note:
                self.settings.log(f"[{shard.id}] {retry.note}")
            return first
        self.settings.log(
            f"[{shard.id}] retrying {len(retry_ids)} INFRA test(s) once{retry.note or ''}"
        )
        second = target.attempt(retry.shard, out / "attempt-2")
        return results.merge_retry(first, second, retry_ids)

    def _finish(self, result: ShardResult) -> ShardResult:
        """Add the log link, write result.json, attempts.json and summary.txt."""
        if self.log_url:
            result = replace(result, log_url=self.log_url)
        if result.sdk_version is None:
            result = replace(result, sdk_version=sdk_version(self.settings.host.qnn_sdk_root))
        out = self.settings.out_dir
        for link in drop_escaping_links(out):
            self.settings.log(f"[{result.shard.id}] removed {link}: a symlink out of the results")
        (out / "result.json").write_text(json.dumps(result.to_dict(), indent=1) + "\n")
        (out / "attempts.json").write_text(
            json.dumps([vars(a) | {"tests": list(a.tests)} for a in self.attempts], indent=1) + "\n"
        )
        summary = results.ran_line(result)
        if result.infra_reason:
            summary += f"\nINFRA: {result.infra_reason}"
        (out / "summary.txt").write_text(summary + "\n")
        return result

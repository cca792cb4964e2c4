"""Where a shard's tests run: one interface, two targets (a phone, the x86 simulator).

A target knows how to check itself, run one attempt and where a retry may go; the runner
owns the order (first attempt, at most one retry of the INFRA tests, merge) and the log
lines, and the INFRA bookkeeping lives once, in ``_TargetBase``: a failed check is INFRA
for every test with the check's reason, and an attempt's INFRA results give the shard its
``infra_reason`` and an entry in the attempts log.

- ``PhoneTarget``: pick a phone of the shard's SoC (quarantined ones last), lock it (one
  job per phone), health-check it (failing quarantines it), reset it to a known state
  (``phone_reset``: the shell user's processes, third-party packages and /data/local/tmp
  entries the host config does not keep are removed, before and after the run: PR code
  reaches the phone; what cannot be undone before the run is INFRA), run, keep its
  logcat, remove the harness's workspace; INFRA results
  quarantine the phone until a health check passes; a retry goes to another phone.
- ``SimulatorTarget``: check the host (SDK, x86 ``qnn_executor_runner``, free disk) once;
  a retry runs on the same host.
"""

from __future__ import annotations

import functools
import json
import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Protocol

from qnn_migrate.bot.lab import health, locks, process, quarantine, results
from qnn_migrate.bot.lab.adb import Adb, AdbConfigError
from qnn_migrate.bot.lab.attempt import Attempt, run_tests
from qnn_migrate.bot.lab.phone_reset import DEVICE_TMP, Reset, reset_phone
from qnn_migrate.bot.lab.preflight import sdk_version
from qnn_migrate.bot.lab.settings import RunSettings, child_env
from qnn_migrate.bot.model import HostShard, ShardResult, Status

DEVICE_WORKSPACE = f"{DEVICE_TMP}/qnn_executorch_test"


@dataclass(frozen=True)
class Retry:
    """Where the INFRA tests of a first attempt run again (``shard``), or why nowhere.

    ``note`` finishes the runner's log line ("retrying 2 INFRA test(s) once" + note), or
    is the whole reason when there is no retry (None: nothing worth a log line)."""

    shard: HostShard | None
    note: str | None = None


class Target(Protocol):
    """A place where a shard's tests run."""

    def refusal(self, shard: HostShard) -> str | None:
        """Why this target cannot take the shard at all (INFRA, attempts 0), or None."""

    def attempt(self, shard: HostShard, attempt_dir: Path) -> ShardResult:
        """Run the shard's tests once, checks included."""

    def retry(self, shard: HostShard, first: ShardResult, ids: tuple[str, ...]) -> Retry:
        """Where the INFRA tests ``ids`` of ``first`` run once more."""


class _TargetBase:
    """The INFRA bookkeeping both targets share."""

    check_name = "health check"

    def __init__(self, settings: RunSettings, attempts: list[Attempt]) -> None:
        self.settings = settings
        self.attempts = attempts

    def _check_failed(
        self, shard: HostShard, device: str | None, verdict: health.Health
    ) -> ShardResult:
        self.settings.log(f"[{shard.id}] {self.check_name} failed: {verdict.reason}")
        self.attempts.append(
            Attempt(device, shard.tests, len(shard.tests), verdict.reason, verdict.to_dict())
        )
        return ShardResult.all_infra(
            shard,
            f"{self.check_name} failed: {verdict.reason}",
            device=device,
            device_fingerprint=verdict.fingerprint if device else None,
            sdk_version=sdk_version(self.settings.host.qnn_sdk_root),
        )

    def _settle(
        self, shard: HostShard, result: ShardResult, device: str | None, verdict: health.Health
    ) -> tuple[ShardResult, list[str]]:
        """Give the result its INFRA reason and log the attempt; the INFRA messages."""
        infra = [r.message for r in result.results if r.status is Status.INFRA]
        if infra:
            result = replace(result, infra_reason=infra[0])
        self.attempts.append(
            Attempt(device, shard.tests, len(infra), infra[0] if infra else None, verdict.to_dict())
        )
        return result, infra

    @staticmethod
    def _write_health(attempt_dir: Path, verdict: health.Health) -> None:
        attempt_dir.mkdir(parents=True, exist_ok=True)
        (attempt_dir / "health.json").write_text(json.dumps(verdict.to_dict(), indent=1) + "\n")


def candidates(shard: HostShard) -> list[str]:
    """The phones a shard may use, in order: ``--device`` first, then its pool."""
    return list(dict.fromkeys([*([shard.device] if shard.device else []), *shard.device_pool]))


class PhoneTarget(_TargetBase):
    """A phone of this host, locked for the attempt."""

    def refusal(self, shard: HostShard) -> str | None:
        if candidates(shard):
            return None
        return (
            f"refused: no phone of SoC {shard.soc} is configured on this host; list it under "
            "[[devices]] in the host config, or pass --device"
        )

    def attempt(self, shard: HostShard, attempt_dir: Path) -> ShardResult:
        """Lock a phone among the shard's candidates, check it, run, clean up."""
        state_dir = self.settings.state_dir
        ordered = quarantine.order(state_dir, candidates(shard))
        if not ordered:
            reason = (
                f"no other phone of SoC {shard.soc} on this host to run on; add one under "
                "[[devices]] in the host config"
            )
            return ShardResult.all_infra(shard, reason)
        try:
            with locks.first_free(
                state_dir,
                ordered,
                self.settings.host.lock_wait_s,
                clock=self.settings.clock,
                sleep=self.settings.sleep,
            ) as serial:
                return self._on_device(shard, serial, attempt_dir)
        except locks.DeviceBusy as exc:
            return ShardResult.all_infra(shard, str(exc))

    def retry(self, shard: HostShard, first: ShardResult, ids: tuple[str, ...]) -> Retry:
        others = tuple(c for c in candidates(shard) if c != first.device)
        if not others:
            return Retry(
                None, f"INFRA on {first.device}; no other {shard.soc} phone here to retry on"
            )
        return Retry(
            replace(shard, tests=ids, device=None, device_pool=others),
            f" on another {shard.soc} phone",
        )

    def _on_device(self, shard: HostShard, serial: str, attempt_dir: Path) -> ShardResult:
        state_dir = self.settings.state_dir
        try:
            adb = Adb(
                serial,
                host=shard.adb_host,
                adb=self.settings.host.adb,
                env=child_env(self.settings),
                timeout_s=60.0,
            )
        except AdbConfigError as exc:
            return ShardResult.all_infra(shard, str(exc), device=serial)
        was = quarantine.get(state_dir, serial)
        platforms = {**health.load_platforms(), **self.settings.host.board_platforms}
        verdict = health.check(
            adb,
            serial=serial,
            expected_soc=shard.soc,
            min_free_mb=self.settings.host.min_free_mb,
            platforms=platforms,
        )
        self._write_health(attempt_dir, verdict)
        if not verdict.ok:
            quarantine.put(state_dir, serial, verdict.reason, shard.id)
            return self._check_failed(shard, serial, verdict)
        if was is not None:
            quarantine.lift(state_dir, serial)
            self.settings.log(f"[{shard.id}] {serial} passed its health check; back in rotation")
        host = self.settings.host
        keep = functools.partial(
            reset_phone,
            adb,
            keep_packages=host.keep_packages,
            keep_tmp=host.keep_tmp,
            keep_processes=host.keep_processes,
        )
        reset: dict[str, Reset] = {"before": keep()}
        if reset["before"].left:
            # What a job left could not be undone: nothing run now can be trusted to it.
            self._write_reset(attempt_dir, reset, shard, serial)
            reason = (
                f"device {serial} is not in its known state, so the shard did not run on it: "
                + "; ".join(reset["before"].left)
                + "; reboot the phone (or reflash it), then run `qnn-migrate bot device check`"
            )
            quarantine.put(state_dir, serial, reason, shard.id)
            failed = health.Health(serial, False, reason, verdict.soc, verdict.fingerprint)
            return self._check_failed(shard, serial, failed)
        adb.clear_logcat()
        result, end = run_tests(
            shard, self.settings, attempt_dir, serial=serial, fingerprint=verdict.fingerprint
        )
        logcat = adb.logcat(host.logcat_lines)
        (attempt_dir / "logcat.txt").write_text(
            logcat.out if logcat.ok else f"logcat failed: {logcat.reason()}\n"
        )
        reset["after"] = keep(reboot_phone=host.phone_reset == "reboot")
        cleaned = adb.shell(f"rm -rf {DEVICE_WORKSPACE}")
        if not cleaned.ok:
            reset["after"].left.append(f"could not clean {DEVICE_WORKSPACE}: {cleaned.reason()}")
        self._write_reset(attempt_dir, reset, shard, serial)
        if reset["after"].left:
            reason = "the reset after the run left: " + "; ".join(reset["after"].left)
            quarantine.put(state_dir, serial, reason, shard.id)
            self.settings.log(f"[{shard.id}] {serial} quarantined: {reason}")
        result, infra = self._settle(shard, result, serial, verdict)
        # A test process that never started, or one that rejected its command line before
        # any test touched the phone, is this host's or the plan's problem, not the phone's.
        rejected = all(results.SETUP_EXCEPTION in m for m in infra)
        if infra and end is not results.RunEnd.NOT_STARTED and not rejected:
            reason = f"{len(infra)} INFRA result(s) in shard {shard.id}: {infra[0]}"
            quarantine.put(state_dir, serial, reason, shard.id)
            self.settings.log(f"[{shard.id}] {serial} quarantined: {reason}")
        return result

    def _write_reset(
        self, attempt_dir: Path, reset: dict[str, Reset], shard: HostShard, serial: str
    ) -> None:
        attempt_dir.mkdir(parents=True, exist_ok=True)
        doc = {when: r.to_dict() for when, r in reset.items()}
        (attempt_dir / "phone-reset.json").write_text(json.dumps(doc, indent=1) + "\n")
        for when, r in reset.items():
            if r.notes or r.left:
                self.settings.log(
                    f"[{shard.id}] {serial} reset {when} the run: " + "; ".join(r.notes + r.left)
                )


class SimulatorTarget(_TargetBase):
    """This x86-64 host's HTP simulator; checked once, retried on the same host."""

    check_name = "simulator host check"

    def __init__(self, settings: RunSettings, attempts: list[Attempt]) -> None:
        super().__init__(settings, attempts)
        self.verdict: health.Health | None = None

    def refusal(self, shard: HostShard) -> str | None:
        return None

    def attempt(self, shard: HostShard, attempt_dir: Path) -> ShardResult:
        if self.verdict is None:
            self.verdict = self._health(shard)
            self._write_health(attempt_dir, self.verdict)
            if not self.verdict.ok:
                return self._check_failed(shard, None, self.verdict)
        result, _ = run_tests(shard, self.settings, attempt_dir, serial=None, fingerprint=None)
        return self._settle(shard, result, None, self.verdict)[0]

    def retry(self, shard: HostShard, first: ShardResult, ids: tuple[str, ...]) -> Retry:
        if self.verdict is None or not self.verdict.ok:
            return Retry(None)
        return Retry(replace(shard, tests=ids), "")

    def _health(self, shard: HostShard) -> health.Health:
        host = self.settings.host
        env = child_env(self.settings)
        runner = health.simulator_runner_path(
            host.qnn_executor_runner, shard.build_folder, shard.executorch_dir or "."
        )

        def probe(argv: list[str]) -> tuple[int | None, str]:
            got = process.run_captured(argv, env=env, timeout_s=30, limit=4096)
            if got.code is None:
                return None, got.stderr
            return got.code, (got.stderr + got.stdout)[:4096]

        def free_mb(path: str) -> int | None:
            try:
                return shutil.disk_usage(path).free // (1024 * 1024)
            except OSError:
                return None

        return health.check_simulator(
            qnn_sdk_root=host.qnn_sdk_root,
            runner=runner,
            work_dir=str(self.settings.out_dir),
            min_free_mb=host.min_free_mb,
            is_file=os.path.isfile,
            is_executable=lambda p: os.access(p, os.X_OK),
            probe=probe,
            free_mb=free_mb,
        )

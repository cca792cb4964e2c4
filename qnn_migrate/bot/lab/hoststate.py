"""A known host state around every job on a long-lived runner host.

An ephemeral host (a fresh VM or container per job) starts clean by construction. A
long-lived one keeps what a job's PR code leaves behind, so the runner restores and checks
a known state itself, around every job:

- before: the trusted paths match the sealed manifest (``integrity``), else the job is
  refused (INFRA for every test, attempts 0) with what changed; the local adb server is
  restarted (a job could have replaced it); a fresh Python environment is built from
  hash-pinned requirements (``jobenv``), never the host's shared venv;
- after: what the job changed in its environment is reported and the environment is
  removed; the trusted paths are checked again, and if anything changed, every result
  of the job is INFRA (PR code that could change them could also have made its own
  results up: never PASS); the adb server is restarted again.

Processes the job left are killed by ``process`` when each run ends. What this cannot
restore is in docs/runners.md ("A clean host per job").
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path

from qnn_migrate.bot.lab import integrity, jobenv, process
from qnn_migrate.bot.lab.host_config import LONG_LIVED
from qnn_migrate.bot.lab.preflight import RefusedError
from qnn_migrate.bot.lab.settings import RunSettings, child_env
from qnn_migrate.bot.model import ShardResult

LOCAL_ADB_HOSTS = (None, "localhost", "127.0.0.1", "::1")
REPORT = "host-check.json"


@dataclass
class HostReport:
    """What the host checks found around one job (written to ``host-check.json``)."""

    lifetime: str
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    job_env: list[str] = field(default_factory=list)
    adb: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "lifetime": self.lifetime,
            "trusted_paths_before": self.before,
            "trusted_paths_after": self.after,
            "job_environment_changes": self.job_env,
            "adb_server": self.adb,
        }


class Guard:
    """Restores and checks the known state around one job (a no-op on ephemeral hosts)."""

    def __init__(self, settings: RunSettings) -> None:
        self.settings = settings
        self.host = settings.host
        self.report = HostReport(self.host.lifetime)
        self.env: jobenv.BuiltEnv | None = None
        self.prepared = False

    @property
    def long_lived(self) -> bool:
        return self.host.lifetime == LONG_LIVED

    def before(self) -> RunSettings:
        """Check and prepare the host; the settings the job runs with (its own Python).

        Raises ``RefusedError`` when the host is not in a state to trust."""
        if not self.long_lived:
            return self.settings
        missing = [
            name
            for name, value in (
                ("[job_env]", self.host.job_env),
                ("integrity_manifest", self.host.integrity_manifest),
            )
            if not value
        ]
        if missing:
            raise RefusedError(
                'refused: this host config says lifetime = "long-lived" (the default) but '
                f"sets no {' and no '.join(missing)}: a long-lived host must build a fresh "
                "Python environment per job and check its trusted paths against a sealed "
                'manifest (docs/runners.md, "A clean host per job"); set them, or run '
                'ephemeral runners and set lifetime = "ephemeral"'
            )
        assert self.host.integrity_manifest is not None and self.host.job_env is not None
        self.report.before = integrity.verify(Path(self.host.integrity_manifest))
        if self.report.before:
            self._write()
            raise RefusedError(
                "refused: this host is not in its sealed state, so nothing it runs can be "
                f"trusted: {integrity.summary(self.report.before)}; a job may have changed "
                "it: reprovision the host, or review the change and seal again "
                "(qnn-migrate bot host seal)"
            )
        self._restart_adb("before the job")
        try:
            self.env = jobenv.build(self.host.job_env, child_env(self.settings))
        except jobenv.JobEnvError as exc:
            raise RefusedError(f"refused: {exc}") from exc
        self.prepared = True
        self.settings.log(f"[host] a fresh Python environment for this job: {self.env.python}")
        return replace(self.settings, host=replace(self.host, python=self.env.python))

    def after(self, result: ShardResult) -> ShardResult:
        """Report what the job left, remove its environment, check the trusted paths."""
        if not self.prepared:
            return result
        if self.env is not None:
            self.report.job_env = self.env.changes()
            self.env.remove()
            if self.report.job_env:
                self.settings.log(
                    "[host] the job changed its Python environment (removed with it): "
                    + integrity.summary(self.report.job_env)
                )
        self._restart_adb("after the job")
        if self.host.integrity_manifest:
            self.report.after = integrity.verify(Path(self.host.integrity_manifest))
        self._write()
        if not self.report.after:
            return result
        reason = (
            "the host changed during this job, so its results cannot be trusted: "
            f"{integrity.summary(self.report.after)}; the host refuses jobs until it is "
            "reprovisioned (or the change reviewed and sealed again)"
        )
        self.settings.log(f"[host] {reason}")
        return ShardResult.all_infra(
            result.shard,
            reason,
            attempts=result.attempts,
            device=result.device,
            device_fingerprint=result.device_fingerprint,
            sdk_version=result.sdk_version,
            command=result.command,
        )

    def _restart_adb(self, when: str) -> None:
        if self.host.simulator or self.host.adb_host not in LOCAL_ADB_HOSTS:
            return
        env = child_env(self.settings)
        for verb in ("kill-server", "start-server"):
            got = process.run_captured([self.host.adb, verb], env=env, timeout_s=60)
            if got.code != 0:
                note = f"adb {verb} {when} failed: {(got.stderr or got.stdout).strip()[:200]}"
                self.report.adb.append(note)
                self.settings.log(f"[host] {note}")
                return
        self.report.adb.append(f"restarted {when}")

    def _write(self) -> None:
        out = self.settings.out_dir
        out.mkdir(parents=True, exist_ok=True)
        (out / REPORT).write_text(json.dumps(self.report.to_dict(), indent=1) + "\n")

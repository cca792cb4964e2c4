"""A known host state around every job, and the job's own user (docs/runners.md).

Two facts about a host decide what happens around a job, each its own host config key:

- ``isolation``: ``"job-user"`` (the default) runs PR code as a job user of its own
  (``job_user``), never as the supervisor; ``"none"`` runs it as the supervisor's user,
  as before (a developer's machine, the project's own tests of runs; refused by nothing
  but failed by ``bot doctor --host-config``);
- ``lifetime``: ``"ephemeral"`` (a fresh VM or container per job, verified with a job
  user: each job user runs one job on the host, and a host where all have is a reused
  one and refuses the job) or ``"long-lived"`` (the runner restores and checks a known
  state itself).

With a job user, before the job: the user is locked for the job; every process of its uid
is killed (what an earlier job left, a killed supervisor's job included) and the job is
refused while any is left; what it left in the shared temporary folders is removed; its
folder is emptied and made again; the commit is checked out fresh, as the job user, into
that folder; the results folder, the state folder, the host config and the sealed manifest
must not be the job user's to change. After the job: every process of the uid is killed
again, the folder emptied, the temporary folders swept, and the user unlocked.

On a long-lived host, before: the trusted paths match the sealed manifest (``integrity``,
the roots being the host config's trusted paths and the host config itself), else the job
is refused; the local adb server is restarted; a fresh Python environment is built from
hash-pinned requirements (``jobenv``), the supervisor's and read-only to the job user.
After: a change in that environment, or in the trusted paths, makes every result of the
job INFRA (PR code that could make it could also have made its own results up: never
PASS), and the host refuses jobs until it is reprovisioned or sealed again.

What a host cannot restore is in docs/runners.md.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from qnn_migrate.bot.lab import integrity, job_user, jobenv, process
from qnn_migrate.bot.lab.host_config import EPHEMERAL, LONG_LIVED, NO_ISOLATION
from qnn_migrate.bot.lab.preflight import RefusedError
from qnn_migrate.bot.lab.settings import RunSettings, child_env
from qnn_migrate.bot.model import HostShard, ShardResult

LOCAL_ADB_HOSTS = (None, "localhost", "127.0.0.1", "::1")
REPORT = "host-check.json"
# The job user's folders: what ``job_user.JobUser`` names, and one per attempt.
JOB_FOLDERS = (
    "home",
    "tmp",
    "out/attempt-1/artifacts",
    "out/attempt-2/artifacts",
)


@dataclass
class HostReport:
    """What the host checks found around one job (written to ``host-check.json``)."""

    lifetime: str
    isolation: str
    job_user: str | None = None
    before: list[str] = field(default_factory=list)
    after: list[str] = field(default_factory=list)
    job_env: list[str] = field(default_factory=list)
    adb: list[str] = field(default_factory=list)
    processes_before: list[str] = field(default_factory=list)
    processes_after: list[str] = field(default_factory=list)
    swept: list[str] = field(default_factory=list)
    writable: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, object]:
        return {
            "lifetime": self.lifetime,
            "isolation": self.isolation,
            "job_user": self.job_user,
            "trusted_paths_before": self.before,
            "trusted_paths_after": self.after,
            "job_environment_changes": self.job_env,
            "adb_server": self.adb,
            "job_user_processes_before": self.processes_before,
            "job_user_processes_after": self.processes_after,
            "job_user_files_swept": self.swept,
            "writable_by_the_job_user": self.writable,
        }


class Guard:
    """Restores and checks the known state around one job; holds the job user's lock."""

    def __init__(self, settings: RunSettings) -> None:
        self.settings = settings
        self.host = settings.host
        self.report = HostReport(self.host.lifetime, self.host.isolation)
        self.env: jobenv.BuiltEnv | None = None
        self.user: job_user.JobUser | None = None
        self.prepared = False
        self._stack = contextlib.ExitStack()

    @property
    def long_lived(self) -> bool:
        return self.host.lifetime == LONG_LIVED

    @property
    def isolated(self) -> bool:
        return self.host.isolation != NO_ISOLATION

    def before(self, shard: HostShard) -> tuple[RunSettings, HostShard]:
        """Check and prepare the host; the settings and shard the job runs with.

        Raises ``RefusedError`` when the host is not in a state to trust."""
        if self.long_lived:
            self._check_long_lived_config()
        if self.isolated:
            settings, shard = self._job_user_before(shard)
        else:
            settings = self.settings
        if not self.long_lived:
            self.prepared = self.isolated
            return settings, shard
        assert self.host.integrity_manifest is not None and self.host.job_env is not None
        self.report.before = integrity.verify(Path(self.host.integrity_manifest), self._roots())
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
        settings = replace(settings, host=replace(settings.host, python=self.env.python))
        return settings, shard

    def _check_long_lived_config(self) -> None:
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

    def _roots(self) -> list[str]:
        return self.host.trusted_roots(self.settings.host_config_path)

    # -------------------------------------------------------------------- the job user

    def _job_user_before(self, shard: HostShard) -> tuple[RunSettings, HostShard]:
        spec = self.host.job_users
        if spec is None:
            raise RefusedError(
                "refused: this host config names no [job_users], so the PR's code would run "
                "as the supervisor that checks it and writes its results; create job users "
                'and list them (docs/runners.md, "Two users"), or, on a developer\'s machine '
                'only, set isolation = "none"'
            )
        path_env = self.settings.env.get("PATH", os.defpath)
        try:
            staged = job_user.stage(self.settings.state_dir)
            user = self._stack.enter_context(
                job_user.acquire(
                    spec,
                    self.settings.state_dir,
                    self.host.lock_wait_s,
                    ephemeral=self.host.lifetime == EPHEMERAL,
                    resolve_one=lambda n: job_user.resolve(
                        spec, n, path_env=path_env, staged=staged
                    ),
                )
            )
        except job_user.JobUserError as exc:
            self._write()
            raise RefusedError(_refused(exc)) from exc
        self.user = user
        self.report.job_user = user.name
        if self.host.lifetime == EPHEMERAL:
            job_user.mark_used(
                self.settings.state_dir,
                user.name,
                f"shard {shard.id} at {shard.sha[:12]}, {time.strftime('%Y-%m-%dT%H:%M:%S')}",
            )
        self.report.writable = self._writable(user)
        if self.report.writable:
            self._write()
            raise RefusedError(
                f"refused: the job user {user.name} could change what the supervisor trusts: "
                + "; ".join(self.report.writable)
                + "; make those root's (or the supervisor's), mode 0644/0755"
            )
        found, left = user.end_all()
        self.report.processes_before = found
        if found:
            self.settings.log(
                f"[host] killed {len(found)} process(es) of {user.name} left by an earlier "
                "job: " + ", ".join(found[:8])
            )
        if left:
            self._write()
            raise RefusedError(
                f"refused: processes of the job user {user.name} are still running after "
                f"being killed ({', '.join(left[:8])}); the next job waits until none is "
                "left: reboot the host if they stay"
            )
        self.report.swept = user.sweep()
        try:
            user.prepare(JOB_FOLDERS)
            source = shard.executorch_dir or self.host.executorch_dir
            if not source:
                raise job_user.JobUserError(
                    "refused: nowhere to check the commit out from: pass --repository (the "
                    "repository's URL) or set executorch_dir in the host config"
                )
            git_env = {
                **child_env(self.settings),
                "HOME": str(user.home),
                "TMPDIR": str(user.tmp),
            }
            job_user.fresh_checkout(user, source, shard.sha, git_env)
        except job_user.JobUserError as exc:
            self._write()
            raise RefusedError(_refused(exc)) from exc
        self.settings.log(f"[host] PR code runs as {user.name}; checkout {user.checkout}")
        checkout = str(user.checkout)
        settings = replace(
            self.settings,
            job_user=user,
            host=replace(self.host, executorch_dir=checkout),
        )
        return settings, replace(shard, executorch_dir=checkout)

    def _writable(self, user: job_user.JobUser) -> list[str]:
        """What the supervisor trusts that the job user could change."""
        found: list[str] = []
        things = [
            ("the results folder", self.settings.out_dir),
            ("the state folder", self.settings.state_dir),
        ]
        if self.settings.host_config_path:
            things.append(("the host config", Path(self.settings.host_config_path)))
        if self.host.integrity_manifest:
            things.append(("the sealed manifest", Path(self.host.integrity_manifest)))
        for what, path in things:
            if not os.path.lexists(path):
                continue
            how = integrity.replaceable_by(path, user.uid, user.groups)
            if how:
                found.append(f"{what} {path}: {how}")
        return found

    # ------------------------------------------------------------------------- after

    def after(self, result: ShardResult) -> ShardResult:
        """End the job's processes, report what it left, check the trusted paths."""
        try:
            return self._after(result)
        finally:
            self._stack.close()  # the job user's lock

    def _after(self, result: ShardResult) -> ShardResult:
        if not self.prepared:
            return result
        findings: list[str] = []
        if self.user is not None:
            found, left = self.user.end_all()
            self.report.processes_after = found + [f"still running: {p}" for p in left]
            problem = self.user.wipe()
            if problem:
                self.report.swept.append(f"could not empty {self.user.folder}: {problem}")
            self.report.swept += self.user.sweep()
        if self.env is not None:
            self.report.job_env = self.env.changes()
            self.env.remove()
            if self.report.job_env:
                findings.append(
                    "the job changed its Python environment after it was built: "
                    + integrity.summary(self.report.job_env)
                )
        if self.long_lived:
            self._restart_adb("after the job")
            if self.host.integrity_manifest:
                self.report.after = integrity.verify(
                    Path(self.host.integrity_manifest), self._roots()
                )
            if self.report.after:
                findings.append(
                    "the host changed during this job: "
                    + integrity.summary(self.report.after)
                    + "; the host refuses jobs until it is reprovisioned (or the change "
                    "reviewed and sealed again)"
                )
        self._write()
        if not findings:
            return result
        reason = "; ".join(findings) + ", so the results of this job cannot be trusted"
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


def _refused(exc: Exception) -> str:
    text = str(exc)
    return text if text.startswith("refused") else f"refused: {text}"

"""A runner host's own facts (checkout, Python, adb, phones), merged into shards at run time.

The planner runs on GitHub's machines and cannot know serials or paths; each device host
keeps a small TOML file (``qnn-migrate bot run-shard --host-config FILE``)::

    executorch_dir = "/srv/qnn/executorch"     # the checkout the workflow updates
    python = "/srv/qnn/venv/bin/python"        # ExecuTorch's Python (has torch, executorch)
    adb = "/opt/android/platform-tools/adb"
    adb_host = "localhost"                     # adb -H; the adb server with the phones
    build_folder = "/srv/qnn/executorch/build-android"
    qnn_sdk_root = "/opt/qcom/aistack/qairt/2.37.0.250724"
    state_dir = "/var/lib/qnn-runner"          # locks/ and quarantine/
    min_free_mb = 2048
    lock_wait_s = 900
    logcat_lines = 400
    use_wrapper = true                         # false: run the script with -v and parse text
    fork_per_test = true                       # each test in its own child (the wrapper's)

    [env]                                      # extra environment for the test process
    LD_LIBRARY_PATH = "/opt/qcom/aistack/qairt/2.37.0.250724/lib/x86_64-linux-clang"

    [[devices]]
    serial = "R5CX21ABCDE"
    soc = "SM8650"

    [board_platforms]                          # ro.board.platform -> SoC, beyond the bundled table
    pineapple = "SM8650"

A host with no phones runs simulator shards on the x86-64 HTP simulator::

    kind = "x86-simulator"
    qnn_executor_runner = "/srv/qnn/build-x86/examples/qualcomm/executor_runner/qnn_executor_runner"
    backends = ["htp"]                         # what this host can run (default for the kind)
    [unsupported_tests]                        # id or class -> why this host cannot run it
    "TestQNNFloatingPointUtils.test_qnn_backend_dump_intermediate_outputs" = "no etdump here"

Who PR code runs as (docs/runners.md, "Two users")::

    isolation = "job-user"                     # the default; "none": the supervisor's user
    [job_users]
    names = ["qnn-job-1", "qnn-job-2"]         # one or more per runner on this host
    home = "/var/lib/qnn-jobs"                 # <home>/<name>/ owned by each, mode 0700
    switch = "setpriv"                         # or "sudo"

How the host stays clean between jobs (docs/runners.md, "A clean host per job")::

    lifetime = "long-lived"                    # the default; or "ephemeral" (a fresh VM per job)
    integrity_manifest = "/var/lib/qnn-seal/manifest.json"
    trusted_paths = ["/srv/actions-runner/bin", "/srv/qnn/wheels"]
    keep_packages = []                         # what a phone keeps; the rest is removed
    keep_tmp = []                              # entries of /data/local/tmp a phone keeps
    keep_processes = []                        # shell-user processes a phone keeps (by name)
    phone_reset = "kill"                       # or "reboot": also reboot after every run
    [job_env]                                  # a fresh venv per job (long-lived hosts)
    requirements = "/etc/qnn-runner/requirements.txt"   # hash-pinned
    find_links = "/srv/qnn/wheels"
    base_python = "/usr/bin/python3.11"

``python`` may be a wrapper script (one that sets ``LD_LIBRARY_PATH`` or activates a
venv, say): the runner runs it as given and never assumes it is an interpreter binary.

Parsing is pure; the file is read by ``device_cli``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from qnn_migrate.bot.lab.adb import AdbConfigError, check_host, check_serial
from qnn_migrate.bot.model import SOC_RE, TEST_ID_RE, HostShard, Shard

DEFAULT_STATE_DIR = "/var/lib/qnn-runner"
_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_CLASS_RE = re.compile(r"^Test\w+$")
# A package name or an entry of /data/local/tmp the phone's shell can take as one word.
_PHONE_NAME_RE = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9._+-]{0,254}$")
EPHEMERAL = "ephemeral"
LONG_LIVED = "long-lived"
LIFETIMES = (EPHEMERAL, LONG_LIVED)
PHONES = "phones"
SIMULATOR = "x86-simulator"
KINDS = (PHONES, SIMULATOR)
PHONE_RESETS = ("kill", "reboot")
JOB_USER = "job-user"
NO_ISOLATION = "none"
ISOLATIONS = (JOB_USER, NO_ISOLATION)
SWITCHES = ("setpriv", "sudo")
# A user name useradd accepts, without anything a command line could take as an option.
_USER_RE = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
_RUNNER_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
# What each kind can run when the host config does not say. QNN's GPU backend does not
# run on x86-64 ("TuningMode must be enabled on x86_64-linux-clang"), and LPAI is untried.
DEFAULT_BACKENDS = {PHONES: ("htp", "gpu", "lpai"), SIMULATOR: ("htp",)}


class HostConfigError(ValueError):
    """The host config file is malformed; the message names the key and the fix."""


@dataclass(frozen=True)
class DeviceEntry:
    """One phone attached to this host."""

    serial: str
    soc: str


@dataclass(frozen=True)
class JobEnv:
    """The per-job Python environment a long-lived host builds for every job.

    A fresh venv from ``base_python`` (no system site-packages, so no user site either),
    filled by pip from ``requirements``, where every line is pinned with ``--hash``;
    ``find_links`` names a local wheelhouse (then nothing comes from an index). Only
    wheels are installed: no build script of a package runs."""

    requirements: str
    base_python: str = "python3"
    find_links: str | None = None


@dataclass(frozen=True)
class JobUsers:
    """The unprivileged users PR code runs as on this host (docs/runners.md, "Two users").

    ``names``: a pool, at least one per runner process on the host (a job locks one for
    its whole run); ``home``: the folder holding ``<home>/<name>/``, each owned by its user
    (mode 0700) and made when the user is; ``switch``: how the supervisor becomes a job
    user: ``setpriv`` (the supervisor is root, or has CAP_SETUID and CAP_SETGID) or
    ``sudo`` (``sudo -n -u NAME /usr/bin/env ...``, with the sudoers rule in the docs)."""

    names: tuple[str, ...]
    home: str
    switch: str = "setpriv"
    # The interpreter the supervisor's small steps run with as a job user (standard library
    # only): one every job user can run, outside any user's home.
    python: str = "/usr/bin/python3"


@dataclass(frozen=True)
class HostConfig:
    """Everything host-local the runner needs; every field has a usable default."""

    kind: str = PHONES
    executorch_dir: str | None = None
    python: str = "python"
    adb: str = "adb"
    adb_host: str | None = None
    build_folder: str | None = None
    qnn_sdk_root: str | None = None
    state_dir: str = DEFAULT_STATE_DIR
    min_free_mb: int = 2048
    lock_wait_s: float = 900.0
    logcat_lines: int = 400
    use_wrapper: bool = True
    # junit_wrapper's --fork-per-test: QNN's process-wide counters and whatever else a test
    # leaves behind never reach the next test (false: one process for the shard's tests).
    fork_per_test: bool = True
    env: Mapping[str, str] = field(default_factory=dict)
    devices: tuple[DeviceEntry, ...] = ()
    board_platforms: Mapping[str, str] = field(default_factory=dict)
    qnn_executor_runner: str | None = None
    backends: tuple[str, ...] = ()
    unsupported_tests: Mapping[str, str] = field(default_factory=dict)
    startup_timeout_s: float = 600.0
    lifetime: str = LONG_LIVED
    job_env: JobEnv | None = None
    integrity_manifest: str | None = None
    trusted_paths: tuple[str, ...] = ()
    keep_packages: tuple[str, ...] = ()
    keep_tmp: tuple[str, ...] = ()
    # Names of the phone's `shell` user processes that are not a job's (none on a phone
    # nobody ran `adb shell` on); every other one is killed by the reset.
    keep_processes: tuple[str, ...] = ()
    phone_reset: str = "kill"  # or "reboot": also reboot the phone after every run
    # Who PR code runs as: a job user (the default; then job_users must be set), or
    # "none": the supervisor's own user, as before issue 27 (a developer's machine and the
    # project's own tests of runs; `bot doctor --host-config` fails it).
    isolation: str = JOB_USER
    job_users: JobUsers | None = None
    # The GitHub runners registered on this host (names), for `bot doctor --host-config`.
    github_runners: tuple[str, ...] = ()

    @property
    def simulator(self) -> bool:
        return self.kind == SIMULATOR

    @property
    def runnable_backends(self) -> tuple[str, ...]:
        return self.backends or DEFAULT_BACKENDS[self.kind]

    def unsupported(self, test_id: str) -> str | None:
        """Why this host cannot run ``test_id`` (its own entry, else its class's), or None."""
        reason = self.unsupported_tests.get(test_id)
        if reason is None:
            reason = self.unsupported_tests.get(test_id.partition(".")[0])
        return reason

    def trusted_roots(self, config_path: str | None) -> list[str]:
        """What the seal covers: the trusted paths and the host config itself."""
        return [*self.trusted_paths, *([config_path] if config_path else [])]

    def pool(self, soc: str) -> tuple[str, ...]:
        """Serials of this host's phones with ``soc``, in file order."""
        return tuple(d.serial for d in self.devices if d.soc == soc.upper())

    def apply(self, planned: Shard) -> HostShard:
        """Fill the shard's host-local fields the planner left empty; never override."""
        shard = HostShard.of(planned)
        pool = shard.device_pool or self.pool(shard.soc)
        build_folder = shard.build_folder
        if self.build_folder and shard.build_folder in ("", "build-android/", "build-android"):
            build_folder = self.build_folder
        return replace(
            shard,
            executorch_dir=shard.executorch_dir or self.executorch_dir,
            adb_host=shard.adb_host or self.adb_host,
            device_pool=tuple(pool),
            build_folder=build_folder,
        )


def _get(doc: Mapping[str, Any], key: str, kind: type, default: Any, where: str) -> Any:
    value = doc.get(key, default)
    if value is default:
        return default
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise HostConfigError(f"{where}: {key} must be a {kind.__name__}, got {value!r}")
    return value


def parse(doc: Mapping[str, Any], where: str = "host config") -> HostConfig:
    known = set(HostConfig.__dataclass_fields__)
    unknown = sorted(set(doc) - known)
    if unknown:
        raise HostConfigError(
            f"{where}: unknown key(s) {', '.join(unknown)}; known: {sorted(known)}"
        )
    base = HostConfig()
    devices: list[DeviceEntry] = []
    raw_devices = doc.get("devices", [])
    if not isinstance(raw_devices, list):
        raise HostConfigError(f"{where}: devices must be an array of tables ([[devices]])")
    for i, entry in enumerate(raw_devices):
        if not isinstance(entry, Mapping) or set(entry) != {"serial", "soc"}:
            raise HostConfigError(f"{where}: devices[{i}] needs exactly serial and soc")
        serial, soc = str(entry["serial"]), str(entry["soc"]).upper()
        try:
            check_serial(serial)
        except AdbConfigError as exc:
            raise HostConfigError(f"{where}: devices[{i}]: {exc}") from exc
        if not SOC_RE.match(soc):
            raise HostConfigError(
                f"{where}: devices[{i}]: SoC {soc!r} is not a SoC name like SM8650"
            )
        devices.append(DeviceEntry(serial, soc))
    serials = [d.serial for d in devices]
    if len(set(serials)) != len(serials):
        raise HostConfigError(f"{where}: a serial is listed twice under [[devices]]")

    env = doc.get("env", {})
    if not isinstance(env, Mapping) or not all(
        isinstance(v, str) and _ENV_NAME_RE.match(k) for k, v in env.items()
    ):
        raise HostConfigError(f"{where}: [env] must map variable names to strings")
    platforms = doc.get("board_platforms", {})
    if not isinstance(platforms, Mapping) or not all(
        isinstance(v, str) for v in platforms.values()
    ):
        raise HostConfigError(f"{where}: [board_platforms] must map platform names to SoC names")

    unsupported = doc.get("unsupported_tests", {})
    if not isinstance(unsupported, Mapping) or not all(
        isinstance(v, str) and (TEST_ID_RE.match(k) or _CLASS_RE.match(k))
        for k, v in unsupported.items()
    ):
        raise HostConfigError(
            f"{where}: [unsupported_tests] must map test ids (TestClass.test_name) or test "
            "classes to the reason this host cannot run them"
        )
    kind = _get(doc, "kind", str, PHONES, where)
    if kind not in KINDS:
        raise HostConfigError(f"{where}: kind must be one of {', '.join(KINDS)}, got {kind!r}")
    backends = doc.get("backends", [])
    if not isinstance(backends, list) or not all(
        isinstance(b, str) and re.match(r"^[a-z][a-z0-9]{0,15}$", b) for b in backends
    ):
        raise HostConfigError(f"{where}: backends must be a list of backend names like htp")
    if kind == SIMULATOR and doc.get("devices"):
        raise HostConfigError(f"{where}: an x86-simulator host has no [[devices]]")

    lifetime = _get(doc, "lifetime", str, LONG_LIVED, where)
    if lifetime not in LIFETIMES:
        raise HostConfigError(
            f"{where}: lifetime must be one of {', '.join(LIFETIMES)}, got {lifetime!r}"
        )
    job_env = _job_env(doc.get("job_env"), where)
    trusted = doc.get("trusted_paths", [])
    if not isinstance(trusted, list) or not all(
        isinstance(t, str) and t.startswith("/") for t in trusted
    ):
        raise HostConfigError(f"{where}: trusted_paths must be a list of absolute paths")

    adb_host = _get(doc, "adb_host", str, None, where)
    if adb_host is not None:
        try:
            check_host(adb_host)
        except AdbConfigError as exc:
            raise HostConfigError(f"{where}: {exc}") from exc
    config = HostConfig(
        kind=kind,
        qnn_executor_runner=_get(doc, "qnn_executor_runner", str, None, where),
        backends=tuple(backends),
        unsupported_tests={str(k): str(v) for k, v in unsupported.items()},
        startup_timeout_s=_get(doc, "startup_timeout_s", float, base.startup_timeout_s, where),
        executorch_dir=_get(doc, "executorch_dir", str, None, where),
        python=_get(doc, "python", str, base.python, where),
        adb=_get(doc, "adb", str, base.adb, where),
        adb_host=adb_host,
        build_folder=_get(doc, "build_folder", str, None, where),
        qnn_sdk_root=_get(doc, "qnn_sdk_root", str, None, where),
        state_dir=_get(doc, "state_dir", str, base.state_dir, where),
        min_free_mb=_get(doc, "min_free_mb", int, base.min_free_mb, where),
        lock_wait_s=_get(doc, "lock_wait_s", float, base.lock_wait_s, where),
        logcat_lines=_get(doc, "logcat_lines", int, base.logcat_lines, where),
        use_wrapper=_get(doc, "use_wrapper", bool, base.use_wrapper, where),
        fork_per_test=_get(doc, "fork_per_test", bool, base.fork_per_test, where),
        env=dict(env),
        devices=tuple(devices),
        board_platforms={str(k).lower(): str(v).upper() for k, v in platforms.items()},
        lifetime=lifetime,
        job_env=job_env,
        integrity_manifest=_get(doc, "integrity_manifest", str, None, where),
        trusted_paths=tuple(trusted),
        keep_packages=_names(doc, "keep_packages", where),
        keep_tmp=_names(doc, "keep_tmp", where),
        keep_processes=_names(doc, "keep_processes", where),
        phone_reset=_get(doc, "phone_reset", str, base.phone_reset, where),
        isolation=_get(doc, "isolation", str, base.isolation, where),
        job_users=_job_users(doc.get("job_users"), where),
        github_runners=_runner_names(doc, where),
    )
    if config.isolation not in ISOLATIONS:
        raise HostConfigError(
            f"{where}: isolation must be one of {', '.join(ISOLATIONS)}, got {config.isolation!r}"
        )
    if config.phone_reset not in PHONE_RESETS:
        raise HostConfigError(
            f"{where}: phone_reset must be one of {', '.join(PHONE_RESETS)}, got "
            f"{config.phone_reset!r}"
        )
    if (
        config.min_free_mb < 0
        or config.lock_wait_s < 0
        or config.logcat_lines < 0
        or config.startup_timeout_s <= 0
    ):
        raise HostConfigError(
            f"{where}: min_free_mb, lock_wait_s and logcat_lines must be >= 0, "
            "startup_timeout_s > 0"
        )
    return config


def _names(doc: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = doc.get(key, [])
    if not isinstance(value, list) or not all(
        isinstance(v, str) and _PHONE_NAME_RE.match(v) for v in value
    ):
        raise HostConfigError(
            f"{where}: {key} must be a list of plain names (letters, digits, . _ + -)"
        )
    return tuple(value)


def _job_env(raw: Any, where: str) -> JobEnv | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not set(raw) <= {
        "requirements",
        "base_python",
        "find_links",
    }:
        raise HostConfigError(f"{where}: [job_env] takes requirements, base_python and find_links")
    if not all(isinstance(v, str) and v for v in raw.values()) or "requirements" not in raw:
        raise HostConfigError(
            f"{where}: [job_env] needs requirements (a file of hash-pinned requirements); "
            "every value is a non-empty string"
        )
    return JobEnv(
        requirements=raw["requirements"],
        base_python=raw.get("base_python", "python3"),
        find_links=raw.get("find_links"),
    )


def _job_users(raw: Any, where: str) -> JobUsers | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or not set(raw) <= {"names", "home", "switch", "python"}:
        raise HostConfigError(f"{where}: [job_users] takes names, home, switch and python")
    names = raw.get("names")
    if (
        not isinstance(names, list)
        or not names
        or not all(isinstance(n, str) and _USER_RE.match(n) for n in names)
        or len(set(names)) != len(names)
    ):
        raise HostConfigError(
            f"{where}: [job_users] names must be a list of distinct user names (like "
            "qnn-job-1), one or more per runner on this host"
        )
    home = raw.get("home")
    if not isinstance(home, str) or not home.startswith("/"):
        raise HostConfigError(
            f"{where}: [job_users] home must be an absolute folder holding <home>/<name>/ "
            "for each job user"
        )
    switch = raw.get("switch", "setpriv")
    if switch not in SWITCHES:
        raise HostConfigError(
            f"{where}: [job_users] switch must be one of {', '.join(SWITCHES)}, got {switch!r}"
        )
    python = raw.get("python", "/usr/bin/python3")
    if not isinstance(python, str) or not python.startswith("/"):
        raise HostConfigError(f"{where}: [job_users] python must be an absolute path")
    return JobUsers(tuple(names), home, switch, python)


def _runner_names(doc: Mapping[str, Any], where: str) -> tuple[str, ...]:
    value = doc.get("github_runners", [])
    if not isinstance(value, list) or not all(
        isinstance(v, str) and _RUNNER_NAME_RE.match(v) for v in value
    ):
        raise HostConfigError(f"{where}: github_runners must be a list of runner names")
    return tuple(value)


def loads(text: str, where: str = "host config") -> HostConfig:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise HostConfigError(f"{where}: not valid TOML: {exc}") from exc
    except RecursionError as exc:  # tomllib recurses once per nested array or table
        raise HostConfigError(f"{where}: not valid TOML: nested too deep") from exc
    return parse(doc, where)

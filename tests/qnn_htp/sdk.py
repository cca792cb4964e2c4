"""Where the QNN host libraries come from: a QNN_SDK_ROOT given by the user, or one laid out from a PyPI wheel.

A real QAIRT SDK (the release ExecuTorch 1.5.1 is built against) cannot be downloaded from
PyPI, but the x86-64 QNN host libraries of a newer release ship inside ``onnxruntime-qnn``.
:func:`ensure_sdk` lays those out as an SDK-shaped root, once, in the user cache folder::

    <cache>/qnn-sdk/onnxruntime-qnn-2.7.0-<sha>/lib/x86_64-linux-clang/libQnn*.so, libHtpPrepare.so
    <cache>/qnn-sdk/onnxruntime-qnn-2.7.0-<sha>/lib/onnxruntime_qnn.libs/   (libc++ & co.)

The second folder keeps the libraries' RPATH ``$ORIGIN/../onnxruntime_qnn.libs`` resolving.
The wheel is fetched by the ordinary ``pip download`` into ``<cache>/wheels`` and checked
against its pinned sha256. A file lock makes concurrent pytest-xdist workers lay it out once.

A user's own SDK wins: when ``QNN_HTP_SDK_ROOT`` (or ``QNN_SDK_ROOT`` outside pytest) points
at a root holding ``lib/x86_64-linux-clang/libQnnHtp.so``, that root is used as it is.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

WHEEL_REQUIREMENT = "onnxruntime-qnn==2.7.0"
WHEEL_NAME = "onnxruntime_qnn-2.7.0-cp311-cp311-manylinux_2_35_x86_64.whl"
WHEEL_SHA256 = "c56c01562b8534fe8980cfea4601408d950c065f8251fb862ce82101c52c9849"
# The QNN release inside that wheel (its libQnnHtp reports HTP API 5.51).
WHEEL_QNN_RELEASE = "QNN 2.51.0"
HOST_LIBS = "lib/x86_64-linux-clang"
# Set by tests/conftest.py from the QNN_SDK_ROOT the user started pytest with (conftest blanks
# QNN_SDK_ROOT itself so the fast suite never loads an SDK).
USER_ROOT_VARIABLE = "QNN_HTP_SDK_ROOT"

INSTALL_HINT = (
    "The real-QNN tier needs the QNN HTP host libraries. Either let it fetch them "
    f"(`python -m pip download --no-deps --only-binary=:all: {WHEEL_REQUIREMENT}` must work: pip "
    "installed and PyPI reachable, on x86-64 Linux with glibc >= 2.35), or point QNN_SDK_ROOT at "
    "a QAIRT 2.37 SDK root holding lib/x86_64-linux-clang/libQnnHtp.so. Deselect the tier with "
    "-m 'not qnn_htp' to run the fast suite only."
)


class SdkUnavailableError(RuntimeError):
    """The QNN host libraries could not be found or laid out; the message says what to install."""


@dataclass(frozen=True)
class QnnSdk:
    """An SDK-shaped root and where it came from ("wheel" or "user")."""

    root: Path
    origin: str

    @property
    def host_libs(self) -> Path:
        return self.root / HOST_LIBS

    @property
    def staging(self) -> Path:
        return self.root.parent / f"{self.root.name}-staging"

    def environment(self) -> dict[str, str]:
        """The variables a process that lowers or runs QNN programs needs (before it starts)."""
        self.staging.mkdir(parents=True, exist_ok=True)
        ld_path = [
            str(self.host_libs),
            *filter(None, os.environ.get("LD_LIBRARY_PATH", "").split(":")),
        ]
        return {
            "QNN_SDK_ROOT": str(self.root),
            "QNN_STAGING_DIR": str(self.staging),
            "LD_LIBRARY_PATH": ":".join(dict.fromkeys(ld_path)),
        }


def cache_dir() -> Path:
    """``$QNN_MIGRATE_CACHE``, else ``$XDG_CACHE_HOME/qnn-migrate``, else ``~/.cache/qnn-migrate``."""
    explicit = os.environ.get("QNN_MIGRATE_CACHE")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "qnn-migrate"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def fetch_wheel(cache: Path) -> Path:
    """The pinned wheel in ``cache/wheels``, downloaded through pip when missing; sha256-checked."""
    wheels = cache / "wheels"
    wheel = wheels / WHEEL_NAME
    if wheel.exists() and sha256_of(wheel) == WHEEL_SHA256:
        return wheel
    wheels.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=wheels) as tmp:
        command = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--disable-pip-version-check", "-q", "-d", tmp, WHEEL_REQUIREMENT,
        ]  # fmt: skip
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=900)
        except (OSError, subprocess.TimeoutExpired) as err:
            raise SdkUnavailableError(
                f"`{' '.join(command)}` did not run: {err}. {INSTALL_HINT}"
            ) from err
        got = Path(tmp) / WHEEL_NAME
        if proc.returncode != 0 or not got.exists():
            raise SdkUnavailableError(
                f"`{' '.join(command)}` failed (exit {proc.returncode}): "
                f"{(proc.stderr or proc.stdout).strip()[-2000:]}. {INSTALL_HINT}"
            )
        digest = sha256_of(got)
        if digest != WHEEL_SHA256:
            raise SdkUnavailableError(
                f"{WHEEL_NAME} from pip has sha256 {digest}, expected {WHEEL_SHA256}; refusing "
                f"to use it. {INSTALL_HINT}"
            )
        os.replace(got, wheel)
    return wheel


def _lay_out(wheel: Path, root: Path) -> None:
    """Extract the wheel's QNN libraries into an SDK-shaped ``root`` (atomically, by rename)."""
    tmp = Path(tempfile.mkdtemp(dir=root.parent, prefix=f".{root.name}-"))
    try:
        libs = tmp / HOST_LIBS
        side = tmp / "lib" / "onnxruntime_qnn.libs"
        libs.mkdir(parents=True)
        side.mkdir(parents=True)
        with zipfile.ZipFile(wheel) as archive:
            for member in archive.infolist():
                folder, _, name = member.filename.partition("/")
                if folder == "onnxruntime_qnn" and name.startswith("lib") and ".so" in name:
                    if name.startswith("libonnxruntime"):
                        continue  # onnxruntime's own provider, not part of QNN
                    target = libs / name
                elif folder == "onnxruntime_qnn.libs" and name:
                    target = side / name
                else:
                    continue
                with archive.open(member) as src, target.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
        if not (libs / "libQnnHtp.so").exists():
            raise SdkUnavailableError(
                f"{wheel} holds no onnxruntime_qnn/libQnnHtp.so. {INSTALL_HINT}"
            )
        (tmp / "SOURCE").write_text(
            f"{WHEEL_REQUIREMENT} sha256={WHEEL_SHA256}\n{WHEEL_QNN_RELEASE}\n"
        )
        os.replace(tmp, root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _user_root() -> Path | None:
    given = os.environ.get(USER_ROOT_VARIABLE)
    if not given:
        return None
    root = Path(given)
    if not (root / HOST_LIBS / "libQnnHtp.so").exists():
        raise SdkUnavailableError(
            f"{USER_ROOT_VARIABLE}/QNN_SDK_ROOT={given} has no {HOST_LIBS}/libQnnHtp.so. {INSTALL_HINT}"
        )
    return root


def ensure_sdk(cache: Path | None = None) -> QnnSdk:
    """The SDK root to use: the user's, or the wheel's laid out once under ``cache``."""
    user = _user_root()
    if user is not None:
        return QnnSdk(user, "user")
    cache = cache or cache_dir()
    root = cache / "qnn-sdk" / f"onnxruntime-qnn-2.7.0-{WHEEL_SHA256[:12]}"
    if (root / "SOURCE").exists():
        return QnnSdk(root, "wheel")
    with _locked(cache / "qnn-sdk.lock"):
        if not (root / "SOURCE").exists():  # another worker may have finished meanwhile
            root.parent.mkdir(parents=True, exist_ok=True)
            _lay_out(fetch_wheel(cache), root)
    return QnnSdk(root, "wheel")

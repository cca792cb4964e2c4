"""Loads and checks ``bot/matrices.toml`` and the test registry: the bot's only source of truth.

Everything a comment may name (matrix, test id, SoC, backend) is checked against a
``Catalog``; every limit the parser and planner enforce comes from it. Loading fails with
a message that names the file, the table and what to change.

A repository that adopts the bot (an ExecuTorch fork) keeps one file,
``.github/qnn-bot.toml``, found from the working directory without any flag
(``discover``). It either extends the bundled data (its tables are laid over the bundled
ones, entry by entry) or replaces it (``extends = false``); ``replace = ["matrices"]``
drops whole bundled tables before the overlay. Its ``registry`` (a path beside it) is the
fork's own test registry, regenerated from its test_qnn_delegate.py with
``qnn-migrate matrix registry --from``; without one, the bundled registry is used.

A matrix with ``modules`` is an *other-backends* matrix: its tests are ExecuTorch's own
tests of other backends (XNNPACK, portable), found in those modules rather than in the QNN
registry, run on the simulator tier only (no phone) through ``bot/lab/other_backends.py``.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from qnn_migrate.bot import artifacts
from qnn_migrate.bot.model import SOC_RE, TEST_ID_RE
from qnn_migrate.bot.registry import Registry, RegistryError

DEFAULT_PATH = Path(__file__).with_name("matrices.toml")
MAX_DATA_BYTES = 1024 * 1024  # a bot config (the bundled one is 7 KiB)
ADOPTER_CONFIG = Path(".github") / "qnn-bot.toml"
# Tables an adopter's file may lay over the bundled ones, and the top-level keys it may set.
OVERLAY_TABLES = (
    "defaults",
    "command",
    "limits",
    "policy",
    "backends",
    "socs",
    "matrices",
    "nightly",
    "simulator",
)
ADOPTER_KEYS = frozenset({"schema", "extends", "replace", "registry", *OVERLAY_TABLES})
MATRIX_NAME_RE = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
# An ExecuTorch test module an other-backends matrix imports (dotted, under executorch).
TEST_MODULE_RE = re.compile(r"^executorch(\.[A-Za-z_][A-Za-z0-9_]{0,63}){1,12}$")
# The entry that runs an other-backends matrix's tests (loaded by path, like junit_wrapper).
OTHER_BACKENDS_DRIVER = Path(__file__).parent / "lab" / "other_backends.py"
BACKEND_RE = re.compile(r"^[a-z][a-z0-9]{0,15}$")
ROLES = ("read", "triage", "write", "maintain", "admin")
PLACEHOLDERS = (
    "${TEST_MATRIX}",
    "${BUILD_FOLDER}",
    "${HOST_NAME}",
    "${DEVICE_ID}",
    "${SOC_ID}",
    "${SEED}",
    "${BACKEND}",
)


class CatalogError(ValueError):
    """The data file or registry is malformed or inconsistent; the message says where."""


@dataclass(frozen=True)
class Matrix:
    """A named list of test ids, and the source paths whose change should run it."""

    name: str
    description: str
    tests: tuple[str, ...]
    guards: tuple[str, ...] = ()
    origin: str = ""
    modules: tuple[str, ...] = ()

    @property
    def other_backends(self) -> bool:
        """ExecuTorch's own tests of other backends: simulator hosts only, no registry."""
        return bool(self.modules)

    @cached_property
    def _guard_res(self) -> tuple[re.Pattern[str], ...]:
        return tuple(glob_to_re(g) for g in self.guards)

    def guards_path(self, path: str) -> bool:
        return any(r.match(path) for r in self._guard_res)


@dataclass(frozen=True)
class Soc:
    """A Qualcomm SoC (a key of ExecuTorch's get_soc_to_chipset_map) and its lab runners."""

    name: str
    backends: tuple[str, ...]
    runner_labels: tuple[str, ...]

    @property
    def in_lab(self) -> bool:
        return bool(self.runner_labels)


@dataclass(frozen=True)
class Limits:
    """Caps on comment size, tokens, ids, SoCs and planned work."""

    max_comment_chars: int = 65536
    max_line_chars: int = 4096
    max_tokens: int = 96
    max_test_ids: int = 64
    max_matrices: int = 8
    max_socs: int = 6
    max_test_runs: int = 1200
    tests_per_shard: int = 8
    max_shards: int = 128
    max_dispatch_chars: int = 60000
    max_seed: int = 2**31 - 1
    # What a dispatched shard may ask for (the device job's timeout-minutes is 180).
    min_timeout_s: int = 60
    max_timeout_s: int = 10800
    min_per_test_timeout_s: int = 30


@dataclass(frozen=True)
class Simulator:
    """The x86-64 HTP simulator tier: hosts with no phones (host kind ``x86-simulator``)."""

    runner_labels: tuple[str, ...]
    socs: tuple[str, ...]
    backends: tuple[str, ...] = ("htp",)


@dataclass(frozen=True)
class Policy:
    """Who may start runs and where they go."""

    run_roles: tuple[str, ...] = ("admin", "maintain", "write")
    device_workflow: str = "qnn-device-tests.yml"
    status_context: str = "qnn / device tests"


@dataclass(frozen=True)
class Defaults:
    """What ``/qnn test`` uses when the comment does not say."""

    socs: tuple[str, ...]
    backend: str
    seed: int
    build_folder: str


@dataclass(frozen=True)
class Catalog:
    """Matrices, SoCs, backends, limits and the test registry, validated together."""

    matrices: Mapping[str, Matrix]
    socs: Mapping[str, Soc]
    backends: Mapping[str, str]
    defaults: Defaults
    limits: Limits
    policy: Policy
    command_template: str
    registry: Registry
    nightly_matrices: tuple[str, ...] = ()
    nightly_socs: tuple[str, ...] = ()
    source: str = "matrices.toml"
    simulator: Simulator | None = None

    @cached_property
    def test_ids(self) -> frozenset[str]:
        return frozenset(self.registry.ids())

    @cached_property
    def lab_socs(self) -> tuple[str, ...]:
        return tuple(name for name, soc in self.socs.items() if soc.in_lab)

    def knows(self, matrix: str, test: str) -> bool:
        """Whether ``test`` may run under ``matrix``: a registry id, or one the (other-backends)
        matrix lists."""
        found = self.matrices.get(matrix)
        if found is not None and found.other_backends:
            return test in found.tests
        return test in self.test_ids

    def matrices_for_paths(self, paths: Iterable[str]) -> tuple[str, ...]:
        """Matrices whose guards match any of ``paths``, in data-file order."""
        wanted = list(paths)
        return tuple(m.name for m in self.matrices.values() if any(map(m.guards_path, wanted)))

    def command_argv(
        self,
        tests: Sequence[str],
        *,
        soc: str,
        backend: str,
        seed: int,
        host: str,
        device: str,
        build_folder: str | None = None,
        matrix: str | None = None,
    ) -> list[str]:
        """The test command as argv words; values replace whole words, never text in a shell.

        An other-backends ``matrix`` runs ``bot/lab/other_backends.py`` with its modules, in
        the template's Python, instead of the QNN test script."""
        found = self.matrices.get(matrix) if matrix is not None else None
        if found is not None and found.other_backends:
            python = self.command_template.split()[0]
            modules = [w for m in found.modules for w in ("--module", m)]
            return [python, str(OTHER_BACKENDS_DRIVER), *modules, "--seed", str(seed), *tests]
        values = {
            "${BUILD_FOLDER}": build_folder or self.defaults.build_folder,
            "${HOST_NAME}": host,
            "${DEVICE_ID}": device,
            "${SOC_ID}": soc,
            "${SEED}": str(seed),
            "${BACKEND}": backend,
        }
        argv: list[str] = []
        for word in self.command_template.split():
            if word == "${TEST_MATRIX}":
                argv.extend(tests)
            else:
                argv.append(values.get(word, word))
        return argv


def close_matches(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    """Up to ``n`` choices that look like ``word`` (case-insensitive), best first."""
    pool = list(choices)
    lowered = {c.lower(): c for c in pool}
    key = word.lower()
    hits = difflib.get_close_matches(key, list(lowered), n=n, cutoff=0.6)
    if len(key) >= 3:
        # A fragment of a long name ("conv" for "canonicalize_conv") is a fair guess too.
        hits += [c for c in lowered if key in c and c not in hits]
    return [lowered[h] for h in hits[:n]]


def glob_to_re(pattern: str) -> re.Pattern[str]:
    """``*`` matches within one path segment, ``**/`` any number of whole segments."""
    out = []
    i = 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def _table(doc: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = doc.get(key, {})
    if not isinstance(value, Mapping):
        raise CatalogError(f"{where}: [{key}] must be a table")
    return value


def _strs(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise CatalogError(f"{where} must be a list of strings")
    return tuple(value)


def _int(table: Mapping[str, Any], key: str, default: int, where: str) -> int:
    value = table.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise CatalogError(f"{where}: {key} must be a non-negative integer")
    return value


def parse_catalog(doc: Mapping[str, Any], registry: Registry, where: str) -> Catalog:
    """Build a Catalog from the parsed TOML and a registry; raise on the first problem."""
    if doc.get("schema") != 1:
        raise CatalogError(f"{where}: schema must be 1")
    problems: list[str] = []

    backends_t = _table(doc, "backends", where)
    backends: dict[str, str] = {}
    for name, spec in backends_t.items():
        if not BACKEND_RE.match(name) or not isinstance(spec, Mapping):
            problems.append(f"[backends.{name}]: name must be lowercase letters/digits")
            continue
        backends[name] = str(spec.get("description", ""))

    socs: dict[str, Soc] = {}
    for name, spec in _table(doc, "socs", where).items():
        w = f"{where}: [socs.{name}]"
        if not SOC_RE.match(name) or not isinstance(spec, Mapping):
            problems.append(f"{w}: name must be upper-case letters and digits")
            continue
        soc_backends = _strs(spec.get("backends", []), f"{w} backends")
        labels = _strs(spec.get("runner_labels", []), f"{w} runner_labels")
        unknown = [b for b in soc_backends if b not in backends]
        if unknown:
            problems.append(f"{w}: unknown backend(s) {', '.join(unknown)}")
        bad_labels = [label for label in labels if not re.match(r"^[A-Za-z0-9_.-]{1,64}$", label)]
        if bad_labels:
            problems.append(f"{w}: malformed runner label(s) {bad_labels}")
        socs[name] = Soc(name, soc_backends, labels)

    ids = frozenset(registry.ids())
    matrices: dict[str, Matrix] = {}
    for name, spec in _table(doc, "matrices", where).items():
        w = f"{where}: [matrices.{name}]"
        if not MATRIX_NAME_RE.match(name) or not isinstance(spec, Mapping):
            problems.append(f"{w}: name must match {MATRIX_NAME_RE.pattern}")
            continue
        tests = _strs(spec.get("tests", []), f"{w} tests")
        modules = _strs(spec.get("modules", []), f"{w} modules")
        bad_modules = [m for m in modules if not TEST_MODULE_RE.match(m)]
        if bad_modules:
            problems.append(
                f"{w}: modules must be dotted names under executorch "
                f"(executorch.backends.xnnpack.test.ops.test_abs), not {', '.join(bad_modules)}"
            )
        if not tests:
            problems.append(f"{w}: lists no tests")
        malformed = [t for t in tests if not TEST_ID_RE.match(t)]
        if malformed:
            problems.append(f"{w}: malformed test id(s) {', '.join(malformed)}")
        # An other-backends matrix's tests live in its modules, not in the QNN registry.
        unknown_ids = [t for t in tests if TEST_ID_RE.match(t) and t not in ids and not modules]
        for t in unknown_ids:
            hint = close_matches(t, ids, 1)
            problems.append(
                f"{w}: {t} is not in the registry ({registry.package} {registry.version})"
                + (f"; did you mean {hint[0]}?" if hint else "")
            )
        dupes = sorted({t for t in tests if tests.count(t) > 1})
        if dupes:
            problems.append(f"{w}: duplicate test id(s) {', '.join(dupes)}")
        matrices[name] = Matrix(
            name=name,
            description=str(spec.get("description", "")),
            tests=tests,
            guards=_strs(spec.get("guards", []), f"{w} guards"),
            origin=str(spec.get("origin", "")),
            modules=modules,
        )

    d = _table(doc, "defaults", where)
    defaults = Defaults(
        socs=_strs(d.get("socs", []), f"{where}: [defaults] socs"),
        backend=str(d.get("backend", "htp")),
        seed=_int(d, "seed", 1126, f"{where}: [defaults]"),
        build_folder=str(d.get("build_folder", "build-android/")),
    )
    if not defaults.socs:
        problems.append(f"{where}: [defaults] socs is empty")
    for soc in defaults.socs:
        if soc not in socs:
            problems.append(f"{where}: [defaults] soc {soc} is not a [socs] entry")
        elif not socs[soc].in_lab:
            problems.append(f"{where}: [defaults] soc {soc} has no runner_labels")
        elif defaults.backend not in socs[soc].backends:
            problems.append(f"{where}: [defaults] backend {defaults.backend} not on {soc}")
    if defaults.backend not in backends:
        problems.append(f"{where}: [defaults] backend {defaults.backend} is not in [backends]")

    lt = _table(doc, "limits", where)
    limits = Limits(**{k: _int(lt, k, v, f"{where}: [limits]") for k, v in vars(Limits()).items()})
    unknown_limits = sorted(set(lt) - set(vars(Limits())))
    if unknown_limits:
        problems.append(f"{where}: [limits] unknown key(s) {', '.join(unknown_limits)}")
    if limits.tests_per_shard < 1:
        problems.append(f"{where}: [limits] tests_per_shard must be at least 1")

    pt = _table(doc, "policy", where)
    policy = Policy(
        run_roles=_strs(pt.get("run_roles", list(Policy.run_roles)), f"{where}: [policy]"),
        device_workflow=str(pt.get("device_workflow", Policy.device_workflow)),
        status_context=str(pt.get("status_context", Policy.status_context)),
    )
    bad_roles = [r for r in policy.run_roles if r not in ROLES]
    if bad_roles:
        problems.append(f"{where}: [policy] run_roles: unknown role(s) {bad_roles}; use {ROLES}")

    template = str(_table(doc, "command", where).get("template", ""))
    words = template.split()
    for placeholder in re.findall(r"\$\{[A-Z_]+\}", template):
        if placeholder not in PLACEHOLDERS:
            problems.append(f"{where}: [command] unknown placeholder {placeholder}")
    if "${TEST_MATRIX}" not in words:
        problems.append(f"{where}: [command] template needs the word ${{TEST_MATRIX}}")
    if any("${" in w and w not in PLACEHOLDERS for w in words):
        problems.append(f"{where}: [command] placeholders must be whole words")

    nt = _table(doc, "nightly", where)
    nightly_m = _strs(nt.get("matrices", []), f"{where}: [nightly] matrices")
    nightly_s = _strs(nt.get("socs", []), f"{where}: [nightly] socs")
    problems += [f"{where}: [nightly] unknown matrix {m}" for m in nightly_m if m not in matrices]
    problems += [f"{where}: [nightly] unknown soc {s}" for s in nightly_s if s not in socs]

    simulator: Simulator | None = None
    if "simulator" in doc:
        st = _table(doc, "simulator", where)
        w = f"{where}: [simulator]"
        simulator = Simulator(
            runner_labels=_strs(st.get("runner_labels", []), f"{w} runner_labels"),
            socs=_strs(st.get("socs", []), f"{w} socs"),
            backends=_strs(st.get("backends", ["htp"]), f"{w} backends"),
        )
        labels = simulator.runner_labels
        if (
            len(labels) != 3
            or labels[:2] != ("self-hosted", "qnn")
            or labels[2] in (soc.lower() for soc in socs)
        ):
            problems.append(
                f"{w}: runner_labels must be [self-hosted, qnn, <label>] with a label no SoC uses"
            )
        elif not re.match(r"^[a-z0-9][a-z0-9_.-]{0,63}$", labels[2]):
            problems.append(f"{w}: malformed runner label {labels[2]!r}")
        problems += [f"{w}: unknown soc {s}" for s in simulator.socs if s not in socs]
        problems += [f"{w}: unknown backend {b}" for b in simulator.backends if b not in backends]
        extra = sorted(set(st) - {"runner_labels", "socs", "backends"})
        if extra:
            problems.append(f"{w}: unknown key(s) {', '.join(extra)}")

    if problems:
        raise CatalogError("\n".join(problems))
    return Catalog(
        simulator=simulator,
        matrices=matrices,
        socs=socs,
        backends=backends,
        defaults=defaults,
        limits=limits,
        policy=policy,
        command_template=template,
        registry=registry,
        nightly_matrices=nightly_m,
        nightly_socs=nightly_s,
        source=where,
    )


def _read_toml(path: Path) -> dict[str, Any]:
    # The capped reader of files from elsewhere: an adopter's file, or one a PR changed.
    try:
        return artifacts.read_toml(path, "the bot config", MAX_DATA_BYTES)
    except artifacts.ArtifactError as exc:
        raise CatalogError(str(exc)) from exc


def _read_registry(reg_path: Path) -> Registry:
    if not reg_path.exists() and not reg_path.is_symlink():
        raise CatalogError(f"{reg_path}: not found; run `qnn-migrate matrix registry --from PATH`")
    try:
        doc = artifacts.read_json(reg_path, "the test registry")
    except artifacts.ArtifactError as exc:
        raise CatalogError(str(exc)) from exc
    if not isinstance(doc, dict):
        raise CatalogError(f"{reg_path}: the test registry must be a JSON object")
    try:
        return Registry.from_dict(doc, str(reg_path))
    except RegistryError as exc:
        raise CatalogError(f"{reg_path}: {exc}") from exc


def discover(start: Path) -> Path | None:
    """The adopter's ``.github/qnn-bot.toml`` in ``start`` or a parent folder, if any."""
    for folder in (start, *start.parents):
        candidate = folder / ADOPTER_CONFIG
        if candidate.is_file():
            return candidate
        if (folder / ".git").exists():
            return None  # the top of the repository: look no further
    return None


def overlay(bundled: Mapping[str, Any], adopter: Mapping[str, Any], where: str) -> dict[str, Any]:
    """The bundled data with the adopter's tables laid over it (pure).

    ``extends = false`` starts from nothing; ``replace = [TABLE, ...]`` drops those bundled
    tables first. Within a table, an adopter's entry replaces the bundled entry of the
    same name whole (a matrix, a SoC), so nothing of a replaced entry leaks through.
    """
    unknown = sorted(set(adopter) - ADOPTER_KEYS)
    if unknown:
        raise CatalogError(
            f"{where}: unknown key(s) {', '.join(unknown)}; known: {sorted(ADOPTER_KEYS)}"
        )
    extends = adopter.get("extends", True)
    if not isinstance(extends, bool):
        raise CatalogError(f"{where}: extends must be true or false")
    dropped = adopter.get("replace", [])
    if not isinstance(dropped, list) or not all(t in OVERLAY_TABLES for t in dropped):
        raise CatalogError(f"{where}: replace must list tables among {', '.join(OVERLAY_TABLES)}")
    base: dict[str, Any] = (
        {k: v for k, v in bundled.items() if k not in dropped} if extends else {"schema": 1}
    )
    for table in OVERLAY_TABLES:
        if table not in adopter:
            continue
        theirs = adopter[table]
        if not isinstance(theirs, Mapping):
            raise CatalogError(f"{where}: [{table}] must be a table")
        ours = base.get(table, {})
        base[table] = {**(ours if isinstance(ours, Mapping) else {}), **theirs}
    base["schema"] = adopter.get("schema", base.get("schema"))
    return base


def load(path: Path | None = None, *, search_from: Path | None = None) -> Catalog:
    """Read the data file and the registry it names; raise CatalogError naming the file.

    With no ``path``, an adopter's ``.github/qnn-bot.toml`` found from ``search_from``
    (default: the working directory) is laid over the bundled data; without one, the
    bundled data is used as it is. A ``path`` to a file named ``qnn-bot.toml`` is read as
    an adopter's file too.
    """
    if path is None:
        path = discover(search_from if search_from is not None else Path.cwd())
    if path is not None and path.name == ADOPTER_CONFIG.name:
        adopter = _read_toml(path)
        bundled = _read_toml(DEFAULT_PATH)
        doc = overlay(bundled, adopter, str(path))
        reg_name = adopter.get("registry")
        if reg_name is None:
            reg_path = DEFAULT_PATH.parent / str(bundled.get("registry", ""))
        elif isinstance(reg_name, str) and not Path(reg_name).is_absolute():
            reg_path = path.parent / reg_name
        else:
            raise CatalogError(f"{path}: 'registry' must be a path relative to the file")
        return parse_catalog(doc, _read_registry(reg_path), str(path))
    path = path or DEFAULT_PATH
    doc = _read_toml(path)
    reg_name = doc.get("registry")
    if not isinstance(reg_name, str):
        raise CatalogError(f"{path}: 'registry' must name the registry JSON file")
    return parse_catalog(doc, _read_registry(path.parent / reg_name), str(path))

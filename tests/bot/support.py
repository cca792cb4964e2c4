"""Helpers shared by the bot's tests (fixtures are in conftest.py).

* the GitHub stand-in's environment and the golden files of tests/bot/golden;
* deterministic shard results and a baseline for report tests (render, summary, e2e);
* tonight's results of one shard, for the nightly and model tests;
* a shard as the device workflow receives it, for the device-matrix tests;
* where the installed ExecuTorch's ``test_qnn_delegate.py`` is (the registry's source);
* a model of the work of the artifact reader's string scan (``string_scan_reads``).
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

from qnn_migrate_tests.github_standin.fixtures import REPO, TOKEN
from qnn_migrate_tests.github_standin.server import GitHubStandIn

from qnn_migrate.bot import artifacts
from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.model import Baseline, Shard, ShardResult, Status, TestResult
from qnn_migrate.bot.pr.commands import parse
from qnn_migrate.bot.pr.verbs.test import TestCommand, plan_command

ROOT = Path(__file__).resolve().parents[2]


def delegate_tests() -> Path:
    """The installed ExecuTorch's test_qnn_delegate.py (found without importing ExecuTorch).

    Tests that call this need the [passes] extra: mark them ``pytest.mark.passes``.
    """
    spec = importlib.util.find_spec("executorch")
    assert spec is not None and spec.submodule_search_locations, "executorch is not installed"
    root = Path(next(iter(spec.submodule_search_locations)))
    return root / "backends" / "qualcomm" / "tests" / "test_qnn_delegate.py"


GOLDEN = Path(__file__).resolve().parent / "golden"
REGEN = os.environ.get("QNN_REGEN_GOLDEN") == "1"

SHA = "c0ffee" + "0" * 34
NIGHTLY = "babe" + "1" * 36
RUN = "https://github.com/qnn-lab/executorch/actions/runs/4242"
FP = "TestQNNFloatingPointOperator"


def standin_env(gh: GitHubStandIn) -> dict[str, str]:
    """The environment a workflow step would give the bot, pointed at the stand-in."""
    return {
        "GITHUB_TOKEN": TOKEN,
        "GITHUB_REPOSITORY": REPO,
        "GITHUB_API_URL": gh.base_url,
        "GITHUB_SERVER_URL": "https://github.com",
        "GITHUB_RUN_ID": "4242",
        "QNN_BOT_RETRIES": "3",
        "QNN_BOT_BACKOFF": "0",
        "QNN_BOT_SECONDARY_RATE_WAIT": "0",
        "QNN_BOT_WRITE_INTERVAL": "0",
        "QNN_BOT_TIMEOUT": "10",
    }


def check_golden(name: str, text: str) -> None:
    """Compare with tests/bot/golden/NAME; QNN_REGEN_GOLDEN=1 rewrites it instead."""
    path = GOLDEN / name
    if REGEN:
        path.write_text(text, "utf-8")
    assert path.exists(), f"{path} missing: run QNN_REGEN_GOLDEN=1 pytest tests/bot"
    assert text == path.read_text("utf-8"), f"{name} differs from the golden file"


def planned_shards(catalog: Catalog) -> list[Shard]:
    """The shards of ``/qnn test canonicalize_conv --soc SM8650,SM8750`` on PR 7 at SHA."""
    command = parse("/qnn test canonicalize_conv --soc SM8650,SM8750", catalog)
    assert command is not None
    assert isinstance(command, TestCommand)
    p = plan_command(command, catalog, sha=SHA, pr=7)
    return [x.shard for x in p.shards]


def outcomes(shard: Shard) -> list[TestResult]:
    """A spread of statuses, fixed by position and SoC, so the golden file is stable."""
    out = []
    first = shard.id.endswith("-1")
    for i, test in enumerate(shard.tests):
        status = Status.PASS
        message = ""
        if not first:
            pass
        elif shard.soc == "SM8650" and i == 0:
            status, message = (
                Status.FAIL,
                "AssertionError: Tensor-likes are not close! | <b>@here</b>",
            )
        elif shard.soc == "SM8650" and i == 1:
            status, message = Status.ERROR, "RuntimeError: QNN graph finalize failed"
        elif shard.soc == "SM8750" and i == 0:
            status, message = Status.INFRA, "adb command failed: device offline"
        elif shard.soc == "SM8750" and i == 2:
            status, message = Status.SKIP, "needs a dataset"
        out.append(TestResult(test, status, 1.5 + i, message))
    if first and shard.soc == "SM8650" and len(out) > 3:
        out.pop(3)  # never reported: MISSING
    return out


def results_for(shards: list[Shard]) -> list[ShardResult]:
    return [
        ShardResult.complete(s, outcomes(s), device="serial-1", log_url=f"{RUN}/job/{i}")
        for i, s in enumerate(shards, start=1)
    ]


def baseline_for(shards: list[Shard], catalog: Catalog) -> Baseline:
    """Nightly history: the ERROR test already failed; the MISSING one flips (flaky)."""
    history: dict[tuple[str, str], list[Status]] = {}
    for s in shards:
        for t in s.tests:
            history[(s.soc, t)] = [Status.PASS, Status.PASS]
    sm8650 = [s for s in shards if s.soc == "SM8650"]
    if sm8650:
        tests = sm8650[0].tests
        history[("SM8650", tests[1])] = [Status.FAIL, Status.FAIL]
        if len(tests) > 3:
            history[("SM8650", tests[3])] = [Status.PASS, Status.FAIL, Status.PASS]
    return Baseline(sha=NIGHTLY, history={k: tuple(v) for k, v in history.items()})


def tonight_results(
    soc: str, statuses: dict[str, Status], messages: dict[str, str] | None = None
) -> list[ShardResult]:
    """One shard's results on ``soc``: ``{"abs": Status.PASS}`` is ``FP.test_qnn_backend_abs``."""
    ids = tuple(f"{FP}.test_qnn_backend_{k}" for k in statuses)
    shard = Shard(f"{soc.lower()}-m-1", "m", soc, "htp", 1126, ids, "f" * 40)
    msgs = messages or {}
    return [
        ShardResult.complete(
            shard,
            [
                TestResult(f"{FP}.test_qnn_backend_{k}", s, 1.0, msgs.get(k, ""))
                for k, s in statuses.items()
            ],
        )
    ]


def dispatched_shard(**kw: object) -> Shard:
    """A shard as the device workflow receives it: one test, at "a" * 40, for PR 7; ``kw`` overrides."""
    base: dict[str, object] = {
        "id": "sm8650-m-1",
        "matrix": "tests",
        "soc": "SM8650",
        "backend": "htp",
        "seed": 1126,
        "tests": (f"{FP}.test_qnn_backend_abs",),
        "sha": "a" * 40,
        "pr": 7,
    }
    return Shard(**(base | kw))  # type: ignore[arg-type]


def string_scan_reads(text: str, limit: int) -> int:
    """How many characters ``artifacts._STRING_RE.sub`` reads on ``text``: a model of its scan.

    ``sub`` tries the pattern at each quote it reaches (elsewhere it cannot start). A try that
    matches reads up to its end and the scan resumes there; a try that fails has read the
    string's body to the end of the text (it fails only for want of a closing quote), and the
    scan resumes one character on. Stops counting past ``limit``.
    """
    reads, pos, end = 0, 0, len(text)
    while reads <= limit:
        quote = text.find('"', pos)
        if quote < 0:
            return reads + end - pos
        match = artifacts._STRING_RE.match(text, quote)
        reads += quote - pos + (end - quote if match is None else match.end() - quote)
        pos = quote + 1 if match is None else match.end()
    return reads


# ------------------------------------------------------------- program fingerprints (issue 21)


def delegate_doc(payload: bytes, backend: str = "QnnBackend") -> dict[str, object]:
    """A delegate entry as bot/lab/program_recorder.py writes it, for ``payload``."""
    from qnn_migrate.bot.lab import program_recorder

    return program_recorder.payload_print(backend, payload)


def program_doc(
    *,
    inputs: list[list[object]] | None = None,
    payloads: tuple[bytes, ...] = (b"\x01" * 1000,),
    outside: dict[str, int] | None = None,
    outputs: list[dict[str, object]] | None = None,
    subtest: str = "",
    constants: tuple[int, int] = (0, 0),
    backend: str = "QnnBackend",
) -> dict[str, object]:
    """One program entry of a ``programs.json`` test record."""
    doc: dict[str, object] = {
        "subtest": subtest,
        "methods": [
            {
                "name": "forward",
                "inputs": inputs if inputs is not None else [["x", "float32", [1, 3, 16]]],
                "outputs": [["output_0", "float32", [1, 3, 16]]],
                "constants": list(constants),
                "delegates": [delegate_doc(p, backend) for p in payloads],
                "outside": outside or {},
            }
        ],
    }
    if outputs is not None:
        doc["outputs"] = outputs
    return doc


def output_doc(seed: str, snr: object = 60.0) -> dict[str, object]:
    import hashlib

    return {
        "dtype": "float32",
        "shape": [1, 3, 16],
        "sha256": hashlib.sha256(seed.encode()).hexdigest(),
        "snr_db": snr,
    }


def programs_file(tests: dict[str, list[dict[str, object]]]) -> dict[str, object]:
    """A whole ``programs.json`` document."""
    return {
        "schema": 1,
        "tests": {t: {"programs": p, "dropped": 0} for t, p in tests.items()},
        "notes": [],
    }

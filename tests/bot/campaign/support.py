"""A fork-shaped repository for the campaign's tests: its files on disk and on the stand-in.

``Fork`` keeps a checkout of the default branch (what the campaign's workflow checks out)
and the same files committed on the stand-in's ``main``, so the campaign reads the one and
writes over the other, as it does on GitHub. ``move_main`` changes both, as a push to
``main`` and a new checkout do.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from qnn_migrate_tests.github_standin.server import GitHubStandIn

OLD = "to_edge_transform_and_lower_to_qnn"
IMPORT = f"from executorch.backends.qualcomm.utils.utils import {OLD}\n"

# The harness's lowering helper: every test that lowers goes through it.
HARNESS_UTILS = f"""{IMPORT}

def lower_module(module, sample_input, compiler_specs):
    edge = {OLD}(module, sample_input, compiler_specs)
    return edge.to_executorch()
"""
EXPORT_CONV = f"""import torch
{IMPORT}

class Conv(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv1d(3, 3, 3)

    def forward(self, x):
        return self.conv(x)


def main(specs):
    model = Conv().eval()
    edge = {OLD}(model, (torch.randn(1, 3, 16),), specs)
    return edge.to_executorch()
"""
# A call the rewrite leaves for a person (QM101: **kwargs of unknown content).
BY_HAND = f"""{IMPORT}

def lower(model, inputs, specs, options):
    return {OLD}(model, inputs, specs, **options)
"""
VENDORED = f"""{IMPORT}

def lower(model, inputs, specs):
    return {OLD}(model, inputs, specs)
"""
PYPROJECT = """[project]
name = "fork"

[tool.qnn-migrate]
extend-exclude = ["third_party"]
"""
# The fork's bot config: a matrix the rewritten files select (`auto`), on the simulator.
BOT_CONFIG = """schema = 1
replace = ["socs", "matrices"]

[defaults]
socs = ["SM8650"]

[socs.SM8650]
backends = ["htp"]
runner_labels = ["self-hosted", "qnn", "sm8650"]

[simulator]
runner_labels = ["self-hosted", "qnn", "x86-simulator"]
socs = ["SM8650"]
backends = ["htp"]

[nightly]
matrices = ["lowering_helpers"]
socs = ["SM8650"]

[matrices.lowering_helpers]
description = "the tests that lower through the harness's and the examples' helpers"
guards = ["backends/qualcomm/tests/utils.py", "examples/qualcomm/**"]
tests = [
  "TestQNNFloatingPointOperator.test_qnn_backend_conv1d",
  "TestQNNFloatingPointOperator.test_qnn_backend_conv2d",
  "TestQNNQuantizedOperator.test_qnn_backend_conv1d",
  "TestQNNQuantizedOperator.test_qnn_backend_conv2d",
]
"""


def fork_files() -> dict[str, bytes]:
    return {
        "pyproject.toml": PYPROJECT.encode(),
        ".github/qnn-bot.toml": BOT_CONFIG.encode(),
        "backends/qualcomm/tests/utils.py": HARNESS_UTILS.encode(),
        "examples/qualcomm/export_conv.py": EXPORT_CONV.encode(),
        "examples/qualcomm/by_hand.py": BY_HAND.encode(),
        "third_party/vendored.py": VENDORED.encode(),
        "README.md": b"# a fork\n",
    }


class Fork:
    """A repository on the stand-in and the checkout of its default branch."""

    def __init__(
        self,
        gh: GitHubStandIn,
        checkout: Path,
        repo: str,
        files: Mapping[str, bytes] | None = None,
    ) -> None:
        self.gh, self.checkout, self.repo = gh, checkout, repo
        self.base = ""
        self.move_main(dict(fork_files() if files is None else files), "the fork")

    def move_main(self, files: Mapping[str, bytes | None], message: str) -> str:
        """Commit ``files`` on main (None: remove) and check the new tip out."""
        for path, data in files.items():
            target = self.checkout / path
            if data is None:
                target.unlink()
                continue
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        self.base = self.gh.commit_on_branch("main", files, message, repo=self.repo)
        return self.base

    @property
    def config(self) -> Path:
        return self.checkout / ".github" / "qnn-bot.toml"

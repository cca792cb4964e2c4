"""Test double of ExecuTorch's backends/qualcomm/tests/test_qnn_delegate.py (stdlib only).

Same command line (``setup_environment()`` with the same flags, ``parse_known_args`` and
the leftovers handed to ``unittest.main``), same class names, same way of reaching the phone
(``adb [-H host] -s serial shell ...``, a non-zero exit raising
``RuntimeError("adb command failed: [...]")`` as ``SimpleADB._adb`` does). What each test
does comes from the JSON file named by FAKE_QNN_SCENARIO:

    {
      "tests": {"TestQNNFloatingPointOperator.test_qnn_backend_abs": "fail", ...},
      "default": "pass",
      "class_errors": {"TestQNNQuantizedModel": "error" | "adb"},
      "duration_s": 0.0,
      "durations": {"<id>": 0.05},
      "import_delay_s": 0.0,
      "daemon_pid_file": "/tmp/x.pid"
    }

A behaviour is one of pass, fail (an output mismatch: AssertionError), error (an exception
in the test), hang (sleeps until killed), crash (the process aborts), skip, hang_subtests
(three subtests that each sleep until interrupted), daemon (starts a detached process in
its own session that outlives the test; its pid goes to ``daemon_pid_file``), megaline
(writes 64 MiB to stdout with no newline), hostile (runs the Python code the scenario's
"hostile" entry gives for the test: a hostile PR's code, then passes), phone_daemon (leaves a process on the phone
that rewrites later runs' outputs: a failing test whose outputs were rewritten passes),
symlink_out (leaves a symlink to /etc/passwd
and one to a file beside it in the artifact folder), poison_outputs (at exit, after the
wrapper wrote junit.xml, replaces it and the runner's stderr.txt with FIFOs, as PR code
can: a reader that opens them waits for ever). ``import_delay_s`` makes importing the module
slow, as importing the real harness is (about 10 s). Tests named in
the scenario but not below are added to their class, so scenarios can grow the suite.
When FAKE_QNN_ARGV_LOG is set, each run appends its argv there as a JSON line.
When FAKE_QNN_ENV_LOG is set, each run appends there the QNN_* variables it was started with.
Tests are run by the real unittest machinery, directly or through bot/lab/junit_wrapper/.

**Time.** Where the run is on the lab's clock (FAKE_LAB_CLOCK names its file: the runner
reads its budgets on tests/bot/lab/support.py's ``LabClock``), nothing here sleeps through a
duration, an import delay or a hang: ``time_passes`` appends the seconds to that file, in
steps of at most 25 s, each read by the runner's clock before the next. A per-test alarm the
wrapper armed, which would fire within that time, is run out at once: its signal arrives as
it would when the time had passed. Elsewhere they are real sleeps.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import signal
import subprocess
import sys
import time
import unittest

WORKSPACE = "/data/local/tmp/qnn_executorch_test"


def _poison(attempt_dir: str) -> None:
    for name in ("junit.xml", "stderr.txt"):
        path = os.path.join(attempt_dir, name)
        if os.path.lexists(path):
            os.unlink(path)
        os.mkfifo(path)


CLASSES: dict[str, list[str]] = {
    "TestQNNFloatingPointOperator": [
        "test_qnn_backend_abs",
        "test_qnn_backend_adaptive_avg_pool2d",
        "test_qnn_backend_add",
        "test_qnn_backend_conv2d",
        "test_qnn_backend_linear",
        "test_qnn_backend_relu",
    ],
    "TestQNNQuantizedOperator": [
        "test_qnn_backend_abs",
        "test_qnn_backend_add",
        "test_qnn_backend_conv2d",
        "test_qnn_backend_linear",
    ],
    "TestQNNFloatingPointModel": ["test_qnn_backend_conv_relu", "test_qnn_backend_residual_block"],
    "TestQNNQuantizedModel": ["test_qnn_backend_conv_relu", "test_qnn_backend_residual_block"],
}


def _scenario() -> dict:
    path = os.environ.get("FAKE_QNN_SCENARIO")
    if not path:
        return {}
    with open(path) as handle:
        return json.load(handle)


# -- time ----------------------------------------------------------------------------------
FOREVER = 10.0**6  # seconds: a hang's
STEP = 25.0  # seconds: the most that passes at once (less than any budget of the lab's)


def _clock_total(path: str) -> float:
    try:
        with open(path) as handle:
            return sum(float(x) for x in handle.read().split("\n")[:-1])
    except FileNotFoundError:
        return 0.0


def _wait_until_read(path: str) -> None:
    """Wait (in real time) until the runner's clock has read all the time said to pass, and
    a moment more: its budgets then decide while this process is where the time went."""
    total = _clock_total(path)
    deadline = time.monotonic() + 60  # a bound: the runner reads its clock every 0.2 s
    while time.monotonic() < deadline:
        try:
            with open(path + ".seen") as handle:
                if float(handle.read()) >= total:
                    break
        except (OSError, ValueError):
            pass
        time.sleep(0.005)
    time.sleep(0.05)


def time_passes(seconds: float, *, told: bool = False) -> None:
    """Let ``seconds`` pass: on the lab's clock, or in real time without one. ``told``: the
    clock was already told (by FakeAdb, for a call that took that long)."""
    path = os.environ.get("FAKE_LAB_CLOCK")
    if seconds <= 0 or (told and not path):
        return
    if not path:
        time.sleep(seconds)
        return
    remaining, interval = signal.getitimer(signal.ITIMER_REAL)
    fires = 0 < remaining <= seconds
    # An armed timer ends the wait when it fires: only that much passes.
    left = remaining if fires else seconds
    while left > 0 and not told:
        # In steps, each read by the runner before the next: its budgets run out in order,
        # whenever it got to the lines printed before the wait.
        step = min(left, STEP)
        with open(path, "a") as handle:
            handle.write(f"{step!r}\n")
        _wait_until_read(path)
        left -= step
    if fires:
        signal.setitimer(signal.ITIMER_REAL, 1e-6, interval)
        time.sleep(FOREVER)  # the alarm's handler raises in here


SCENARIO = _scenario()
time_passes(float(SCENARIO.get("import_delay_s", 0.0)))


class TestQNN(unittest.TestCase):
    """Carries the settings setup_environment() stores, like ExecuTorch's TestQNN."""

    host: str | None = None
    device: str | None = None
    soc_model: str = ""
    build_folder: str = ""
    executorch_root: str = ""
    artifact_dir: str = ""
    enable_x86_64: bool = False
    compile_only: bool = False
    backend: str = "htp"
    seed: int | None = None

    @classmethod
    def adb(cls, *args: str) -> str:
        """Like SimpleADB._adb: run adb and raise on a non-zero exit (what it printed)."""
        cmds = (
            ["adb", "-s", str(cls.device)]
            if not cls.host
            else ["adb", "-H", cls.host, "-s", str(cls.device)]
        )
        cmds.extend(args)
        result = subprocess.run(cmds, stdout=subprocess.PIPE, text=True)
        if result.returncode != 0:
            raise RuntimeError(f"adb command failed: {cmds}")
        return result.stdout

    @classmethod
    def setUpClass(cls) -> None:
        kind = SCENARIO.get("class_errors", {}).get(cls.__name__)
        if kind == "adb":
            cmds = ["adb", "-s", str(cls.device), "shell", f"mkdir -p {WORKSPACE}"]
            raise RuntimeError(f"adb command failed: {cmds}")
        if kind:
            raise ValueError(f"{cls.__name__}: model zoo entry could not be built (scenario)")

    def run_on_device(self) -> bool:
        """Run the model on the phone; whether its outputs were rewritten there (FakeAdb's
        model of a process a job left on the phone)."""
        if self.compile_only or self.enable_x86_64:
            return False
        # One call per test keeps the double fast; SimpleADB also pushes first.
        clock = os.environ.get("FAKE_LAB_CLOCK")
        before = _clock_total(clock) if clock else 0.0
        said = self.adb("shell", f"cd {WORKSPACE} && ./qnn_executor_runner --model_path model.pte")
        if clock:  # a slow phone told the clock how long the call took
            time_passes(_clock_total(clock) - before, told=True)
        return "outputs rewritten" in said

    def behave(self) -> None:
        test_id = f"{type(self).__name__}.{self._testMethodName}"
        behaviour = SCENARIO.get("tests", {}).get(test_id, SCENARIO.get("default", "pass"))
        time_passes(
            float(SCENARIO.get("durations", {}).get(test_id, SCENARIO.get("duration_s", 0.0)))
        )
        if behaviour == "skip":
            self.skipTest("scenario skips this test")
        if behaviour == "hang":
            time_passes(FOREVER)
            time.sleep(3600)
        if behaviour == "hang_subtests":
            for k in range(3):
                with self.subTest(k=k):
                    time_passes(FOREVER)
                    time.sleep(3600)
        if behaviour == "daemon":
            code = "import time; time.sleep(600)"
            daemon = subprocess.Popen(
                [sys.executable, "-c", code], start_new_session=True, stdin=subprocess.DEVNULL
            )
            with open(SCENARIO["daemon_pid_file"], "w") as handle:
                handle.write(str(daemon.pid))
        if behaviour == "symlink_out":
            os.symlink("/etc/passwd", os.path.join(self.artifact_dir, "leak"))
            os.symlink("inside.txt", os.path.join(self.artifact_dir, "fine"))
        if behaviour == "poison_outputs":
            atexit.register(_poison, os.path.dirname(os.path.abspath(self.artifact_dir)))
        if behaviour == "megaline":
            chunk = "x" * (1 << 20)
            for _ in range(64):
                sys.stdout.write(chunk)
            sys.stdout.flush()
        if behaviour == "crash":
            sys.stderr.flush()
            os.abort()
        if behaviour == "error":
            raise ValueError(f"{test_id}: unsupported node in partition (scenario)")
        if behaviour == "hostile":
            # PR code: what the scenario's "hostile" entry for this test says, run as the
            # test's own code (the two-user attack scenarios give it).
            exec(SCENARIO["hostile"][test_id], {"__name__": "hostile_pr_code"})
        if behaviour == "phone_daemon":
            # A process on the phone that outlives this job and rewrites the next job's
            # outputs with the expected ones before they are pulled.
            loop = "while true; do cp golden.raw out.raw; sleep 1; done # qnn-rewrite-outputs"
            self.adb("shell", f"nohup sh -c '{loop}' >/dev/null 2>&1 &")
        rewritten = self.run_on_device()
        if behaviour == "fail" and not rewritten:
            self.assertLess(
                0.25, 0.01, f"{test_id}: output mismatch, max abs diff 0.25 > atol 0.01"
            )


def _make_test() -> object:
    def test(self: TestQNN) -> None:
        self.behave()

    return test


for _cls_name in sorted({*CLASSES, *(t.split(".")[0] for t in SCENARIO.get("tests", {}))}):
    _methods = set(CLASSES.get(_cls_name, []))
    _methods |= {
        t.split(".")[1] for t in SCENARIO.get("tests", {}) if t.startswith(_cls_name + ".")
    }
    globals()[_cls_name] = type(_cls_name, (TestQNN,), {m: _make_test() for m in sorted(_methods)})


def setup_common_args_and_variables() -> argparse.ArgumentParser:
    """The flags of executorch.backends.qualcomm.export_utils, same names and defaults."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--config_file", type=str)
    parser.add_argument("--soc_model", type=str, default=None)
    parser.add_argument("--build_folder", type=str, default=None)
    parser.add_argument("--host", type=str, default=None)
    parser.add_argument("--online_prepare", action="store_true", default=False)
    parser.add_argument("--ip", type=str, default="")
    parser.add_argument("--port", type=int, default=-1)
    parser.add_argument("--skip_delegate_node_ids", type=str, default=None)
    parser.add_argument("--skip_delegate_node_ops", type=str, default=None)
    parser.add_argument("--compile_only", action="store_true", default=False)
    parser.add_argument("--device", type=str)
    parser.add_argument("--backend", choices=["htp", "gpu", "lpai"], default="htp", type=str)
    parser.add_argument("--shared_buffer", action="store_true")
    parser.add_argument("--skip_push", action="store_true", default=False)
    parser.add_argument("--dump_intermediate_outputs", action="store_true", default=False)
    parser.add_argument("--profile_level", type=int, choices=[0, 2, 3], default=0)
    parser.add_argument("--enable_x86_64", action="store_true")
    parser.add_argument("--ci", action="store_true", default=False)
    parser.add_argument("--seed", type=int)
    parser.add_argument(
        "--target",
        choices=["aarch64-android", "aarch64-oe-linux-gcc9.3", "aarch64-oe-linux-gcc11.2"],
        default="aarch64-android",
        type=str,
    )
    parser.add_argument("--pre_gen_pte", type=str)
    parser.add_argument("--direct_build_folder", type=str)
    parser.add_argument("--htp_performance_mode", type=int, choices=range(9), default=2)
    return parser


def setup_environment() -> list[str]:
    env_log = os.environ.get("FAKE_QNN_ENV_LOG")
    if env_log:
        # What ExecuTorch's harness reads on the simulator path (QNN_EXECUTOR_RUNNER, QNN_SDK_ROOT).
        with open(env_log, "a") as handle:
            seen = {k: v for k, v in os.environ.items() if k.startswith("QNN_")}
            handle.write(json.dumps(seen) + "\n")
    parser = setup_common_args_and_variables()
    parser.add_argument("-r", "--executorch_root", type=str)
    parser.add_argument("-a", "--artifact_dir", type=str)
    parser.add_argument("-i", "--image_dataset", type=str)
    parser.add_argument("--qa_dataset", type=str)
    parser.add_argument("--sentence_dataset", type=str)
    parser.add_argument("-p", "--pretrained_weight", default="", type=str)
    parser.add_argument("-n", "--model_name", type=str)
    parser.add_argument("-e", "--error_only", action="store_true")
    parser.add_argument("--oss_repo", type=str)
    parser.add_argument("-d", "--op_package_dir", default="", type=str)
    parser.add_argument("--llama_artifacts", type=str)
    parser.add_argument(
        "--static_llm_eval_method", choices=["wikitext_ppl", "hellaswag_acc_norm", "sqnr"], type=str
    )
    parser.add_argument("-F", "--use_fp16", action="store_true", default=False)

    args, ns_args = parser.parse_known_args(namespace=unittest)  # type: ignore[arg-type]
    TestQNN.host = args.host
    TestQNN.device = args.device
    TestQNN.soc_model = args.soc_model
    TestQNN.build_folder = args.build_folder
    TestQNN.executorch_root = args.executorch_root
    TestQNN.artifact_dir = args.artifact_dir
    TestQNN.enable_x86_64 = args.enable_x86_64
    TestQNN.compile_only = args.compile_only
    TestQNN.backend = args.backend
    TestQNN.seed = args.seed

    log = os.environ.get("FAKE_QNN_ARGV_LOG")
    if log:
        with open(log, "a") as handle:
            # Names only: tests check that no credential reached the code under test.
            secrets = sorted(k for k in os.environ if "TOKEN" in k or k.startswith("ACTIONS_"))
            handle.write(
                json.dumps(
                    {
                        "argv": sys.argv,
                        "cwd": os.getcwd(),
                        "secret_env": secrets,
                        "uid": os.getuid(),
                    }
                )
                + "\n"
            )
    return sys.argv[:1] + ns_args


if __name__ == "__main__":
    ut_args = setup_environment()
    unittest.main(argv=ut_args)

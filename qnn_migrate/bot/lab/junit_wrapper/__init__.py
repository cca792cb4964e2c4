"""Run ExecuTorch's QNN test script under unittest and write JUnit XML as it goes.

This package runs on the device host, inside the ExecuTorch checkout, with ExecuTorch's own
Python: it uses the standard library only and imports nothing from qnn-migrate. The runner
starts it by path, as a folder (``__main__.py`` loads the package by path under a name of
its own, so it runs from wherever it was staged for the job user)::

    python .../junit_wrapper --junit-xml OUT.xml [--per-test-timeout S] [--seed N] \\
        [--programs P.json] [--fork-per-test] \\
        backends/qualcomm/tests/test_qnn_delegate.py <the script's own arguments>

It loads the script as a module, calls its ``setup_environment()`` exactly as the script's
``__main__`` block does (so every ``--soc_model``/``--device``/... flag means the same), then
``unittest.main`` with a result that prints the usual ``-v`` lines to stderr and rewrites the
XML after every test, so a crash still leaves what ran before it.

One module per job:

- ``xml_result``: the JUnit XML (``XmlTestResult``), rewritten on every event;
- ``hooks``: what runs as each test starts and stops in the test's process (the seed, the
  program recorder, the per-test alarm);
- ``fork``: ``--fork-per-test``, each test in its own child of this process, watched to a
  deadline;
- ``main``: the command line, loading the script, the exit codes.

The runner (``bot/lab/attempt.py``) imports the exit codes and exception names from here
(they are what it reads back); nothing here imports the runner.
"""

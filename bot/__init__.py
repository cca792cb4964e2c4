"""GitHub bot and device-runner logic for running the QNN test matrices on phones.

Pure modules (commands, auth, plan, results, render, model, balance) import nothing
from ``github``, ``subprocess`` or ``os.environ``; effects live in ``github_api``,
``runner`` and the CLI modules, and are injected.
"""

"""The device-test bot: three programs and what they share.

``pr/`` runs on GitHub-hosted jobs (the /qnn comment handler: grammar, authorization,
dispatch, planning, the results comment); ``lab/`` runs on a runner host next to the
phones; ``nightly/`` keeps the baselines and the nightly issue. Shared at the top: the
data model, the catalog and matrices data, and ``artifacts``, the one reader of files
that cross a process boundary. ``github/`` holds the only PyGithub user and the settings;
``cli/`` the click commands, the only reader of ``os.environ``. Everything else is pure
and has its effects injected.
"""

"""qnn-migrate: move ExecuTorch QNN code off ``to_edge_transform_and_lower_to_qnn``.

The installed package holds the tools: ``qnn_migrate.cli`` (the ``qnn-migrate`` command),
``qnn_migrate.codemods`` (the rewrite, from the repository's ``codemods/``) and
``qnn_migrate.bot`` (the device-test bot, from ``bot/``). The runtime library that rewritten
code imports, ``qnn_passes``, is a distribution of its own, ``qnn-passes`` (the repository's
``qnn-passes/``). The version (``qnn-migrate --version``) comes from git: the commit the
package was built from.
"""

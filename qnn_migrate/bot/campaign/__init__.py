"""The migration campaign: one PR per repository that rewrites its default branch, kept current.

``tree`` rewrites a checkout of the default branch in memory with the repository's own
settings; ``decide`` is the pure choice of what to do with the campaign's branch and PR;
``body`` writes the PR's text and reads back its hidden marker; ``run`` applies the choice
through the ``CampaignGateway`` (the Git Data API and the pulls API: no token reaches a
checkout); ``proof`` dispatches the matrices the rewritten files select with
``--compare base``; ``summary`` merges the results of many repositories into one table.
docs/adopting.md, "A migration campaign", says how an adopter runs it.
"""

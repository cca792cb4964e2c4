"""The PR comment handler: runs on GitHub-hosted jobs (grammar, authorization, dispatch, planning, the report)."""

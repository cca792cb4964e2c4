"""A local stand-in of the GitHub REST API, real webhook payloads, and a pytest fixture.

Use from any test module (imported as a helper of the suite's one helper package,
tests/support/qnn_migrate_tests)::

    from qnn_migrate_tests.github_standin.fixtures import github_standin  # noqa: F401  (registers the fixture)

    def test_x(github_standin):
        gh = github_standin           # a GitHubStandIn, already listening on 127.0.0.1
        gh.add_pull(7, author="alice", head_sha="a" * 40, files=["backends/..."])
        gh.add_user("maint", role="write")
        ...                           # point PyGithub at gh.base_url with token gh.TOKEN
        assert gh.comments(7)[-1].body.startswith("<!-- qnn-bot:results -->")

The fixture seeds one repository (``REPO``), the bot's token (``TOKEN`` acting as
``BOT_LOGIN``) and the device workflow, and fails the test if any request did not
validate against the vendored REST description. ``payloads`` builds webhook events from
the vendored real examples. See docs/bot.md, "Testing".
"""

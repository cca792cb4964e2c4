"""host_config.py: the runner host's config file, its kinds and capabilities, and its errors."""

from __future__ import annotations

import pytest

from qnn_migrate.bot.lab import host_config


def test_host_config_kinds_and_capabilities() -> None:
    config = host_config.loads(
        'kind = "x86-simulator"\nqnn_executor_runner = "/srv/r"\n'
        '[unsupported_tests]\n"TestQNNFloatingPointUtils" = "no etdump"\n'
    )
    assert config.simulator and config.runnable_backends == ("htp",)
    assert config.unsupported("TestQNNFloatingPointUtils.test_x") == "no etdump"
    assert host_config.HostConfig().runnable_backends == ("htp", "gpu", "lpai")
    for text, words in (
        ('kind = "emulator"', "kind must be one of"),
        ('kind = "x86-simulator"\n[[devices]]\nserial = "A1"\nsoc = "SM8650"', "no [[devices]]"),
        ('[unsupported_tests]\n"rm -rf" = "x"', "[unsupported_tests]"),
        ('backends = ["--host=evil"]', "backends must be"),
    ):
        with pytest.raises(host_config.HostConfigError, match=None) as caught:
            host_config.loads(text)
        assert words in str(caught.value)


def test_the_host_model_is_long_lived_unless_the_config_says_ephemeral() -> None:
    assert host_config.HostConfig().lifetime == host_config.LONG_LIVED
    config = host_config.loads(
        'integrity_manifest = "/var/lib/qnn-seal/manifest.json"\n'
        'trusted_paths = ["/srv/actions-runner", "/srv/qnn/wheels"]\n'
        '[job_env]\nrequirements = "/etc/qnn-runner/requirements.txt"\n'
        'find_links = "/srv/qnn/wheels"\n'
    )
    assert config.job_env == host_config.JobEnv(
        "/etc/qnn-runner/requirements.txt", "python3", "/srv/qnn/wheels"
    )
    assert host_config.loads('lifetime = "ephemeral"').lifetime == host_config.EPHEMERAL
    for text, words in (
        ('lifetime = "forever"', "lifetime must be one of"),
        ('[job_env]\nbase_python = "/usr/bin/python3"', "needs requirements"),
        ('[job_env]\nrequirements = "r.txt"\npip = "x"', "[job_env] takes"),
        ('trusted_paths = ["relative/dir"]', "absolute paths"),
    ):
        with pytest.raises(host_config.HostConfigError) as caught:
            host_config.loads(text)
        assert words in str(caught.value)


def test_pr_code_runs_as_a_job_user_unless_the_config_says_none() -> None:
    assert host_config.HostConfig().isolation == host_config.JOB_USER
    config = host_config.loads(
        'github_runners = ["lab-1"]\nkeep_processes = ["logwatch"]\nphone_reset = "reboot"\n'
        '[job_users]\nnames = ["qnn-job-1", "qnn-job-2"]\nhome = "/var/lib/qnn-jobs"\n'
        'switch = "sudo"\n'
    )
    assert config.job_users == host_config.JobUsers(
        ("qnn-job-1", "qnn-job-2"), "/var/lib/qnn-jobs", "sudo", "/usr/bin/python3"
    )
    assert config.github_runners == ("lab-1",) and config.keep_processes == ("logwatch",)
    assert config.phone_reset == "reboot"
    assert host_config.loads('isolation = "none"').isolation == host_config.NO_ISOLATION
    for text, words in (
        ('isolation = "container"', "isolation must be one of"),
        ('[job_users]\nnames = []\nhome = "/j"', "names must be a list"),
        ('[job_users]\nnames = ["-rf"]\nhome = "/j"', "names must be a list"),
        ('[job_users]\nnames = ["a", "a"]\nhome = "/j"', "distinct"),
        ('[job_users]\nnames = ["a"]\nhome = "j"', "home must be an absolute"),
        ('[job_users]\nnames = ["a"]\nhome = "/j"\nswitch = "su"', "switch must be one of"),
        ('[job_users]\nnames = ["a"]\nhome = "/j"\nshell = "x"', "[job_users] takes"),
        ('phone_reset = "flash"', "phone_reset must be one of"),
        ('github_runners = ["a b"]', "github_runners must be"),
        ('keep_processes = ["a;b"]', "keep_processes must be"),
    ):
        with pytest.raises(host_config.HostConfigError) as caught:
            host_config.loads(text)
        assert words in str(caught.value)

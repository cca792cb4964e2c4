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

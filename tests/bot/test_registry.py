"""registry.py: the test registry is what the installed ExecuTorch's test_qnn_delegate.py holds."""

from __future__ import annotations

import pytest
from qnn_migrate_tests.bot.support import ROOT, delegate_tests

from qnn_migrate.bot.catalog import Catalog
from qnn_migrate.bot.registry import RegistryError, extract


@pytest.mark.passes  # reads the installed ExecuTorch's harness
def test_registry_file_is_what_the_installed_executorch_generates(catalog: Catalog) -> None:
    regenerated = extract(delegate_tests().read_text("utf-8"), version="1.5.1")
    on_disk = (ROOT / "qnn_migrate" / "bot" / "data" / "test_registry.json").read_text("utf-8")
    assert regenerated.to_json() == on_disk, "run `qnn-migrate matrix registry --from ...`"


def test_registry_extraction_reads_only_module_level_test_classes() -> None:
    source = (
        "class TestA(Base):\n    def test_x(self): ...\n    def helper(self): ...\n"
        "    def test_x(self): ...\n"
        "class Helper:\n    def test_no(self): ...\n"
        "def f():\n    class TestInner:\n        def test_no(self): ...\n"
    )
    reg = extract(source, version="t")
    assert reg.ids() == ("TestA.test_x",)
    with pytest.raises(RegistryError, match="cannot parse"):
        extract("class TestA(:\n", version="t")

"""Shared helper of the import-only stand-ins (test doubles; see README.md beside this file)."""

from __future__ import annotations

from typing import Any


class ImportOnlyStandInError(RuntimeError):
    """An import-only stand-in (a test double) was used for more than importing."""


def standin(qualified_name: str) -> Any:
    """A callable named ``qualified_name`` that raises when called (or when an attribute is read)."""

    class StandIn:
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            raise ImportOnlyStandInError(
                f"{qualified_name} is an import-only test double (tests/doubles/import_standins); "
                "the real package cannot be installed beside the CPU torch here"
            )

        def __getattr__(self, name: str) -> Any:
            return standin(f"{qualified_name}.{name}")

        def __repr__(self) -> str:
            return f"<import-only stand-in {qualified_name}>"

    return StandIn()

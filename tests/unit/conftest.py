"""Fixtures of the unit layer: a mini release written by the test code, never the real release or a server.

``mini`` is a fresh release per test (edit it freely); ``shared_mini`` is one release for the whole session that no
test changes, and ``mini_context`` the advisor's view of it (loaded once). The real-data fixtures are replaced by
ones that fail, so a unit test cannot use them by accident.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from minirelease import MiniRelease, write_mini_release

if TYPE_CHECKING:
    from rlvrambench_hf.advisor.assess.context import Context


@pytest.fixture
def mini(tmp_path: Path) -> MiniRelease:
    return write_mini_release(tmp_path / "mini")


@pytest.fixture(scope="session")
def shared_mini(tmp_path_factory: pytest.TempPathFactory) -> MiniRelease:
    return write_mini_release(tmp_path_factory.mktemp("shared") / "mini")


@pytest.fixture
def snapshot() -> Path:
    pytest.fail("a unit test never reads the real release; use the mini release")


@pytest.fixture
def hub() -> None:
    pytest.fail("a unit test never starts a server")


@pytest.fixture(scope="session")
def mini_context(shared_mini: MiniRelease) -> Context:
    """The advisor's side of the shared mini release, loaded once: its measured records, the references fitted on its
    pool and the per-phase memory model calibrated on its configurations and stage measurements."""
    from rlvrambench_hf.advisor.assess.context import load_context

    return load_context(shared_mini.root)

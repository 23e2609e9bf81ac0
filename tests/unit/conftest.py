"""Fixtures of the unit layer: a mini release written by the test code, never the real release or a server.

``mini`` is a fresh release per test (edit it freely); ``shared_mini`` is one release for the whole session that no
test changes. The real-data fixtures are replaced by ones that fail, so a unit test cannot use them by accident.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from minirelease import MiniRelease, write_mini_release


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

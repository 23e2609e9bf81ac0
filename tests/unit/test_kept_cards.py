"""The dataset cards read before (:data:`rlvrambench_hf.data.tables.kept.CARDS`): a card whose text this user's
store saw read as a mapping is not parsed again, by a fresh source too; a changed card is read anew, and a malformed
one is refused with the same line as without the store; an entry another user could have written is not trusted."""

from __future__ import annotations

from pathlib import Path

import pytest

from rlvrambench_hf.data.sources import base
from rlvrambench_hf.data.sources.resolve import open_source
from rlvrambench_hf.data.tables import kept
from rlvrambench_hf.data.tables.reader import load_table
from rlvrambench_hf.errors import SourceError

pytestmark = pytest.mark.unit


def as_command(call, *args):
    """``call(*args)`` as a command of the command line runs it: what it keeps is written when it succeeds (a Python
    call outside a command keeps nothing)."""
    with kept.written_on_success():
        return call(*args)


def test_a_card_read_before_is_not_parsed_again_and_a_changed_one_is(mini, tmp_path, monkeypatch) -> None:
    store = tmp_path / "kept"
    store.mkdir()
    monkeypatch.setattr(kept, "assets_folder", lambda namespace: store)
    parsed: list[str] = []
    real = base.read_front_matter
    monkeypatch.setattr(base, "read_front_matter", lambda text, *rest: parsed.append(text) or real(text, *rest))
    source = open_source(mini.root)
    as_command(load_table, "outcomes", source)
    as_command(load_table, "configurations", source)  # the same source: checked once
    assert len(parsed) == 1 and source.card_metadata == real(parsed[0], "card")
    (entry,) = store.glob("card-*")
    fresh = open_source(mini.root)  # as the next run would
    assert as_command(load_table, "outcomes", fresh).num_rows == as_command(load_table, "outcomes", source).num_rows
    assert len(parsed) == 1, "a card read before was parsed again"
    assert "card_metadata" not in vars(fresh) and fresh.card_metadata == source.card_metadata  # read when asked for
    card = mini.root / "README.md"
    card.write_text(card.read_text() + "\n")  # another text: read anew
    as_command(load_table, "outcomes", open_source(mini.root))
    assert len(parsed) == 3 and len(list(store.glob("card-*"))) == 2
    entry.chmod(0o666)  # writable by others: never trusted
    card.write_text(card.read_text()[:-1])
    as_command(load_table, "outcomes", open_source(mini.root))
    assert len(parsed) == 4
    card.write_text(card.read_text().replace("---\n", "---\n: [\n", 1))  # malformed YAML, as without the store
    with pytest.raises(SourceError, match="malformed YAML in the dataset card's front matter"):
        as_command(load_table, "outcomes", open_source(mini.root))


def test_a_store_that_cannot_be_written_costs_a_parse_not_an_error(mini, tmp_path: Path, monkeypatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(kept, "assets_folder", lambda namespace: blocker / "kept")
    parsed: list[str] = []
    real = base.read_front_matter
    monkeypatch.setattr(base, "read_front_matter", lambda text, *rest: parsed.append(text) or real(text, *rest))
    for _ in range(2):
        assert load_table("outcomes", open_source(mini.root)).num_rows > 0
    assert len(parsed) == 2

"""Property-based cases of the hostile-input harness (hypothesis): whatever the text, bytes or object, the
formatter keeps a message to one bounded, printable line without credentials, and the readers and the checks of
users' objects either accept the input or raise the package's own error with such a line — never anything else."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvrambench_hf.errors import (
    MESSAGE_LIMIT,
    InputError,
    RLVRAMBenchError,
    first_line,
    one_line,
    quote,
    redact,
    summary,
)

from conftest import SNAPSHOT

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
TEXT = st.text(st.characters(codec=None), max_size=2000)  # every code point, surrogates and controls included
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**60), max_value=10**60),
    st.floats(allow_nan=True, allow_infinity=True),
    TEXT,
    st.binary(max_size=300),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=6),
        st.tuples(inner, inner),
        st.dictionaries(st.one_of(TEXT, st.integers()), inner, max_size=6),
    ),
    max_leaves=20,
)


def bounded(message: str) -> None:
    assert len(message) <= MESSAGE_LIMIT and "\n" not in message and message.isprintable(), message


def refused_cleanly(action) -> object:
    """``action()``'s result, or None when it raised the package's error with a bounded line."""
    try:
        return action()
    except RLVRAMBenchError as exc:
        bounded(str(exc))
        bounded(first_line(exc))
        return None


@SETTINGS
@given(TEXT, st.integers(min_value=20, max_value=400))
def test_one_line_is_bounded_printable_and_idempotent(text: str, limit: int) -> None:
    line = one_line(text, limit)
    assert len(line) <= limit and line.isprintable() and "\n" not in line
    assert one_line(line, limit) == line


@SETTINGS
@given(VALUES)
def test_quote_and_summary_are_bounded_whatever_the_value(value: object) -> None:
    assert len(quote(value)) <= 100 and quote(value).isprintable()
    items = value if isinstance(value, list) else [value]
    assert len(summary(items)) <= 3 * 100 + 30 and summary(items).isprintable()


@SETTINGS
@given(st.from_regex(r"[A-Za-z0-9._~-]{8,30}", fullmatch=True), TEXT)
def test_credentials_never_survive_the_formatter(password: str, noise: str) -> None:
    token = "hf_" + password.replace(".", "a").replace("~", "b").replace("-", "c").replace("_", "d")
    text = f"{noise} http://user:{password}@127.0.0.1:9/x Authorization: Bearer {token} {token} {noise}"
    for line in (one_line(text), str(InputError(text)), redact(text)):
        assert password not in line.replace("user:***", "") and token[3:] not in line


@SETTINGS
@given(TEXT)
def test_an_error_message_is_one_bounded_line_and_keeps_its_fields(message: str) -> None:
    error = InputError(message, path="p", column="c")
    bounded(str(error))
    assert (error.path, error.column) == ("p", "c")


@pytest.fixture(scope="module")
def key():
    from rlvrambench_hf import transfer

    return transfer.cached_scoring_key(SNAPSHOT)


CELLS = st.one_of(TEXT, st.sampled_from(["within_margin", "above_margin", "memory_failure", "", " ", '"', "nan"]))
HEADERS = st.sampled_from(["query_id,predicted_state", "predicted_state,query_id", "query_id", "a,b,c", ""])


@SETTINGS
@given(
    st.one_of(
        st.binary(max_size=3000),
        st.builds(
            # surrogatepass: any lone surrogate of TEXT becomes bytes that are not UTF-8 (surrogateescape only
            # takes \udc80-\udcff and would fail to build the input)
            lambda h, rows: (h + "\n" + "\n".join(",".join(r) for r in rows)).encode("utf-8", "surrogatepass"),
            HEADERS,
            st.lists(st.lists(CELLS, max_size=4), max_size=30),
        ),
    )
)
def test_any_predictions_file_is_scored_or_refused_in_one_line(tmp_path_factory, key, content: bytes) -> None:
    from rlvrambench_hf.transfer import read_predictions, score_predictions

    path = tmp_path_factory.mktemp("p") / "p.csv"
    path.write_bytes(content)
    read = refused_cleanly(lambda: read_predictions(path))
    if read is not None:
        ids, states = read
        refused_cleanly(lambda: score_predictions(key, ids, states))


@SETTINGS
@given(st.binary(max_size=3000))
def test_any_release_table_is_typed_or_refused_in_one_line(content: bytes) -> None:
    from rlvrambench_hf.data.schema.registry import get_spec
    from rlvrambench_hf.data.tables.reader import read_typed_file

    header = (SNAPSHOT / "benchmark/queries.csv").read_bytes().split(b"\n", 1)[0]
    for data in (content, header + b"\n" + content):
        refused_cleanly(lambda data=data: read_typed_file(data, get_spec("transfer_queries"), name="queries.csv"))


@pytest.fixture(scope="module")
def replay_inputs():
    from rlvrambench_hf.admission import load_attempts, load_protocol
    from rlvrambench_hf.admission.attempts import slot_history
    from rlvrambench_hf.admission.protocol import SCREEN

    protocol = load_protocol(SNAPSHOT)
    history = slot_history(a for a in load_attempts(SNAPSHOT) if a.role == SCREEN)
    case = protocol.cases[0]
    return protocol, case, {c.candidate_id: history.get(c.screen_slot_id, []) for c in case.candidates}


class Returns:
    """A policy that returns ``decisions`` and then ``action`` (whatever they are)."""

    name = "returns"

    def __init__(self, decisions: object, action: object) -> None:
        self.decisions, self.action = decisions, action

    def initial_decisions(self, task):
        return self.decisions

    def next_action(self, task, revealed):
        return self.action


@SETTINGS
@given(VALUES, VALUES, st.booleans())
def test_whatever_a_policy_returns_is_checked_before_use(replay_inputs, decisions, action, wrap: bool) -> None:
    from rlvrambench_hf.admission.replay import replay_case

    protocol, case, screens = replay_inputs
    if wrap:  # the candidates themselves, then the generated value as their decision
        decisions = {c: decisions for c in case.candidate_ids}
    replay = refused_cleanly(lambda: replay_case(Returns(decisions, action), protocol, case, 2, screens))
    if replay is not None:
        assert all(type(d) is str for d in replay.decisions.values())


@SETTINGS
@given(st.one_of(VALUES, st.builds(lambda s, p: {"predicted_state": s, "predicted_peak_mib": p}, VALUES, VALUES)))
def test_whatever_an_estimator_predicts_is_checked_before_use(result: object) -> None:
    from rlvrambench_hf.estimation.user import checked_predictions

    checked = refused_cleanly(lambda: checked_predictions(result, 2, "e"))
    if checked is not None:
        assert all(type(s) is str for s in checked["predicted_state"])
        assert all(
            p is None or (type(p) is float and math.isfinite(p) and p >= 0) for p in checked["predicted_peak_mib"]
        )


@SETTINGS
@given(
    st.lists(
        st.dictionaries(
            st.sampled_from(["attempt_id", "attempt_index", "slot_id", "state", "peak_mib", "role", "x"]),
            VALUES,
            max_size=7,
        ),
        max_size=5,
    )
)
def test_any_attempt_records_are_read_or_refused_in_one_line(records: list) -> None:
    from rlvrambench_hf.admission.attempts import attempts_from_records

    refused_cleanly(lambda: attempts_from_records(records, "attempts.json"))


def test_the_property_cases_read_real_files(tmp_path: Path, key) -> None:
    """The strategies reach the scoring: a file made of the real ids is accepted (the properties can fail)."""
    from rlvrambench_hf.transfer import read_predictions, score_predictions

    rows = "".join(f"{q},within_margin\n" for q in key.query_ids.to_pylist())
    (tmp_path / "p.csv").write_text("query_id,predicted_state\n" + rows)
    assert score_predictions(key, *read_predictions(tmp_path / "p.csv"))["overall"]["approved"] == len(key)

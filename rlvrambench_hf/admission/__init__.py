"""The admission panel: budgeted replay of the published rules and of user policies, and admission scoring.

Modules: :mod:`.protocol` and :mod:`.attempts` (typed, validated inputs), :mod:`.truth` (evaluation labels),
:mod:`.policy` (the policy API and the three rules on it), :mod:`.replay` (the charging engine),
:mod:`.scoring` (metrics, sensitivity, summaries), :mod:`.report` (the score file) — all pure — and
:mod:`.api`, which loads a release and offers the entry points below.
"""

from .api import (
    evaluation_truth,
    load_attempts,
    load_protocol,
    policy_inputs,
    read_attempts_file,
    replay_report,
    score_decisions,
)
from .policy import (
    ABSTAIN,
    APPROVE,
    DECISIONS,
    REJECT,
    RULES,
    STOP,
    AdmissionPolicy,
    CandidateView,
    Screen,
    Task,
    load_policy,
    next_in_query_order,
)
from .report import SUMMARY_COLUMNS, build_report, summary_csv

__all__ = [
    "ABSTAIN",
    "APPROVE",
    "DECISIONS",
    "REJECT",
    "RULES",
    "STOP",
    "SUMMARY_COLUMNS",
    "AdmissionPolicy",
    "CandidateView",
    "Screen",
    "Task",
    "build_report",
    "evaluation_truth",
    "load_attempts",
    "load_policy",
    "load_protocol",
    "next_in_query_order",
    "policy_inputs",
    "read_attempts_file",
    "replay_report",
    "score_decisions",
    "summary_csv",
]

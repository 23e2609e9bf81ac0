"""A dependency-free transfer evaluator (standard library only), the speed reference of ``bench_transfer.py``.

It does what ``rlvrambench --source DIR evaluate --predictions F --output S`` does on a local release folder:
verify the two label tables against the release manifest, read the predictions (same tolerance rules), check
exact coverage, and write the same score file. Usage:

    python bench/reference_evaluate.py RELEASE_DIR PREDICTIONS.csv SCORES.json
"""

import csv
import hashlib
import json
import sys
from fractions import Fraction

LABELS = ("within_margin", "above_margin", "memory_failure")
TRACKS = ("model_transfer", "workload_transfer", "gpu_count_transfer", "horizon_transfer")
# the explanatory strings of the score file, copied from rlvrambench_hf.transfer
COST_SCOPE = (
    "source configurations are counted once per scope (overall, track or task); their eligible processes "
    "and recorded attempts are summed over those distinct sources"
)
COST_WARNING = (
    "sources are shared between tasks and tracks, so the costs of different scopes overlap: never add "
    "them up across tracks or tasks"
)
EVALUATION_WARNING = (
    "open descriptive transfer tasks, not a blind leaderboard: the labels are public, queries reuse 94 "
    "target configurations, and pooled accuracy is dominated by the workload track; report recall, "
    "approval precision and approval errors per track"
)


def verified_rows(root, name, manifest):
    path = f"{root}/benchmark/{name}"
    with open(path, "rb") as handle:
        data = handle.read()
    entry = manifest[name] if isinstance(manifest[name], str) else manifest[name]["sha256"]
    if hashlib.sha256(data).hexdigest() != entry:
        sys.exit(f"{name} does not match its digest")
    return list(csv.DictReader(data.decode("utf-8").splitlines()))


def rate(a, b):
    return a / b if b else None


def scope(rows, cost):
    c = [[0] * 3 for _ in range(3)]
    for r in rows:
        c[r["p"]][r["o"]] += 1
    n = len(rows)
    correct = c[0][0] + c[1][1] + c[2][2]
    approved = sum(c[0])
    target = [c[0][j] + c[1][j] + c[2][j] for j in range(3)]
    aw, aa, af = c[0]
    sources = {r["source"] for r in rows}
    return {
        "queries": n,
        "distinct_target_configurations": len({r["target"] for r in rows}),
        "correct_three_state": correct,
        "three_state_accuracy": rate(correct, n),
        "approved": approved,
        "approved_memory_failure": af,
        "approved_above_margin": aa,
        "rejected_within_margin": target[0] - aw,
        "target_within_margin": target[0],
        "target_above_margin": target[1],
        "target_memory_failure": target[2],
        "memory_failure_among_approved": rate(af, approved),
        "above_margin_among_approved": rate(aa, approved),
        "approval_rate_on_memory_failure_targets": rate(af, target[2]),
        "approval_rate_on_above_margin_targets": rate(aa, target[1]),
        "rejection_rate_on_within_margin_targets": rate(target[0] - aw, target[0]),
        "confusion_matrix_predicted_rows_observed_columns": {
            p: {o: c[i][j] for j, o in enumerate(LABELS)} for i, p in enumerate(LABELS)
        },
        "approved_within_margin": aw,
        "within_margin_recall": rate(aw, target[0]),
        "within_margin_approval_precision": rate(aw, approved),
        "distinct_source_configurations": len(sources),
        "eligible_source_processes": sum(cost[s][0] for s in sources),
        "recorded_source_attempts": sum(cost[s][1] for s in sources),
    }


def main(root, predictions_path, output):
    manifest = json.load(open(f"{root}/benchmark/manifest.json"))
    manifest = manifest.get("files", manifest)
    queries = verified_rows(root, "queries.csv", manifest)
    outcomes = {r["configuration_id"]: r for r in verified_rows(root, "outcomes.csv", manifest)}
    with open(predictions_path, encoding="utf-8-sig", newline="") as handle:
        table = [[cell.strip(" \t") for cell in row] for row in csv.reader(handle) if row]
    if not table or table[0] == [] or sorted(table[0]) != ["predicted_state", "query_id"]:
        sys.exit("bad header")
    qi, si = table[0].index("query_id"), table[0].index("predicted_state")
    predicted = {}
    for row in table[1:]:
        if row[si] not in LABELS or row[qi] in predicted:
            sys.exit("bad prediction")
        predicted[row[qi]] = LABELS.index(row[si])
    if set(predicted) != {q["query_id"] for q in queries}:
        sys.exit("predictions do not cover the queries exactly")
    cost = {c: (int(o["eligible_processes"]), int(o["recorded_attempts"])) for c, o in outcomes.items()}
    rows = [
        {
            "task": q["task_id"],
            "track": q["track"],
            "target": q["target_configuration_id"],
            "source": q["source_configuration_id"],
            "p": predicted[q["query_id"]],
            "o": LABELS.index(outcomes[q["target_configuration_id"]]["observed_state"]),
        }
        for q in queries
    ]
    per_task = {}
    for task in sorted({r["task"] for r in rows}):
        members = [r for r in rows if r["task"] == task]
        per_task[task] = {"track": members[0]["track"], **scope(members, cost)}
    per_track = {}
    for track in TRACKS:
        members = [r for r in rows if r["track"] == track]
        if members:
            tasks = [t for t in per_task.values() if t["track"] == track]
            accuracies = [Fraction(t["correct_three_state"], t["queries"]) for t in tasks]
            per_track[track] = {
                **scope(members, cost),
                "tasks": len(tasks),
                "macro_task_three_state_accuracy": float(sum(accuracies) / len(accuracies)),
            }
    scores = {
        "protocol_version": "1.1",
        "selected_track": "all",
        "rate_with_zero_denominator": None,
        "cost_scope": COST_SCOPE,
        "cost_warning": COST_WARNING,
        "evaluation_warning": EVALUATION_WARNING,
        "overall": scope(rows, cost),
        "per_track": per_track,
        "per_task": per_task,
    }
    with open(output, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(scores, indent=2, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main(*sys.argv[1:4])

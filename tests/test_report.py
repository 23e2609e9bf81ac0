"""``rlvrambench report``: the page's content, and that it renders in headless Chromium.

The browser is driven over the DevTools protocol on a pipe (``--remote-debugging-pipe``, file descriptors 3 and
4), so no extra Python package is needed. The rendering tests skip when no Chromium binary is installed
(Debian: ``apt-get install -y chromium``); set ``CHROMIUM`` to use another binary.
"""

from __future__ import annotations

import base64
import fcntl
import html
import json
import os
import re
import select
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from rlvrambench_hf.transfer import TRACKS

from conftest import invoke

CHROMIUM = os.environ.get("CHROMIUM") or next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None or not os.access(CHROMIUM, os.X_OK) or shutil.which("bash") is None,
    reason="headless Chromium (and bash) not found: apt-get install -y chromium, or set CHROMIUM to the binary",
)
FIGURES = ("feasibility", "stages", "admission", "attempts", "estimation")


class Browser:
    """Headless Chromium spoken to over the DevTools protocol on a pipe."""

    def __init__(self, binary: str, profile: Path) -> None:
        to_browser_r, self._out = os.pipe()
        self._in, from_browser_w = os.pipe()
        # the browser's ends are moved above 9 so that the redirections to 3 and 4 cannot clobber each other
        # (bash, unlike dash, can redirect descriptors above 9)
        to_browser_r, from_browser_w = (_above_nine(fd) for fd in (to_browser_r, from_browser_w))
        script = f'exec "$0" "$@" 3<&{to_browser_r} 4>&{from_browser_w} {to_browser_r}<&- {from_browser_w}>&-'
        self.process = subprocess.Popen(
            [
                "bash",
                "-c",
                script,
                binary,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-first-run",
                "--remote-debugging-pipe",
                f"--user-data-dir={profile}",
                "--window-size=1280,1600",
            ],
            pass_fds=(to_browser_r, from_browser_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict] = []

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30) -> dict:
        self._next_id += 1
        message = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._out, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._receive(timeout)
            if reply.get("id") == self._next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]
            self.events.append(reply)

    def wait_for(self, method: str, timeout: float = 30) -> dict:
        for event in self.events:
            if event.get("method") == method:
                return event
        while True:
            event = self._receive(timeout)
            self.events.append(event)
            if event.get("method") == method:
                return event

    def _receive(self, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self._in], [], [], left)[0]:
                raise TimeoutError("no answer from Chromium")
            chunk = os.read(self._in, 1 << 20)
            if not chunk:
                raise EOFError("Chromium closed the DevTools pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except (OSError, RuntimeError, TimeoutError, EOFError):
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        os.close(self._in)
        os.close(self._out)


def _above_nine(fd: int) -> int:
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


def render(page: Path, screenshot: Path, profile: Path) -> dict:
    """Open ``page``; return its title, images (natural sizes) and console errors, and save a screenshot."""
    browser = Browser(CHROMIUM, profile)
    try:
        target = browser.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = browser.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            browser.send(f"{domain}.enable", session=session)
        browser.send("Page.navigate", {"url": page.resolve().as_uri()}, session=session)
        browser.wait_for("Page.loadEventFired")
        probe = (
            "JSON.stringify({title: document.title, images: Array.from(document.images, i => "
            "({id: i.id, complete: i.complete, width: i.naturalWidth, height: i.naturalHeight})), "
            "leaderboard: Array.from(document.querySelectorAll('#leaderboard tbody tr'), r => "
            "Array.from(r.cells, c => c.innerText)), leaderboardVisible: (() => { const t = "
            "document.querySelector('#leaderboard table'); return !!t && t.getBoundingClientRect().height > 0; })()})"
        )
        state = json.loads(
            browser.send("Runtime.evaluate", {"expression": probe, "returnByValue": True}, session=session)["result"][
                "value"
            ]
        )
        shot = browser.send("Page.captureScreenshot", {"format": "png"}, session=session)
        screenshot.write_bytes(base64.b64decode(shot["data"]))
        errors = []
        for event in browser.events:
            method, params = event.get("method"), event.get("params", {})
            if method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
                errors.append(" ".join(str(a.get("value", a.get("description"))) for a in params.get("args", [])))
            elif method == "Runtime.exceptionThrown":
                errors.append(params["exceptionDetails"].get("text", "exception"))
            elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
                errors.append(params["entry"].get("text", ""))
        state["console_errors"] = errors
        return state
    finally:
        browser.close()


@pytest.fixture(scope="module")
def report_dir(snapshot: Path, tmp_path_factory) -> Path:
    output = tmp_path_factory.mktemp("report") / "site"
    result = invoke("--source", str(snapshot), "report", "--output", str(output))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"wrote {output / 'index.html'}"
    return output


def test_report_content(report_dir: Path) -> None:
    assert sorted(p.name for p in report_dir.iterdir()) == [
        "admission.png",
        "attempts.png",
        "estimation.png",
        "feasibility.png",
        "index.html",
        "stages.png",
    ]
    page = (report_dir / "index.html").read_text(encoding="utf-8")
    text = html.unescape(re.sub(r"<[^>]+>", " ", page))
    assert "<title>RLVRAMBench report</title>" in page
    # the three figures are embedded (self-contained) and identical to the PNGs beside the page
    for name in FIGURES:
        match = re.search(rf'<img id="{name}" src="data:image/png;base64,([^"]+)"', page)
        assert match, name
        assert base64.b64decode(match.group(1)) == (report_dir / f"{name}.png").read_bytes()
    assert 'src="http' not in page and "<script" not in page
    # configs table, with the absent config reported, not hidden
    assert re.search(r"stage_measurements\s+measured\s+3,434", text)
    assert re.search(r"configuration_feasibility\s+configurations\s+not in this revision", text)
    # transfer reference rules per track: GPU-count figures of the published benchmark
    assert re.search(r"gpu_count_transfer\s+source_label\s+36\s+20\s+0\.5556\s+26\s+20\s+2\s+4\s+6", text)
    assert re.search(r"gpu_count_transfer\s+always_reject\s+36\s+4\s+0\.1111\s+0\s+0\s+0\s+0", text)
    # leaderboard: per track by recall, grouped where intervals overlap, approval errors beside the recall
    board = text[text.index("Leaderboard") : text.index("Admission replay")]
    assert re.search(r"gpu_count_transfer\s+1\s+always_approve\s+1\s+1\s+1\s+4\s+6", board)
    assert re.search(r"gpu_count_transfer\s+2\s+source_label\s+0\.7692\s+0\.\d+\s+0\.\d+\s+2\s+4", board)
    assert re.search(r"horizon_transfer\s+no interval: not grouped\s+source_label\s+1\s+null\s+null", board)
    # admission summary: direct screening recall 0, 0.25, 0.75, 1 at budgets 0..3
    for budget, recall in enumerate(("0", "0.25", "0.75", "1")):
        assert re.search(rf"direct_screen\s+{budget}\s+4\s+4\s+{re.escape(recall)}\s", text)
    # follow-up scores: the larger-model figures
    assert "larger_model  6 of 12 configurations resolved (full-panel coverage 0.5)" in text
    assert re.search(r"donor_copy\s+12\s+6\s+6\s+3\s+0\s+0\s+6\s+0", text)
    assert re.search(r"component_regression\s+3\s+0\s+3\s+0\s+0\s+6\s+0\s+0", text)
    assert "expanded_host  3 of 6 configurations resolved" in text
    # estimator comparison: the regression approves 4 memory-failing Granite settings; logistic rejects 6 usable Qwen
    assert re.search(r"granite33\s+component_regression\s+22\s+30\s+22\s+4\s+4\s+0", text)
    assert re.search(r"qwen25\s+logistic\s+21\s+16\s+16\s+0\s+0\s+6", text)


@needs_chromium
def test_report_renders_in_headless_chromium(report_dir: Path, tmp_path: Path) -> None:
    screenshot = tmp_path / "report.png"
    state = render(report_dir / "index.html", screenshot, tmp_path / "profile")
    assert state["title"] == "RLVRAMBench report"
    assert [i["id"] for i in state["images"]] == list(FIGURES)
    for image in state["images"]:
        assert image["complete"] and image["width"] > 300 and image["height"] > 200, image
    assert state["console_errors"] == []
    assert screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and screenshot.stat().st_size > 10_000
    # the leaderboard is on the page as the browser lays it out: the three rules on each of the four tracks
    board = state["leaderboard"]
    assert state["leaderboardVisible"] and len(board) == 3 * len(TRACKS)
    gpu = [row for row in board if row[0] == "gpu_count_transfer"]
    assert [row[2] for row in gpu] == ["always_approve", "source_label", "always_reject"]
    assert gpu[1][1] == "2" and gpu[1][3] == "0.7692" and gpu[1][6:] == ["2", "4"]
    assert all(row[1] == "no interval: not grouped" for row in board if row[0] == "horizon_transfer")


@needs_chromium
def test_render_check_detects_broken_images_and_console_errors(tmp_path: Path) -> None:
    page = tmp_path / "broken.html"
    page.write_text(
        "<!DOCTYPE html><html><head><title>broken</title></head><body>"
        '<img id="gone" src="missing.png"><script>console.error("boom")</script></body></html>'
    )
    state = render(page, tmp_path / "broken.png", tmp_path / "profile")
    assert state["title"] == "broken"
    assert state["images"][0]["width"] == 0
    assert "boom" in state["console_errors"]


def test_report_refuses_a_file_as_output_folder(snapshot: Path, tmp_path: Path) -> None:
    existing = tmp_path / "taken"
    existing.write_text("keep")
    result = invoke("--source", str(snapshot), "report", "--output", str(existing))
    assert result.returncode == 2 and "is not a directory" in result.stderr
    assert existing.read_text() == "keep"


def test_report_with_a_bad_policy_writes_nothing(snapshot: Path, tmp_path: Path) -> None:
    output = tmp_path / "site"
    result = invoke("--source", str(snapshot), "report", "--output", str(output), "--policy", "no_such_module:X")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert not output.exists()


def page_text(folder: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", (folder / "index.html").read_text(encoding="utf-8")))


def test_report_provenance_overall_row_track_order_and_confusion(report_dir: Path) -> None:
    from rlvrambench_hf import __version__

    text = page_text(report_dir)
    head = text[: text.index("Configs")]
    assert re.search(rf"package\s+rlvrambench-hf {re.escape(__version__)}\s", head)
    assert re.search(r"source\s+\S+hub \(local folder\)", head)
    assert re.search(r"commit\s+none: a local folder has no commit", head)
    assert re.search(r"run at\s+20\d\d-\d\d-\d\d \d\d:\d\d:\d\d UTC", head)
    transfer = text[text.index("Transfer tasks") : text.index("Admission replay")]
    # the overall row first, then the tracks in the documented order (not alphabetical)
    assert re.search(
        r"overall\s+source_label\s+400\s+352\s+0\.88\s+249\s+235\s+2\s+12\s+14\s+0\.9438\s+0\.9438", transfer
    )
    firsts = [transfer.index(f" {scope} ") for scope in ("overall", *TRACKS)]
    assert firsts == sorted(firsts)
    # confusion matrices: predicted rows, observed columns, overall then each track
    page = (report_dir / "index.html").read_text(encoding="utf-8")
    block = page[page.index("<h3>source_label</h3>") :]
    rows = re.findall(r"<tr><th>(WM|AM|MF)</th>((?:<td>\d+</td>)+)</tr>", block)[:3]
    cells = {label: [int(v) for v in re.findall(r"\d+", row)] for label, row in rows}
    assert cells["WM"][:3] == [235, 12, 2] and cells["MF"][:3] == [2, 10, 92]
    assert cells["WM"][9:12] == [20, 4, 2]  # gpu_count_transfer: 20 right approvals, 4 AM, 2 MF approved
    assert all(len(v) == 15 for v in cells.values())
    # admission: total attempts = target + donor; source_copy's recall at budget 0 rests on 36 donor attempts
    admission = text[text.index("Admission replay") : text.index("Follow-up studies")]
    assert re.search(r"source_copy\s+0\s+4\s+4\s+1\s+6\s+6\s+0\s+0\s+0\s+36\s+36\s+36", admission)
    assert re.search(r"direct_screen\s+3\s+4\s+4\s+1\s+6\s+6\s+0\s+0\s+12\s+0\s+12\s+12", admission)


@pytest.fixture(scope="module")
def user_report_dir(snapshot: Path, tmp_path_factory) -> Path:
    """A report with the user's transfer predictions (always_approve, as JSON Lines) and larger-model
    predictions (everything approved) beside the reference ones, and a plan file (the release's 12 larger-model
    targets) answered by the advisor."""
    from rlvrambench_hf.followup import study_rows
    from rlvrambench_hf.transfer import load_transfer_tables, reference_predictions

    work = tmp_path_factory.mktemp("user-report")
    tables = load_transfer_tables(snapshot)
    mine = reference_predictions(tables["queries"], tables["outcomes"], "always_approve")
    (work / "mine.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in reversed(mine.to_pylist())), encoding="utf-8"
    )
    ids = [r["configuration_id"] for r in study_rows("larger_model", snapshot)]
    (work / "larger.csv").write_text(
        "configuration_id,predicted_state\n" + "".join(f"{c},within_margin\n" for c in ids)
    )
    output = work / "site"
    result = invoke(
        "--source",
        str(snapshot),
        "report",
        "--output",
        str(output),
        "--predictions",
        str(work / "mine.jsonl"),
        "--followup-predictions",
        f"larger_model={work / 'larger.csv'}",
        "--planned",
        str(snapshot / "benchmark/estimation/targets.csv"),
    )
    assert result.returncode == 0, result.stderr
    return output


def test_report_shows_your_predictions_beside_the_reference_rules(user_report_dir: Path) -> None:
    text = page_text(user_report_dir)
    head = text[: text.index("Configs")]
    assert re.search(r"transfer predictions\s+\S+mine\.jsonl", head)
    assert re.search(r"larger_model predictions\s+\S+larger\.csv", head)
    transfer = text[text.index("Transfer tasks") : text.index("Admission replay")]
    for scope in ("overall", *TRACKS):  # your row equals always_approve's in every scope
        approve = re.search(rf"{scope}\s+always_approve((?:\s+\S+){{10}})", transfer)
        user = re.search(rf"{scope}\s+user((?:\s+\S+){{10}})", transfer)
        assert approve and user and approve.group(1).split() == user.group(1).split(), scope
    assert "<h3>user</h3>" in (user_report_dir / "index.html").read_text(encoding="utf-8")
    board = text[text.index("Leaderboard") : text.index("Admission replay")]
    assert re.search(r"gpu_count_transfer\s+1\s+always_approve\s+1\s+1\s+1\s+4\s+6", board)
    assert re.search(r"gpu_count_transfer\s+1\s+user\s+1\s+1\s+1\s+4\s+6", board)  # your row beside them
    followup = text[text.index("Follow-up studies") :]
    larger, expanded = followup.split("expanded_host")[0], followup.split("expanded_host")[1]
    assert re.search(r"user\s+12\s+6\s+6\s+3\s+0\s+0\s+6\s+0", larger)  # as donor copy: everything approved
    assert not re.search(r"\suser\s", expanded.split("Your planned runs")[0])


def test_report_gives_the_verdict_of_each_planned_run(user_report_dir: Path) -> None:
    text = page_text(user_report_dir)
    assert re.search(r"planned runs\s+\S+targets\.csv", text[: text.index("Configs")])
    advice = text[text.index("Your planned runs: will they fit?") :]
    assert re.search(r"est-qwen25-7b-gsm8k-c2-2gpu\s+memory_failure\s+measured\s+est-qwen25-7b-gsm8k-c2-2gpu", advice)
    assert re.search(r"est-qwen25-7b-gsm8k-c2-4gpu\s+unresolved\s+measured", advice)
    assert advice.count(" measured ") >= 12 and "Measurement first" in advice


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--followup-predictions", "nope=x.csv"], "unknown study 'nope'"),
        (["--followup-predictions", "larger_model"], "must be STUDY=FILE"),
        (["--predictions", "{W}/bad.csv"], "bad.csv is separated by ';' (semicolons), not commas"),
    ],
)
def test_report_refuses_bad_user_inputs_and_writes_nothing(snapshot: Path, tmp_path: Path, argv, message) -> None:
    (tmp_path / "bad.csv").write_text("query_id;predicted_state\nq;within_margin\n")
    output = tmp_path / "site"
    argv = [a.replace("{W}", str(tmp_path)) for a in argv]
    result = invoke("--source", str(snapshot), "report", "--output", str(output), *argv)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1
    assert message in result.stderr
    assert not output.exists()


def test_provenance_of_a_hub_source_names_revision_and_commit(hub) -> None:
    import datetime as dt

    from rlvrambench_hf.data.sources.resolve import open_source
    from rlvrambench_hf.reporting.report import provenance

    when = dt.datetime(2026, 9, 15, 12, 30, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    items = dict(provenance(open_source("kobzaond/RLVRAMBench", "main"), "9.9.9", when, {"policy": None}))
    assert items == {
        "package": "rlvrambench-hf 9.9.9",
        "source": "kobzaond/RLVRAMBench (Hub repository)",
        "revision": "main",
        "commit": hub.first_commit,
        "run at": "2026-09-15 10:30:00 UTC",
    }

"""The generated corpus of the hostile-input harness (``test_hostile_inputs.py``): inputs made on disk by the tests,
never stored. ``FILE_INPUTS`` apply to every file a user names (built from a valid file of its kind); the other
lists are the inputs of one kind: ``TEXT_INPUTS`` (an option's text), ``SOURCE_INPUTS`` (a local release folder),
``CODE_INPUTS`` (a policy or an estimator named as ``file.py:attr``)."""

from __future__ import annotations

import gzip
import json
import os
import random
import shutil
import socket
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from conftest import SNAPSHOT


@dataclass
class Prepared:
    """An input made on disk: the argument, what feeds standard input or a FIFO, and the files it must not change."""

    arg: str
    stdin: str | None = None
    fifo: list[str] | None = None
    files: list[Path] = field(default_factory=list)


Maker = Callable[[Path, bytes, str], Prepared]  # (the input's own folder, a valid file of the kind, its suffix)


@dataclass(frozen=True)
class Input:
    name: str
    make: Maker
    expect: str = "refused"  # refused (exit 2), accepted (0), either (0 or 2), interrupt (130)
    formats: tuple[str, ...] = ("csv", "json", "yaml")  # the file formats it applies to


def write(folder: Path, content: bytes, suffix: str, name: str = "input") -> Prepared:
    path = folder / f"{name}{suffix}"
    path.write_bytes(content)
    return Prepared(str(path), files=[path])


def data(transform: Callable[[bytes], bytes]) -> Maker:
    return lambda folder, base, suffix: write(folder, transform(base), suffix)


def line_edit(change: Callable[[str], str]) -> Maker:
    """The valid file with its second line changed."""

    def make(folder: Path, base: bytes, suffix: str) -> Prepared:
        lines = base.decode("utf-8").split("\n")
        lines[1] = change(lines[1])
        return write(folder, "\n".join(lines).encode("utf-8", "surrogateescape"), suffix)

    return make


def special(make_path: Callable[[Path, str], Path | str]) -> Maker:
    return lambda folder, base, suffix: Prepared(str(make_path(folder, suffix)))


def fifo(folder: Path, base: bytes, suffix: str) -> Prepared:
    content = folder / "content"
    content.write_bytes(base)
    path = folder / f"pipe{suffix}"
    os.mkfifo(path)
    return Prepared(str(path), fifo=[str(path), str(content)])


def from_stdin(folder: Path, base: bytes, suffix: str) -> Prepared:
    content = folder / "content"
    content.write_bytes(base)
    return Prepared("/dev/stdin", stdin=str(content))


def unix_socket(folder: Path, suffix: str) -> Path:
    path = folder / f"s{suffix}"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))
    return path


def loop(folder: Path, suffix: str) -> Path:
    (folder / f"a{suffix}").symlink_to(folder / f"b{suffix}")
    (folder / f"b{suffix}").symlink_to(folder / f"a{suffix}")
    return folder / f"a{suffix}"


def broken_link(folder: Path, suffix: str) -> Path:
    (folder / f"l{suffix}").symlink_to(folder / "nothing")
    return folder / f"l{suffix}"


def a_folder(folder: Path, suffix: str) -> Path:
    (folder / f"d{suffix}").mkdir()
    return folder / f"d{suffix}"


def repeated_rows(base: bytes) -> bytes:
    header, _, rest = base.partition(b"\n")
    return header + b"\n" + rest * max(1, (8 << 20) // max(len(rest), 1))


_RANDOM = random.Random(19)
FILE_INPUTS = [
    Input("empty", data(lambda b: b"")),
    Input("blank lines", data(lambda b: b"\n \n\t\r\n")),
    Input("truncated in the middle", data(lambda b: b[: len(b) // 2])),
    Input("cut inside a UTF-8 character", data(lambda b: b + "é".encode()[:1])),
    Input("Latin-1 bytes", data(lambda b: b + b"caf\xe9,\xe9t\xe9\n")),
    Input("UTF-16 with a byte-order mark", data(lambda b: b.decode().encode("utf-16")), "either"),
    Input("UTF-8 byte-order mark and CRLF", data(lambda b: b"\xef\xbb\xbf" + b.replace(b"\n", b"\r\n")), "either"),
    Input("NUL bytes", data(lambda b: b[:40] + b"\x00\x00" + b[40:])),
    Input("random binary", data(lambda b: _RANDOM.randbytes(4096))),
    Input("gzip-compressed", data(lambda b: gzip.compress(b, mtime=0)), "either"),
    Input("one line of 17 MiB", data(lambda b: b"x" * (17 << 20))),
    Input("a 5 MB value", data(lambda b: b + b"q" * 5_000_000 + b",within_margin\n")),
    Input("8 MB of repeated rows", data(repeated_rows), "either"),
    Input("zero-width space", line_edit(lambda line: "\u200b" + line)),
    Input("terminal escape sequence", line_edit(lambda line: "\x1b[31m" + line + "\x1b[0m")),
    Input("right-to-left override", line_edit(lambda line: "\u202e" + line)),
    Input("no-break space", line_edit(lambda line: line.replace(",", "\xa0,", 1).replace(": ", ":\xa0", 1)), "either"),
    Input("unclosed quote", line_edit(lambda line: '"' + line)),
    Input("line break inside a quoted cell", line_edit(lambda line: '"a\nb",' + line), "either"),
    Input("ragged row", data(lambda b: b + b"a,b,c,d,e\n")),
    Input("repeated content", data(lambda b: b + b), "either"),
    Input("an undecodable byte", line_edit(lambda line: line + "\udcff")),
    Input("missing file", special(lambda f, s: f / f"nothing{s}")),
    Input("a directory", special(a_folder)),
    Input("symbolic-link loop", special(loop)),
    Input("broken symbolic link", special(broken_link)),
    Input("a socket", special(unix_socket)),
    Input("/dev/null", special(lambda f, s: "/dev/null")),
    Input("/dev/zero", special(lambda f, s: "/dev/zero")),
    Input("unreadable (/proc/self/mem)", special(lambda f, s: "/proc/self/mem")),
    Input("name with control characters", special(lambda f, s: f / f"no\u200bthing\x1b[2J{s}")),
    Input("a 5,000-character path", special(lambda f, s: f / ("n" * 5000 + s))),
    Input("a FIFO fed the valid content", fifo, "accepted", ("csv", "json")),
    Input("/dev/stdin fed the valid content", from_stdin, "accepted", ("csv", "json")),
]


def text(value: str, expect: str = "refused") -> Input:
    return Input(f"text {value[:24]!r}", lambda folder, base, suffix: Prepared(value), expect)


TEXT_INPUTS = [
    text(""),
    text(","),
    text("-1"),
    text("1,1"),
    text("9" * 5000),
    text("1,\u200b2"),
    text("²"),
    text("0x10"),
    text("1e3"),
    text("nan"),
    text("1;2"),
    text("\x1b[2J"),
    text(" 3 ", "accepted"),
]


def release_copy(damage: Callable[[Path], list[Path]]) -> Maker:
    """A copy of the release whose files ``damage`` changes (and returns); the manifest is emptied, so that the
    reader, not the digest check, meets the damage."""

    def make(folder: Path, base: bytes, suffix: str) -> Prepared:
        root = folder / "release"
        shutil.copytree(SNAPSHOT, root)
        for path in root.rglob("*"):
            path.chmod(0o755 if path.is_dir() else 0o644)
        (root / "benchmark/manifest.json").write_text('{"files": {}}')
        changed = damage(root)
        return Prepared(str(root), files=[p for p in changed if p.is_file() and not p.is_symlink()])

    return make


def replace(relpath: str, change: Callable[[Path], None]) -> Callable[[Path], list[Path]]:
    def damage(root: Path) -> list[Path]:
        path = root / relpath
        change(path)
        return [path]

    return damage


def content(new: Callable[[bytes], bytes]) -> Callable[[Path], None]:
    return lambda path: path.write_bytes(new(path.read_bytes()))


def become(kind: str) -> Callable[[Path], None]:
    def change(path: Path) -> None:
        path.unlink()
        if kind == "fifo":
            os.mkfifo(path)
        elif kind == "loop":
            path.symlink_to(path.name)
        else:
            path.mkdir()

    return change


QUERIES, CARD, MANIFEST = "benchmark/queries.csv", "README.md", "benchmark/manifest.json"
SOURCE_INPUTS = [
    Input("an empty folder", lambda folder, base, suffix: Prepared(str(folder))),
    Input("card: binary", release_copy(replace(CARD, content(lambda b: _RANDOM.randbytes(2000))))),
    Input("card: Latin-1", release_copy(replace(CARD, content(lambda b: b.replace(b"---", b"---\n# caf\xe9", 1))))),
    Input("card: a directory", release_copy(replace(CARD, become("folder")))),
    Input("card: a FIFO", release_copy(replace(CARD, become("fifo")))),
    Input("card: YAML that is not a mapping", release_copy(replace(CARD, content(lambda b: b"---\n- a\n---\n")))),
    Input("card: unclosed YAML", release_copy(replace(CARD, content(lambda b: b"---\nconfigs: [\n---\n")))),
    Input(
        "card: deeply nested YAML", release_copy(replace(CARD, content(lambda b: b"---\na: " + b"[" * 50000 + b"\n")))
    ),
    Input("table: binary", release_copy(replace(QUERIES, content(lambda b: _RANDOM.randbytes(5000))))),
    Input("table: one line of 17 MiB", release_copy(replace(QUERIES, content(lambda b: b + b"x" * (17 << 20))))),
    Input("table: invisible header", release_copy(replace(QUERIES, content(lambda b: b"\xe2\x80\x8b" + b)))),
    Input(
        "table: terminal escapes", release_copy(replace(QUERIES, content(lambda b: b.replace(b",", b"\x1b[1m,", 3))))
    ),
    Input("table: ragged rows", release_copy(replace(QUERIES, content(lambda b: b + b"a,b\n")))),
    Input("table: NUL bytes", release_copy(replace(QUERIES, content(lambda b: b[:200] + b"\x00" + b[200:]))), "either"),
    Input("table: a FIFO", release_copy(replace(QUERIES, become("fifo")))),
    Input("table: a symbolic-link loop", release_copy(replace(QUERIES, become("loop")))),
    Input("manifest: not JSON", release_copy(replace(MANIFEST, content(lambda b: b"{oops")))),
    Input("manifest: nested 100,000 deep", release_copy(replace(MANIFEST, content(lambda b: b"[" * 100000)))),
    Input("manifest: a huge integer", release_copy(replace(MANIFEST, content(lambda b: b"1" * 10000)))),
    Input(
        "manifest: an entry outside the release",
        release_copy(replace(MANIFEST, content(lambda b: json.dumps({"../../x": "0" * 64}).encode()))),
    ),
]


POLICY = """
import os, sys, time

class Policy:
    name = "hostile"

    def initial_decisions(self, task):
        return {c: "abstain" for c in task.candidate_ids}

    def next_action(self, task, revealed):
        return "stop"
"""
ESTIMATOR = """
import os, sys, time

class Estimator:
    def fit(self, training):
        pass

    def predict(self, targets):
        return ["within_margin"] * len(targets)
"""


def code(base: str, name: str, body: str, attr: str = "Hostile", expect: str = "refused", prelude: str = "") -> Input:
    """A ``file.py:attr`` spec whose module is ``base`` plus ``body`` (a subclass, indented by the caller)."""

    def make(folder: Path, unused: bytes, suffix: str) -> Prepared:
        path = folder / "usercode.py"
        path.write_text(prelude + base + "\n" + body + "\n")
        return Prepared(f"{path}:{attr}", files=[path])

    return Input(name, make, expect)


def method(cls: str, parent: str, name: str, args: str, lines: str) -> str:
    indented = "\n".join("        " + line for line in lines.strip().split("\n"))
    return f"class {cls}({parent}):\n    def {name}(self, {args}):\n{indented}\n"


def policy(name: str, hook: str, lines: str, expect: str = "refused", extra: str = "") -> Input:
    args = "task" if hook == "initial_decisions" else "task, revealed"
    return code(POLICY, name, extra + method("Hostile", "Policy", hook, args, lines), expect=expect)


def estimator(name: str, hook: str, lines: str, expect: str = "refused", extra: str = "") -> Input:
    args = "training" if hook == "fit" else "targets"
    return code(ESTIMATOR, name, extra + method("Hostile", "Estimator", hook, args, lines), expect=expect)


EVIL = """
class Evil(str):
    def __eq__(self, other):
        return True
    def __hash__(self):
        return 0
    def __repr__(self):
        raise RuntimeError("repr")
    __str__ = __repr__

class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("str")

class SlowMapping(dict):
    def __len__(self):
        time.sleep(60)
        return 0
"""


def spec(value: str) -> Input:
    return Input(f"spec {value[:30]!r}", lambda folder, base, suffix: Prepared(value))


CODE_INPUTS = {
    "policy": [
        code(POLICY, "a valid policy", "", "Policy", "accepted"),
        policy("initial_decisions raises", "initial_decisions", "raise RuntimeError('boom')"),
        policy("raises SystemExit(0)", "initial_decisions", "raise SystemExit(0)"),
        policy("raises SystemExit()", "next_action", "sys.exit()"),
        policy("raises KeyboardInterrupt", "next_action", "raise KeyboardInterrupt", "interrupt"),
        policy("calls os._exit(0)", "initial_decisions", "os._exit(0)"),
        policy("crashes (SIGSEGV)", "next_action", "import ctypes\nctypes.string_at(0)"),
        policy("sleeps past the limit", "next_action", "time.sleep(60)"),
        policy("spins past the limit", "next_action", "while True:\n    pass"),
        policy("holds the GIL past the limit", "next_action", "return 10 ** (10 ** 8)"),
        policy(
            "swallows every exception",
            "next_action",
            "while True:\n    try:\n        time.sleep(60)\n    except BaseException:\n        pass",
        ),
        policy("returns 100 MB of text", "next_action", "return 'x' * 100_000_000"),
        policy(
            "returns 2,000,000 unknown candidates",
            "initial_decisions",
            "d = {f'k{i}': 'approve' for i in range(2_000_000)}\nd.update({c: 'abstain' for c in "
            "task.candidate_ids})\nreturn d",
        ),
        policy("returns None", "initial_decisions", "return None"),
        policy("returns a list", "next_action", "return ['stop']"),
        policy("returns a str that equals everything", "next_action", "return Evil('nope')", extra=EVIL),
        policy("returns a str subclass of 'stop'", "next_action", "return Evil('stop')", "accepted", EVIL),
        policy(
            "returns a mapping whose len hangs",
            "initial_decisions",
            "return SlowMapping({c: 'abstain' for c in task.candidate_ids})",
            extra=EVIL,
        ),
        policy(
            "decides for invisible ids",
            "initial_decisions",
            "return {c + '\\u200b': 'approve' for c in task.candidate_ids}",
        ),
        policy("raises 50 MB with line breaks", "next_action", "raise ValueError('a\\n\\x1b[2J' * 25_000_000)"),
        policy("raises an exception that cannot be shown", "next_action", "raise Unprintable()", extra=EVIL),
        policy("requests a candidate twice", "next_action", "return task.candidate_ids[0]"),
        code(POLICY, "a name that is not text", "class Hostile(Policy):\n    name = 42\n"),
        code(POLICY, "a name of 10,000 characters", "class Hostile(Policy):\n    name = 'n' * 10000\n"),
        code(
            POLICY,
            "uses_donors raises",
            "class Hostile(Policy):\n    @property\n    def uses_donors(self):\n        raise OSError('no')\n",
        ),
        code(POLICY, "import raises", "raise ImportError('cannot')"),
        code(POLICY, "import raises SystemExit(0)", "raise SystemExit(0)"),
        code(POLICY, "import sleeps past the limit", "time.sleep(60)"),
        code(POLICY, "constructor raises", "class Hostile(Policy):\n    def __init__(self):\n        sys.exit(3)\n"),
        code(POLICY, "no methods", "class Hostile:\n    pass\n"),
        spec("no_such_module_anywhere:Policy"),
        spec("usercode.py"),
        spec(":"),
        spec("x" * 10000 + ":P"),
        spec("\x1b[2J\u200b.py:P"),
    ],
    "estimator": [
        code(ESTIMATOR, "a valid estimator", "", "Estimator", "accepted"),
        estimator("fit raises", "fit", "raise RuntimeError('no fit')"),
        estimator("predict raises SystemExit(0)", "predict", "raise SystemExit(0)"),
        estimator("predict raises KeyboardInterrupt", "predict", "raise KeyboardInterrupt", "interrupt"),
        estimator("fit calls os._exit(3)", "fit", "os._exit(3)"),
        estimator("fit sleeps past the limit", "fit", "time.sleep(60)"),
        estimator("predict returns too few labels", "predict", "return ['within_margin']"),
        estimator("predict returns invisible labels", "predict", "return ['within_margin\\u200b'] * len(targets)"),
        estimator("predict returns None", "predict", "return None"),
        estimator("predict returns a generator", "predict", "return (x for x in ['within_margin'])"),
        estimator(
            "non-finite peaks",
            "predict",
            "return {'predicted_state': ['within_margin'] * len(targets), 'predicted_peak_mib': [float('inf')] * "
            "len(targets)}",
        ),
        estimator(
            "NaN peaks (no peak)",
            "predict",
            "return {'predicted_state': ['within_margin'] * len(targets), 'predicted_peak_mib': [float('nan')] * "
            "len(targets)}",
            "accepted",
        ),
        estimator(
            "negative peaks",
            "predict",
            "return {'predicted_state': ['above_margin'] * len(targets), 'predicted_peak_mib': [-5.0] * len(targets)}",
        ),
        estimator(
            "peaks beyond any number",
            "predict",
            "return {'predicted_state': ['above_margin'] * len(targets), 'predicted_peak_mib': [10 ** 400] * "
            "len(targets)}",
        ),
        estimator(
            "peaks that are booleans",
            "predict",
            "return {'predicted_state': ['above_margin'] * len(targets), 'predicted_peak_mib': [True] * len(targets)}",
        ),
        estimator("predict returns a table without labels", "predict", "return {'labels': []}"),
        estimator("predict returns evil strings", "predict", "return [Evil('x')] * len(targets)", extra=EVIL),
        code(ESTIMATOR, "import raises SystemExit(1)", "sys.exit(1)"),
        code(ESTIMATOR, "no predict method", "class Hostile:\n    def fit(self, training):\n        pass\n"),
    ],
}


def record(content_bytes: bytes | None, kind: str = "file") -> Maker:
    """A folder whose release.json holds ``content_bytes`` (None: no record), or is a folder / FIFO."""

    def make(folder: Path, base: bytes, suffix: str) -> Prepared:
        root = folder / "rel"
        root.mkdir()
        path = root / "release.json"
        if kind == "folder":
            path.mkdir()
        elif content_bytes is not None:
            path.write_bytes(content_bytes)
        return Prepared(str(root), files=[path] if content_bytes is not None else [])

    return make


RELEASE_INPUTS = [
    Input("no release.json", record(None)),
    Input("release.json: not JSON", record(b"{")),
    Input("release.json: a list", record(b"[]")),
    Input("release.json: nested 100,000 deep", record(b"[" * 100000)),
    Input("release.json: a 10,000-digit number", record(b"9" * 10000)),
    Input("release.json: binary", record(_RANDOM.randbytes(300))),
    Input("release.json: a folder", record(b"", "folder")),
    Input("release.json: no files", record(b'{"format": "rlvrambench-hf-release/1", "files": 3}')),
    Input("not a folder", lambda folder, base, suffix: write(folder, b"x", ".txt")),
]


def setting(old: str, new: str, expect: str = "refused") -> Input:
    """A valid planned configuration with one setting written ``new`` instead of ``old``."""
    return Input(f"planned {new!r}", data(lambda b: b.replace(old.encode(), new.encode(), 1)), expect)


PLANNED_INPUTS = [
    setting("vllm_gpu_memory_utilization: 0.6", "vllm_gpu_memory_utilization: .nan"),
    setting("vllm_gpu_memory_utilization: 0.6", "vllm_gpu_memory_utilization: .inf"),
    setting("vllm_gpu_memory_utilization: 0.6", "vllm_gpu_memory_utilization: 1.5"),
    setting("gpu_count: 2", "gpu_count: -2"),
    setting("gpu_count: 2", "gpu_count: 0"),
    setting("gpu_count: 2", "gpu_count: two"),
    setting("gpu_count: 2", "gpu_count: true"),
    setting("gpu_count: 2", "gpu_count: [2]"),
    setting("max_model_len: 3072", "max_model_len: 99999999999999999999999"),
    setting("max_model_len: 3072", "max_model_len: 9223372036854775808"),
    setting("train_batch_size: 32", "train_batch_size: 1e400"),
    setting("model_id: ", "model_id: \u200b"),
]

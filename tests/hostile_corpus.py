"""The generated corpus of the hostile-input harness (``test_hostile_inputs.py``): inputs made on disk by the tests,
never stored. ``FILE_INPUTS`` apply to every file a user names (built from a valid file of its kind) whose format
is among the input's ``formats`` (``csv``, ``json``, ``yaml``, ``sh``: a VERL launch script); the other lists are
the inputs of one kind: ``TEXT_INPUTS`` (an option's text), ``SOURCE_INPUTS`` (a local release folder),
``CODE_INPUTS`` (a policy or an estimator named as ``file.py:attr``), ``RELEASE_INPUTS`` (a release folder to
verify, diff or publish), and the settings of one kind of file: ``PLANNED_INPUTS``, ``SCRIPT_INPUTS``,
``VERL_YAML_INPUTS``, ``TRL_INPUTS``, ``SCORE_INPUTS``. ``OUTPUT_INPUTS`` put a command's outputs where nothing can
be written (a read-only file system, a full one: tmpfs mounts, made where the tests may mount them)."""

from __future__ import annotations

import dataclasses
import gzip
import json
import os
import random
import re
import shutil
import socket
import struct
import subprocess
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
    outputs: Path | None = None  # the folder the command's outputs go to, instead of the case's own
    skip: str | None = None  # why this case cannot be made here
    signal: dict | None = None  # {"name": "TERM", "processes": N}: the command is killed once N processes run below it
    options: list[str] = field(default_factory=list)  # options added after the target's own (a later one wins)
    unprivileged: bool = False  # the command runs without the right to read others' files (root: no DAC capability)


Maker = Callable[[Path, bytes, str], Prepared]  # (the input's own folder, a valid file of the kind, its suffix)


@dataclass(frozen=True)
class Input:
    name: str
    make: Maker
    expect: str = "refused"  # refused (exit 2), accepted (0), either (0 or 2), interrupt (130), killed (by a signal)
    formats: tuple[str, ...] = ("csv", "json", "yaml", "sh")  # the file formats it applies to
    seconds: float | None = None  # the most the command may take (an input that costs quadratic time)
    prints: bool = False  # a success may print (a bounded excerpt of what user code printed) on standard error
    hidden: str | None = None  # text that must appear in no output (a value from the environment)


#: The formats of data files, for the inputs that have no meaning in a launch script (a shell script has no cells,
#: rows or `key: value` separators: a line of commas, or text after the last line, is a command the advisor skips).
DATA = ("csv", "json", "yaml")


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


def alias_bomb() -> bytes:
    """A few hundred bytes of YAML whose aliases expand to 10 * 5 ** 11 values."""
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [*a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}, *a{i - 1}]" for i in range(1, 12)]
    return ("\n".join(lines) + "\n").encode()


def sparse(size: int) -> Maker:
    """The valid file, then NUL bytes up to ``size`` (a sparse file: it takes no disk space)."""

    def make(folder: Path, base: bytes, suffix: str) -> Prepared:
        prepared = write(folder, base, suffix)
        with open(prepared.arg, "r+b") as handle:
            handle.truncate(size)
        prepared.files = []  # not digested: reading 2 GiB to compare it would be the test's cost
        return prepared

    return make


_MIB_OF_ROWS = b"q1,within_margin\n" * 65536


def gzip_members(count: int) -> Callable[[bytes], bytes]:
    """The valid file gzip-compressed, followed by ``count`` gzip members of 1 MiB of rows each."""
    return lambda base: gzip.compress(base, mtime=0) + gzip.compress(_MIB_OF_ROWS, 9, mtime=0) * count


def zstd_bomb(base: bytes) -> bytes:
    """About 800 KB of zstd frames that decompress to tens of GiB."""
    import pyarrow as pa

    codec = pa.Codec("zstd", 19)
    frame = codec.compress(_MIB_OF_ROWS * 64, asbytes=True)
    return codec.compress(base, asbytes=True) + frame * (800_000 // len(frame))


def _varint(number: int) -> bytes:
    out = bytearray()
    while True:
        low, number = number & 0x7F, number >> 7
        out.append(low | (0x80 if number else 0))
        if not number:
            return bytes(out)


def declared_rows(base: bytes) -> bytes:
    """A small Parquet file whose footer declares 2**40 rows (its row counts rewritten, its length fixed)."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = 1237  # a count whose encoding occurs only where rows are counted
    buffer = io.BytesIO()
    pq.write_table(pa.table({"a": [f"q{i}" for i in range(rows)]}), buffer, write_statistics=False)
    data = buffer.getvalue()
    length = struct.unpack("<I", data[-8:-4])[0]
    footer = data[-8 - length : -8].replace(_varint(rows << 1), _varint(2**40 << 1))
    return data[: -8 - length] + footer + struct.pack("<I", len(footer)) + b"PAR1"


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
    Input("a 5 MB value", data(lambda b: b + b"q" * 5_000_000 + b",within_margin\n"), formats=DATA),
    Input("8 MB of repeated rows", data(repeated_rows), "either"),
    Input("zero-width space", line_edit(lambda line: "\u200b" + line)),
    Input("terminal escape sequence", line_edit(lambda line: "\x1b[31m" + line + "\x1b[0m")),
    Input("right-to-left override", line_edit(lambda line: "\u202e" + line)),
    Input(
        "no-break space",
        line_edit(lambda line: line.replace(",", "\xa0,", 1).replace(": ", ":\xa0", 1)),
        "either",
        DATA,
    ),
    Input("unclosed quote", line_edit(lambda line: '"' + line)),
    Input("line break inside a quoted cell", line_edit(lambda line: '"a\nb",' + line), "either", DATA),
    Input("ragged row", data(lambda b: b + b"a,b,c,d,e\n"), formats=DATA),
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
    Input("a FIFO fed the valid content", fifo, "accepted"),
    Input("/dev/stdin fed the valid content", from_stdin, "accepted"),
    Input("nested 100,000 deep", data(lambda b: b"[" * 100_000 + b"]" * 100_000), formats=("json", "yaml")),
    Input("a YAML alias bomb", data(lambda b: alias_bomb()), formats=("yaml",)),
    # memory: refused by a stated bound before anything is materialised
    Input("a 2 GiB file (sparse)", sparse(2 << 30), seconds=20),
    Input("gzip that decompresses to 512 MiB", data(gzip_members(512)), formats=("csv",), seconds=20),
    Input("an 800 KB zstd bomb", data(zstd_bomb), formats=("csv",), seconds=20),
    Input("a Parquet footer declaring 2**40 rows", data(declared_rows), formats=("csv",), seconds=20),
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


THREAD = "import threading\nthreading.Thread(target=time.sleep, args=(3600,)).start()"
ABSTAIN = "return {c: 'abstain' for c in task.candidate_ids}"


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
        code(POLICY, "import calls os._exit(0)", "os._exit(0)"),
        code(POLICY, "import starts a thread that never ends", THREAD),
        code(POLICY, "import forks a sleeping process", "if os.fork() == 0:\n    time.sleep(3600)"),
        policy("a forked copy also returns", "initial_decisions", "os.fork()\n" + ABSTAIN),
        policy("forks a process that sleeps", "next_action", "if os.fork() == 0:\n    time.sleep(3600)\nreturn 'stop'"),
        policy("leaves a thread running", "initial_decisions", THREAD + "\n" + ABSTAIN),
        policy("allocates 8 GiB", "initial_decisions", "return bytearray(8 << 30)"),
        Input(
            "prints 10 MiB per call",
            policy("", "initial_decisions", "sys.stdout.write('x' * (10 << 20))\n" + ABSTAIN).make,
            "accepted",
            prints=True,
        ),
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
        code(ESTIMATOR, "import calls os._exit(0)", "os._exit(0)"),
        code(ESTIMATOR, "import starts a thread that never ends", THREAD),
        estimator("fit forks a sleeping process", "fit", "if os.fork() == 0:\n    time.sleep(3600)"),
        estimator("predict leaves a thread running", "predict", THREAD + "\nreturn ['within_margin'] * len(targets)"),
        estimator("fit allocates 8 GiB", "fit", "bytearray(8 << 30)"),
        code(ESTIMATOR, "no predict method", "class Hostile:\n    def fit(self, training):\n        pass\n"),
    ],
}


# ---- contained user code (issue 38, items 1 and 5): escapes, stops, secrets, forged output, pickled replies, disk,
# a killed command, escape sequences. Each attack is written once and generated for every user-code kind (a policy's
# initial_decisions, an estimator's fit), so every policy and estimator target meets it. An attack that the
# containment stops fails with one line (``refused``); one whose effect must simply not be seen is ``accepted``.

#: Secrets in the environment of every command of the harness (test_hostile_inputs.harness_env): user code must not
#: find them, and no output may show them.
SECRETS = {
    "HF_TOKEN": "hf_" + "HarnessSecretToken" * 2,
    "HUGGING_FACE_HUB_TOKEN": "hf_" + "HarnessLegacyToken" * 2,
    "MY_SERVICE_TOKEN": "svc-harness-secret-0123456789",
    "OPENAI_API_KEY": "sk-harness-secret-key-0123456789",
    "AWS_ACCESS_KEY_ID": "AKIAHARNESSSECRET001",
    "AWS_SECRET_ACCESS_KEY": "harness/aws/secret/access/key/0123456789",
    "DB_PASSWORD": "harness-db-password-0123",
    "SOME_SECRET": "harness-some-secret-0123",
    "GOOGLE_APPLICATION_CREDENTIALS": "/harness/secret/credentials.json",
    "PIP_INDEX_URL": "https://user:harness-url-password@pypi.example/simple",
}
#: What user code writes where the command's own output might be: it must never appear on standard output.
FORGED = "FORGED result line"
#: A file the command would create if a child's reply ran code in it (unpickled): it must never appear.
PWNED = "PWNED"
_CONTAINED_PRELUDE = f"""
import ctypes, os, pickle, signal, subprocess, sys, tempfile, time

SECRET_VALUES = {sorted(SECRETS.values())!r}


def _ancestors():
    # the processes above this one that run the command's code (the harness driver, python -m rlvrambench_hf)
    found, pid = [], os.getppid()
    while pid > 1:
        try:
            cmdline = open(f"/proc/{{pid}}/cmdline", "rb").read()
            parent = int(open(f"/proc/{{pid}}/stat").read().rpartition(")")[2].split()[1])
        except (OSError, ValueError, IndexError):
            break
        if b"hostile_driver" in cmdline or b"rlvrambench_hf" in cmdline:
            found.append(pid)
        pid = parent
    return found


def _refused(result, what):
    if result != 0:
        raise PermissionError(ctypes.get_errno(), what + " refused")


LIBC = ctypes.CDLL(None, use_errno=True)
"""
#: Attacks as method bodies (the hook's own return follows): name -> (lines, expectation).
_ATTACKS = {
    "forks; the fork starts a session and clears its death signal": (
        "if os.fork() == 0:\n    os.setsid()\n    LIBC.prctl(1, 0, 0, 0, 0)\n    time.sleep(3600)\n    os._exit(0)",
        "refused",
    ),
    "double-forks through libc (no Python fork hooks) into a new session": (
        "if LIBC.fork() == 0:\n    LIBC.setsid()\n    if LIBC.fork() == 0:\n        LIBC.prctl(1, 0, 0, 0, 0)\n"
        "        LIBC.sleep(3600)\n    LIBC._exit(0)\ntime.sleep(0.5)",
        "refused",
    ),
    "starts a program with posix_spawn": ("os.posix_spawn('/bin/sleep', ['sleep', '3600'], {})", "refused"),
    "starts a program in a session of its own": (
        "subprocess.Popen(['sleep', '3600'], start_new_session=True)",
        "refused",
    ),
    "starts a daemon through the shell (setsid, &)": (
        "subprocess.run(['sh', '-c', 'setsid sleep 3600 > /dev/null 2>&1 &'])\ntime.sleep(0.5)",
        "refused",
    ),
    "stops its parent and the command (SIGSTOP)": (
        "for pid in _ancestors():\n    os.kill(pid, signal.SIGSTOP)",
        "refused",
    ),
    "suspends its parent and the command (SIGTSTP)": (
        "for pid in _ancestors():\n    os.kill(pid, signal.SIGTSTP)",
        "refused",
    ),
    "stops every thread of the command (tkill)": (
        "for pid in _ancestors():\n    for tid in os.listdir(f'/proc/{pid}/task'):\n"
        "        _refused(LIBC.syscall(200, int(tid), 19), 'tkill')",
        "refused",
    ),
    "traces the command (ptrace attach)": (
        "for pid in _ancestors():\n    _refused(LIBC.ptrace(16, pid, 0, 0), 'ptrace')",
        "refused",
    ),
    "writes the command's memory (/proc/PID/mem)": (
        "for pid in _ancestors():\n    open(f'/proc/{pid}/mem', 'r+b').close()",
        "refused",
    ),
    "looks for secrets in its environment and the command's": (
        "found = [n for n, v in os.environ.items() if v in SECRET_VALUES]\n"
        "for path in ['/proc/self/environ', *(f'/proc/{p}/environ' for p in _ancestors())]:\n"
        "    try:\n        data = open(path, 'rb').read().decode('latin-1')\n    except OSError:\n        continue\n"
        "    found += [path for v in SECRET_VALUES if v in data]\n"
        "import huggingface_hub\nif huggingface_hub.get_token():\n    found.append('huggingface_hub.get_token()')\n"
        "if found:\n    raise RuntimeError('secrets found in ' + ', '.join(sorted(set(found))))",
        "accepted",
    ),
    "writes forged result lines to every descriptor, the terminal and the command's output": (
        "import stat\nline = (" + repr(FORGED) + " + '\\n').encode()\nfor fd in range(1024):\n    try:\n"
        "        if not stat.S_ISSOCK(os.fstat(fd).st_mode):\n            os.write(fd, line)\n"
        "    except OSError:\n        pass\n"
        "for path in ['/dev/tty', *(f'/proc/{p}/fd/{n}' for p in _ancestors() for n in (1, 2))]:\n    try:\n"
        "        with open(path, 'wb') as handle:\n            handle.write(line)\n    except OSError:\n        pass\n"
        "print(" + repr(FORGED) + ")",
        "prints",
    ),
    "answers with a pickle whose __reduce__ runs code in the command": (
        "import multiprocessing.connection as mc\nclass Boom:\n    def __reduce__(self):\n"
        "        return (exec, ("
        + repr(f"import sys; sys.stdout.write({FORGED!r} + '\\n'); sys.stdout.flush(); open({PWNED!r}, 'w').close()")
        + ",))\n"
        "payload = pickle.dumps(('ok', Boom()))\nsend = mc.Connection.send_bytes\n"
        "mc.Connection.send_bytes = lambda self, *args, **kwargs: send(self, payload)\n"
        "mc.Connection.send = lambda self, obj: send(self, payload)",
        "refused",
    ),
    "fills its working folder with one file": (
        "with tempfile.NamedTemporaryFile(delete=False) as handle:\n    for _ in range(1024):\n"
        "        handle.write(b'x' * (1 << 20))",
        "refused",
    ),
    "fills its working folder with many files": (
        "folder = tempfile.mkdtemp()\nfor i in range(512):\n"
        "    with open(os.path.join(folder, f'f{i}'), 'wb') as handle:\n        handle.write(b'x' * (1 << 20))",
        "refused",
    ),
    "writes beside its own module": (
        "with open(os.path.join(os.path.dirname(__file__), 'big.bin'), 'wb') as handle:\n"
        "    handle.write(b'x' * (1 << 20))",
        "refused",
    ),
    "prints escape sequences, a bell, C1 controls and bidi overrides": (
        "sys.stdout.write('\\x1b[2J\\x1b[31mred\\x07 bell \\x9b31m c1 \\u202e bidi \\r carriage\\n')",
        "prints",
    ),
}
#: The same module patched at import: its very first message ("step", "ready") is the pickle.
_PICKLED_AT_IMPORT = _ATTACKS["answers with a pickle whose __reduce__ runs code in the command"][0]
#: A hook that leaves three escaped processes (a spawned program, a new session, a fork in its own session) and then
#: waits, for the commands killed by a signal: the command, its keeper, the child and these three run below it.
_ESCAPES_THEN_WAITS = (
    "os.posix_spawn('/bin/sleep', ['sleep', '3600'], {})\n"
    "subprocess.Popen(['sleep', '3600'], start_new_session=True)\n"
    "if os.fork() == 0:\n    os.setsid()\n    LIBC.prctl(1, 0, 0, 0, 0)\n    time.sleep(3600)\n    os._exit(0)\n"
    "time.sleep(3600)"
)
_KILLED = {"TERM": "killed", "HUP": "killed", "KILL": "killed", "INT": "interrupt"}
#: Per user-code kind: its base module, the hook an attack goes in, the hook's parameters and its own return.
_KINDS = {
    "policy": (POLICY, "initial_decisions", "task", ABSTAIN, "Policy"),
    "estimator": (ESTIMATOR, "fit", "training", "return None", "Estimator"),
}


def contained_attack(kind: str, name: str, lines: str, expect: str) -> Input:
    base, hook, args, ending, parent = _KINDS[kind]
    body = method("Hostile", parent, hook, args, lines + "\n" + ending)
    prints = expect == "prints"
    made = code(_CONTAINED_PRELUDE + base, f"contained: {name}", body, expect="accepted" if prints else expect)
    return dataclasses.replace(made, prints=prints)


def killed_by(kind: str, signal_name: str) -> Input:
    """The command killed by ``signal_name`` while its user code waits, having started three escaped processes."""
    base, hook, args, ending, parent = _KINDS[kind]
    body = method("Hostile", parent, hook, args, _ESCAPES_THEN_WAITS + "\n" + ending)
    made = code(_CONTAINED_PRELUDE + base, "", body)

    def make(folder: Path, unused: bytes, suffix: str) -> Prepared:
        prepared = made.make(folder, unused, suffix)
        prepared.signal = {"name": signal_name, "processes": 5}
        prepared.options = ["--timeout", "120"]  # the signal, not the time limit, ends the command
        return prepared

    return Input(f"contained: the command killed by SIG{signal_name} while user code waits", make, _KILLED[signal_name])


def estimator_named(name: str, value: str, spec: Callable[[str], str], expect: str = "accepted") -> Input:
    """An estimator given a NAME (or an argument shown in its default name) holding ``value``, printed in the
    table: escaped, never raw."""

    def make(folder: Path, unused: bytes, suffix: str) -> Prepared:
        path = folder / "usercode.py"
        extra = "\n\nclass Named(Estimator):\n    def __init__(self, label=None):\n        self.label = label\n"
        path.write_text(ESTIMATOR + extra)
        return Prepared(spec(f"{path}:Named"), files=[path])

    return Input(f"estimator {name}", make, expect)


_ESCAPED_VALUES = {
    "an escape sequence": "\x1b[2J\x1b[31mred",
    "a bell": "ding\x07",
    "a C1 control (CSI)": "c1\x9b31m",
    "a right-to-left override": "\u202eevil",
    "a zero-width space": "zero\u200bwidth",
}
for _kind in _KINDS:
    CODE_INPUTS[_kind] += [contained_attack(_kind, n, lines, expect) for n, (lines, expect) in _ATTACKS.items()]
    CODE_INPUTS[_kind].append(
        code(
            _CONTAINED_PRELUDE + _KINDS[_kind][0] + "\n" + _PICKLED_AT_IMPORT,
            "contained: a pickle whose __reduce__ runs code, sent at import",
            "",
            _KINDS[_kind][4],
        )
    )
    CODE_INPUTS[_kind] += [killed_by(_kind, signal_name) for signal_name in _KILLED]
CODE_INPUTS["policy"] += [
    code(POLICY, f"a name with {what}", f"class Hostile(Policy):\n    name = {value!r}\n")
    for what, value in _ESCAPED_VALUES.items()
]
CODE_INPUTS["estimator"] += [
    estimator_named(f"NAME with {what}", value, lambda target, value=value: f"{value}={target}")
    for what, value in _ESCAPED_VALUES.items()
] + [
    estimator_named(f"argument with {what}", value, lambda target, value=value: f"{target},label={value}")
    for what, value in _ESCAPED_VALUES.items()
]


def record(content_bytes: bytes | None, kind: str = "file") -> Maker:
    """A folder whose release.json holds ``content_bytes`` (None: no record), or is a folder, a FIFO or a sparse
    file of 3 GB."""

    def make(folder: Path, base: bytes, suffix: str) -> Prepared:
        root = folder / "rel"
        root.mkdir()
        path = root / "release.json"
        if kind == "folder":
            path.mkdir()
        elif kind == "fifo":
            os.mkfifo(path)
        elif kind == "sparse":
            with open(path, "wb") as handle:
                handle.truncate(3 << 30)
        elif content_bytes is not None:
            path.write_bytes(content_bytes)
        return Prepared(str(root), files=[path] if content_bytes is not None else [])

    return make


_BUILT: list[Path] = []


def built_release(relpath: str, kind: str) -> Maker:
    """A copy of a release built from the snapshot (once per process) whose file ``relpath`` became ``kind``."""

    def make(folder: Path, base: bytes, suffix: str) -> Prepared:
        if not _BUILT:
            import atexit
            import tempfile

            from rlvrambench_hf.release.build import build_release

            where = Path(tempfile.mkdtemp(prefix="hostile-release-"))
            atexit.register(shutil.rmtree, where, ignore_errors=True)
            _BUILT.append(build_release(where / "rel", "9.9.9", SNAPSHOT).folder)
        root = folder / "rel"
        shutil.copytree(_BUILT[0], root)
        become(kind)(root / relpath)
        return Prepared(str(root))

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
    Input("release.json: a FIFO", record(None, "fifo")),
    Input("release.json: a sparse file of 3 GB", record(None, "sparse")),
    Input("a built release whose croissant.json is a FIFO", built_release("croissant.json", "fifo")),
    Input("a built release whose card is a FIFO", built_release("README.md", "fifo")),
    Input(
        "a built release whose Parquet file is a FIFO",
        built_release("data/eligible_runs/measured-00000-of-00001.parquet", "fifo"),
    ),
]


def edited(old: str, new: str) -> Maker:
    """The valid file with its first ``old`` written ``new`` (``old`` must be in it: a changed base fails loudly)."""

    def change(base: bytes) -> bytes:
        assert old.encode() in base, f"{old!r} is not in the valid file"
        return base.replace(old.encode(), new.encode(), 1)

    return data(change)


def edit(name: str, old: str, new: str, expect: str = "refused") -> Input:
    return Input(name, edited(old, new), expect)


def setting(old: str, new: str, expect: str = "refused") -> Input:
    """A valid planned configuration with one setting written ``new`` instead of ``old``."""
    return edit(f"planned {new!r}", old, new, expect)


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


def script_with(extra: str, content: bytes) -> Maker:
    """The valid launch script beside a file ``extra`` (relative to the script's folder) holding ``content``, or a
    folder when ``content`` is empty."""

    def make(folder: Path, base: bytes, suffix: str) -> Prepared:
        path = folder / extra
        if content:
            path.write_bytes(content)
        else:
            path.mkdir()
        prepared = write(
            folder, base.replace(b"main_ppo", b"main_ppo --config-name " + Path(extra).stem.encode(), 1), suffix
        )
        prepared.files.append(path)
        return prepared

    return make


def repeated_command(times: int) -> Callable[[bytes], bytes]:
    """The script with its trainer command (from ``python3`` to the end) given ``times`` times."""

    def change(base: bytes) -> bytes:
        start = base.index(b"python3 ")
        return base[:start] + base[start:] * times

    return change


def prefixed(text: str) -> Callable[[bytes], bytes]:
    """The script with ``text`` written before it."""
    return lambda base: text.encode() + b"\n" + base


def copies(first: str, line: str, times: int = 15_000) -> str:
    """``first``, then ``line`` (formatted with ``i``) ``times`` times: one line each."""
    return "\n".join([first, *(line.format(i=i) for i in range(times))])


#: A secret the harness's environment holds (``SOME_API_KEY``): no output may show it.
HARNESS_SECRET = "sk-hostile-harness-secret-value"
#: An argument loop over the script's arguments (``--gpus N``, ``--model M``), defaults before it.
ARGUMENT_LOOP = """GPUS=${GPUS:-2}
while [[ $# -gt 0 ]]; do
  case "$1" in
    --gpus) GPUS="$2"; shift 2 ;;
    --model=*) MODEL_PATH="${1#*=}"; shift ;;
    *) echo "unknown option: $1" >&2; exit 1 ;;
  esac
done"""


def doubling(steps: int, arithmetic: bool) -> str:
    """A chain of variables each twice the one before (``A1="A0+A0"``: arithmetic over names; ``A1=$A0$A0``:
    text)."""
    first = "A0=1" if arithmetic else "A0=x"
    rest = [f'A{i}="A{i - 1}+A{i - 1}"' if arithmetic else f"A{i}=$A{i - 1}$A{i - 1}" for i in range(1, steps + 1)]
    return "\n".join([first, *rest])


# VERL launch scripts (the base is ``VERL_SCRIPT`` of test_hostile_inputs.py). A value the script would compute
# when it runs (``$(...)``, backquotes, ``$1``, an unset variable) is an error only in a setting the advisor reads.
SCRIPT_INPUTS = [
    edit("script: an unset $VAR in a setting", "data.train_batch_size=32", "data.train_batch_size=$UNSET_BATCH_SIZE"),
    edit("script: $(cmd) in a setting", "trainer.nnodes=1", "trainer.nnodes=$(hostname | wc -l)"),
    edit("script: backquotes in a setting", "actor_rollout_ref.rollout.n=2", "actor_rollout_ref.rollout.n=`nproc`"),
    edit("script: $1 in a setting", "data.max_prompt_length=1024", "data.max_prompt_length=$1"),
    edit("script: $( never closed", "trainer.nnodes=1", "trainer.nnodes=$(hostname"),
    edit("script: an unclosed quote", 'model.path="$MODEL_PATH"', 'model.path="$MODEL_PATH'),
    # bash runs a command whose last line ends in a continuation (it continues into the end of the file)
    Input("script: a line continuation at the end of the file", data(lambda b: b.rstrip(b"\n") + b" \\"), "accepted"),
    edit("script: nan", "gpu_memory_utilization=0.6", "gpu_memory_utilization=nan"),
    edit("script: inf", "gpu_memory_utilization=0.6", "gpu_memory_utilization=-inf"),
    edit("script: 1e999", "data.max_response_length=2048", "data.max_response_length=1e999"),
    edit("script: 2**70", "data.train_batch_size=32", f"data.train_batch_size={2**70}"),
    edit("script: true as a count", "actor_rollout_ref.rollout.n=2", "actor_rollout_ref.rollout.n=true"),
    edit("script: a list as a count", "trainer.nnodes=1", "trainer.nnodes=[1,2]"),
    edit("script: a zero-width space in a key", "rollout.n=2", "rollout\u200b.n=2"),
    edit("script: a terminal escape in a value", "data.train_batch_size=32", "data.train_batch_size=32\x1b[2J"),
    Input(  # read in linear time, this takes well under a second
        "script: a 1 MB model path",
        edited('model.path="$MODEL_PATH"', "model.path=" + "q" * 1_000_000),
        seconds=5,
    ),
    edit(
        "script: a setting that interpolates itself",
        "max_prompt_length=1024",
        "max_prompt_length='${data.max_prompt_length}'",
    ),
    edit("script: ~key removes a setting read", "trainer.nnodes=1", "trainer.nnodes=1 ~data.train_batch_size"),
    edit(
        "script: a default nested 5,000 deep",
        "GPUS=${GPUS:-2}",
        "GPUS=" + "${GPUS:-" * 5000 + "2" + "}" * 5000,
        "either",
    ),
    edit(
        "script: 100,000 overrides",
        "trainer.nnodes=1",
        "trainer.nnodes=1 " + " ".join(f"+x{i}=1" for i in range(100_000)),
        "either",
    ),
    Input("script: no trainer command", data(lambda b: b"#!/bin/sh\necho hello\n")),
    Input("script: 10,000 trainer commands", data(repeated_command(10_000)), "either"),
    edit("script: --config-name of a missing YAML", "main_ppo", "main_ppo --config-name no_such_config"),
    Input("script: --config-name of a folder", script_with("folder.yaml", b"")),
    Input("script: --config-name of a binary YAML", script_with("binary.yaml", b"\x00\xff" * 100)),
    Input("script: --config-name of a YAML list", script_with("listed.yaml", b"- 1\n- 2\n")),
    # every copy of a variable costs time and memory: the script's whole expansion is bounded (launch.MAX_EXPANDED)
    Input(
        "script: a 60 kB value copied 15,000 times", data(prefixed(copies("B=" + "x" * 60_000, "v{i}=$B"))), seconds=20
    ),
    Input(
        "script: an array of 1,000 words copied into 15,000 arrays",
        data(prefixed(copies("B=(" + " ".join(["x" * 50] * 1000) + ")", 'A{i}=("${{B[@]}}")'))),
        seconds=20,
    ),
    Input("script: an array never closed", data(prefixed("ARGS=(\n  data.train_batch_size=8\n"))),
    Input(
        "script: an array of 5,000 overrides",
        data(
            lambda b: prefixed("MANY=(" + " ".join(f"+x{i}=1" for i in range(5000)) + ")")(
                b.replace(b"trainer.nnodes=1", b'trainer.nnodes=1 "${MANY[@]}"', 1)
            )
        ),  # fmt: skip
        "either",
    ),
    edit("script: an array index of 12 digits", "trainer.nnodes=1", "trainer.nnodes=${A[999999999999]}", "either"),
    # bounded by construction (issue 38): evaluation steps, expansion size, tokens, lines, digits
    Input(
        "script: arithmetic over names that double 64 times",
        data(
            lambda b: prefixed(doubling(64, arithmetic=True))(
                b.replace(b"train_batch_size=32", b"train_batch_size=$((A64))")
            )
        ),  # fmt: skip
        seconds=10,
    ),
    Input("script: text that doubles 30 times", data(prefixed(doubling(30, arithmetic=False))), seconds=10),
    edit("script: 20,000 unclosed ${", "data.train_batch_size=32", "data.train_batch_size=" + "${" * 20_000),
    edit("script: 20,000 unclosed $(", "data.train_batch_size=32", "data.train_batch_size=" + "$(" * 20_000),
    Input(
        "script: 300,000 blank lines before the overrides",
        edited("main_ppo \\\n", "main_ppo \\\n" + "\n" * 300_000),
        seconds=10,
    ),
    Input("script: 300,000 blank lines before the script", data(prefixed("\n" * 300_000)), "accepted", seconds=10),
    Input("script: a loop that never ends when read", data(prefixed("while true; do sleep 60; done")), "accepted"),
    Input("script: 100,000 commands", data(prefixed("echo;" * 100_000)), seconds=10),
    edit("script: an integer of 5,000 digits", "data.train_batch_size=32", "data.train_batch_size=" + "9" * 5000),
    # values from the environment are named, never printed (the harness's environment has these)
    Input(
        "script: an environment value in a setting",
        edited("trainer.nnodes=1", "trainer.nnodes=$HF_ENDPOINT"),
        hidden="127.0.0.1:9",
    ),
    Input(
        "script: a secret of the environment in a setting",
        edited("trainer.nnodes=1", "trainer.nnodes=$SOME_API_KEY"),
        hidden=HARNESS_SECRET,
    ),
    Input(
        "script: a secret of the environment in a name",
        edited('trainer.experiment_name="grpo-', 'trainer.experiment_name="$SOME_API_KEY-'),
        "accepted",
        hidden=HARNESS_SECRET,
    ),
    Input(
        "script: ${oc.env:...} of a secret in a setting",
        edited("trainer.nnodes=1", "trainer.nnodes='${oc.env:SOME_API_KEY}'"),
        hidden=HARNESS_SECRET,
    ),
    Input(
        "script: ${oc.env:...} of the environment in a setting",
        edited("trainer.nnodes=1", "trainer.nnodes='${oc.env:HF_ENDPOINT}'"),
        hidden="127.0.0.1:9",
    ),
    # read as bash runs it, or refused with its line
    Input("script: a launch in a quoted here-document run by bash", data(lambda b: b"bash <<'EOF'\n" + b + b"EOF\n")),
    Input(
        "script: a launch in a here-document that is data",
        data(prefixed("cat <<EOF > notes.txt\npython3 -m verl.trainer.main_ppo data.train_batch_size=1\nEOF")),
        "accepted",
    ),
    edit(
        "script: a negative Ulysses size",
        "trainer.nnodes=1",
        "trainer.nnodes=1 actor_rollout_ref.actor.ulysses_sequence_parallel_size=-2",
    ),  # fmt: skip
    Input("script: an argument loop run without arguments", data(prefixed(ARGUMENT_LOOP)), "accepted"),
]

# VERL config YAML (the base is ``verl_yaml_base`` of test_hostile_inputs.py).
VERL_YAML_INPUTS = [
    edit("verl yaml: .nan", "gpu_memory_utilization: 0.6", "gpu_memory_utilization: .nan"),
    edit("verl yaml: 1.0e+999", "    n: 2", "    n: 1.0e+999"),
    edit("verl yaml: 2**70", "train_batch_size: 32", f"train_batch_size: {2**70}"),
    edit("verl yaml: a string count", "train_batch_size: 32", "train_batch_size: thirty-two"),
    edit("verl yaml: tensor parallelism 3 on 2 GPUs", "tensor_model_parallel_size: 1", "tensor_model_parallel_size: 3"),
    edit("verl yaml: a zero-width space in a key", "    n: 2", "    n\u200b: 2"),
    edit("verl yaml: a list as the model", "path: Qwen/Qwen2.5-3B-Instruct", "path: [a, b]"),
    edit("verl yaml: a Python object tag", "nnodes: 1", "nnodes: !!python/object/apply:os.system ['echo hi']"),
    edit("verl yaml: an interpolation loop", "max_prompt_length: 1024", "max_prompt_length: ${data.max_prompt_length}"),
    edit("verl yaml: an unset oc.env", "max_prompt_length: 1024", "max_prompt_length: ${oc.env:UNSET_HOSTILE_LENGTH}"),
    edit("verl yaml: an unknown resolver", "max_prompt_length: 1024", "max_prompt_length: ${now:%H}"),
    edit("verl yaml: an interpolation to nothing", "max_prompt_length: 1024", "max_prompt_length: ${no.such.key}"),
    Input("verl yaml: a list, not a mapping", data(lambda b: b"- 1\n- 2\n")),
    Input("verl yaml: a scalar, not a mapping", data(lambda b: b"grpo\n")),
    # the defaults list of an uncomposed config is ignored (docs/advisor.md)
    Input(
        "verl yaml: ${oc.env:...} of the environment as a count",
        edited("train_batch_size: 32", "train_batch_size: ${oc.env:HF_ENDPOINT}"),
        hidden="127.0.0.1:9",
    ),
    Input(
        "verl yaml: ${oc.env:...} of a secret",
        edited("train_batch_size: 32", "train_batch_size: ${oc.env:SOME_API_KEY}"),
        hidden=HARNESS_SECRET,
    ),
    edit("verl yaml: a boolean written as 16 (OmegaConf: true)", "hybrid_engine: true", "hybrid_engine: 16", "either"),
    edit("verl yaml: a fork's group size (n_agent)", "    n: 2", "    n: 1\n    n_agent: 2", "either"),
    edit(
        "verl yaml: a negative Ulysses size",
        "    strategy: fsdp",
        "    strategy: fsdp\n    ulysses_sequence_parallel_size: -2",
    ),  # fmt: skip
    edit("verl yaml: an integer of 5,000 digits", "train_batch_size: 32", "train_batch_size: " + "9" * 5000),
    Input(
        "verl yaml: a defaults list naming a missing config",
        data(lambda b: b"defaults:\n- no_such_config\n" + b),
        "accepted",
    ),
]

_TRL_FIELDS = (
    "model_name_or_path='Qwen/Qwen2.5-3B-Instruct', num_processes=2, use_vllm=True, vllm_gpu_memory_utilization=0.6, "
    "max_prompt_length=512, max_completion_length=512, per_device_train_batch_size=8"
)
#: A script that Python decodes as UTF-7 (its cookie): a line that reads as a comment in UTF-8 sets a field.
UTF7_COOKIE = (
    f"# -*- coding: utf-7 -*-\nargs = GRPOConfig({_TRL_FIELDS}, num_generations=2)\n#+AAo-args.num_generations = 4\n"
)
LATER_FIELD = f"args = GRPOConfig({_TRL_FIELDS}, num_generations=2)\nargs.num_generations = 4\n"
DICT_FIELDS = f"args = GRPOConfig(**{{'num_generations': 2}}, {_TRL_FIELDS})\n"
COMPUTED_FIELDS = f"import json\nkw = json.load(open('x.json'))\nargs = GRPOConfig(**kw, {_TRL_FIELDS})\n"
HUGE_FIELD = f"args = GRPOConfig({_TRL_FIELDS}, num_generations={'9' * 5000})\n"


def trl_script(source: str) -> Maker:
    """A TRL training script (read as source, never run) instead of the GRPOConfig YAML."""
    return lambda folder, base, suffix: write(folder, source.encode(), ".py", "train")


def trl_launcher(folder: Path, base: bytes, suffix: str) -> Prepared:
    """The GRPOConfig YAML launched by a shell script: ``accelerate launch --num_processes 2 train.py --config``."""
    config = write(folder, base, suffix, "recipe")
    script = (
        "#!/bin/bash\nNUM_GPUS=2\naccelerate launch --num_processes $NUM_GPUS --num_machines 1 "
        "src/grpo.py --config recipe.yaml\n"
    )
    prepared = write(folder, script.encode(), ".sh", "launch")
    prepared.files += config.files
    return prepared


# TRL GRPOConfig YAML (the base is ``trl_base`` of test_hostile_inputs.py).
TRL_INPUTS = [
    edit("trl: num_generations not dividing the batch", "num_generations: 2", "num_generations: 3"),
    edit("trl: num_processes 0", "num_processes: 2", "num_processes: 0"),
    edit("trl: num_processes 2**70", "num_processes: 2", f"num_processes: {2**70}"),
    edit("trl: .inf utilization", "vllm_gpu_memory_utilization: 0.6", "vllm_gpu_memory_utilization: .inf"),
    edit("trl: utilization 1", "vllm_gpu_memory_utilization: 0.6", "vllm_gpu_memory_utilization: 1"),
    edit("trl: 2**70 batch", "per_device_train_batch_size: 8", f"per_device_train_batch_size: {2**70}"),
    edit("trl: a boolean batch", "per_device_train_batch_size: 8", "per_device_train_batch_size: true"),
    edit("trl: negative prompt length", "max_prompt_length: 512", "max_prompt_length: -1"),
    # TrlParser sets the config's values as defaults, which argparse converts with the field's type
    edit("trl: a quoted length", "max_completion_length: 512", "max_completion_length: '512'", "either"),
    edit("trl: gradient accumulation 0", "gradient_accumulation_steps: 8", "gradient_accumulation_steps: 0"),
    edit("trl: num_generations 0", "num_generations: 2", "num_generations: 0"),
    edit("trl: num_generations -2", "num_generations: 2", "num_generations: -2"),
    edit("trl: a negative batch not dividing", "per_device_train_batch_size: 8", "per_device_train_batch_size: -3"),
    edit("trl: generation_batch_size 0", "max_steps: 200", "max_steps: 200\ngeneration_batch_size: 0"),
    edit("trl: a fractional steps_per_generation", "max_steps: 200", "max_steps: 200\nsteps_per_generation: 0.5"),
    edit("trl: num_machines .nan", "max_steps: 200", "max_steps: 200\nnum_machines: .nan"),
    edit("trl: a list as the model", "model_name_or_path: Qwen/Qwen2.5-3B-Instruct", "model_name_or_path: [a, b]"),
    edit("trl: a zero-width space in a key", "num_generations: 2", "num_generations\u200b: 2"),
    edit("trl: an integer of 5,000 digits", "num_generations: 2", "num_generations: " + "9" * 5000),
    edit("trl: num_machines 0", "max_steps: 200", "max_steps: 200\nnum_machines: 0"),
    edit("trl: num_machines -1", "max_steps: 200", "max_steps: 200\nnum_machines: -1"),
    Input("trl: a script whose encoding cookie changes its code", trl_script(UTF7_COOKIE), "either"),
    Input("trl: a script that sets a field after the config", trl_script(LATER_FIELD), "either"),
    Input("trl: a script with GRPOConfig(**{...})", trl_script(DICT_FIELDS), "either"),
    Input("trl: a script with GRPOConfig(**kwargs)", trl_script(COMPUTED_FIELDS)),
    Input("trl: a script with an integer of 5,000 digits", trl_script(HUGE_FIELD)),
    Input("trl: an accelerate launcher naming the config", trl_launcher, "either"),
    # outside the measured stack, so flagged, not refused (docs/advisor.md: scope flags)
    edit("trl: use_vllm false", "use_vllm: true", "use_vllm: false", "either"),
    edit("trl: vllm_mode server", "vllm_mode: colocate", "vllm_mode: server", "either"),
]


def score_edit(change: Callable[[dict], object]) -> Maker:
    """The valid score file as JSON, changed by ``change`` (which edits it in place, or returns a replacement)."""

    def transform(base: bytes) -> bytes:
        scores = json.loads(base)
        replaced = change(scores)
        return json.dumps(scores if replaced is None else replaced, indent=2, allow_nan=True).encode()

    return data(transform)


def _track(key: str, value: object) -> Callable[[dict], None]:
    return lambda scores: scores["per_track"]["model_transfer"].__setitem__(key, value)


# Transfer score files (the base is ``scores_base`` of test_hostile_inputs.py: evaluate --intervals --output).
SCORE_INPUTS = [
    Input("scores: a list", score_edit(lambda s: [s])),
    Input("scores: no per_track", score_edit(lambda s: s.pop("per_track"))),
    Input("scores: per_track a list", score_edit(lambda s: s.__setitem__("per_track", [1, 2]))),
    Input("scores: a track that is a number", score_edit(lambda s: s["per_track"].__setitem__("model_transfer", 3))),
    Input("scores: a NaN recall", score_edit(_track("within_margin_recall", float("nan")))),
    Input("scores: an infinite recall", score_edit(_track("within_margin_recall", float("inf")))),
    Input("scores: a recall of 7.5", score_edit(_track("within_margin_recall", 7.5))),
    Input("scores: a recall that is text", score_edit(_track("within_margin_recall", "0.9"))),
    Input("scores: a negative count", score_edit(_track("approved_memory_failure", -3))),
    Input("scores: intervals that are text", score_edit(_track("intervals", "wide"))),
    Input(
        "scores: a track named with escapes",
        score_edit(lambda s: s["per_track"].__setitem__("\x1b[2J\u202e", s["per_track"].pop("model_transfer"))),
    ),
]


#: The tmpfs mounts the output inputs made (unmounted by :func:`unmount_all` once a target's cases have run).
MOUNTS: list[Path] = []


def _mount(target: Path, options: str) -> bool:
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)], capture_output=True)
    except OSError:
        return False
    if done.returncode == 0:
        MOUNTS.append(target)
    return done.returncode == 0


def unmount_all() -> None:
    while MOUNTS:
        subprocess.run(["umount", "-l", str(MOUNTS.pop())], capture_output=True)


def read_only(folder: Path) -> Path | None:
    """A folder nothing can be written into: without write permission, or (for root) a read-only tmpfs."""
    target = folder / "read-only"
    target.mkdir()
    target.chmod(0o555)
    if not os.access(target, os.W_OK) or _mount(target, "ro,size=64k"):
        return target
    return None


def full_disk(folder: Path) -> Path | None:
    """A folder on a file system with 4 KiB of room (a tmpfs, where this process may mount one)."""
    target = folder / "full"
    target.mkdir()
    return target if _mount(target, "size=4k") else None


def outputs_in(place: Callable[[Path], Path | None]) -> Maker:
    """The valid input (none for a command that reads none), its outputs in the folder ``place`` makes."""

    def make(folder: Path, base: bytes, suffix: str) -> Prepared:
        prepared = write(folder, base, suffix) if suffix else Prepared("")
        prepared.outputs = place(folder)
        if prepared.outputs is None:
            prepared.skip = "cannot make such a folder here (tmpfs mounts need root)"
        return prepared

    return make


OUTPUT_INPUTS = [
    Input("outputs in a read-only folder", outputs_in(read_only)),
    Input("outputs on a full file system", outputs_in(full_disk), "either"),
]


#: A failure log is text of any shape and size: what cannot be read as text, or at all, or holds none, is refused;
#: anything else is answered (a log without a failure message says so), within the same bounds. The pipes must give
#: the same answer.
_LOG_REFUSED = {
    "empty",
    "blank lines",
    "/dev/null",
    "NUL bytes",
    "random binary",
    "missing file",
    "a directory",
    "symbolic-link loop",
    "broken symbolic link",
    "a socket",
    "/dev/zero",
    "unreadable (/proc/self/mem)",
    "name with control characters",
    "a 5,000-character path",
    "a 2 GiB file (sparse)",
}
_LOG_ACCEPTED = {"a FIFO fed the valid content", "/dev/stdin fed the valid content"}


def _as_log(item: Input) -> Input:
    expect = "refused" if item.name in _LOG_REFUSED else "accepted" if item.name in _LOG_ACCEPTED else "either"
    return dataclasses.replace(item, expect=expect, formats=("log",))


#: Credentials of every common shape a log may hold (made up, of the right form), and the part of each that the
#: output must never show.
LOG_SECRETS = (
    ("https://user:hunter2hunter2@mirror.example/x", "hunter2hunter2"),
    ("hf_" + "a1b2" * 9, "a1b2" * 6),
    ("OPENAI_API_KEY=sk-proj-Q2mX8vR4tY7uI0oP3aS6dF9gH1jK5lZ8", "Q2mX8vR4tY7uI0"),
    ("sk-ant-api03-Wq1Er2Ty3Ui4Op5As6Df7Gh8Jk9-Lz0", "Wq1Er2Ty3Ui4Op"),
    ("ghp_a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8", "a1B2c3D4e5F6g7"),
    ("github_pat_11ABCDEFG0a1B2c3D4e5F6_g7H8i9J0k1L2m3N4o5P6", "0a1B2c3D4e5F6"),
    ("AKIAQ3EGUPD7RKXXN2VB", "UPD7RKXXN2VB"),
    ("aws_secret_access_key=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", "9fJ3kL0pQ2wE5r"),
    ("xoxb-918273645012-9182736450123-QwErTyUiOpAsDfGhJkLzXc", "QwErTyUiOpAsDf"),
    ("WANDB_API_KEY=0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c", "0f1e2d3c4b5a6978"),
    ("AIzaSyD4f5G6h7J8k9L0zXcVbNmQwErTyUiOpAs", "SyD4f5G6h7J8k9"),
    ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJyb290In0.Xk4mQ9vB2nL7pR0sT3wY6zA1cE5gH8jK", "Xk4mQ9vB2nL7pR"),
    ("Authorization: Bearer Pq7Rs8Tu9Vw0Xy1Za2Bc3De4", "Pq7Rs8Tu9Vw0Xy"),
    ("MY_SERVICE_TOKEN=Lq3Wd8Jk2Pz7Xv5Nm1Bc4", "Lq3Wd8Jk2Pz7Xv"),
    ("DB_PASSWORD=Pw0rdPw0rdPw0rd", "Pw0rdPw0rdPw0rd"),
)
#: The secrets on the log's failure line itself (the excerpt the answer quotes) and on a line of their own.
LOG_SECRET = b" ".join(s.encode() for s, _ in LOG_SECRETS) + b"\n"


def log_case(name: str, transform: Callable[[bytes], bytes], seconds: float | None = None) -> Input:
    return Input(f"log: {name}", data(transform), "accepted", ("log",), seconds)


def _with_secrets(base: bytes) -> bytes:
    lines = base.split(b"\n")
    failing = max(i for i, line in enumerate(lines) if b"out of memory" in line)
    lines[failing] += b" " + LOG_SECRET.strip()
    return LOG_SECRET + b"\n".join(lines)


#: A training log's step line: a log of 100 MB is mostly these (the failure at its end).
_STEP = b"(TaskRunner pid=1) step:1 - actor/pg_loss:0.0132 - perf/max_memory_allocated_gb:31.2 - timing_s/gen:41.2\n"


def _large(base: bytes, mib: int = 100) -> bytes:
    return _STEP * (mib * 2**20 // len(_STEP)) + base


def _distinct_memory_lines(base: bytes) -> bytes:
    """40 MiB of distinct lines that all say "memory" and "error" (no two alike, even with digits folded)."""
    rng = random.Random(5)
    words = [f"memory{c} error{c} killed{c} out{c}".encode() for c in "abcdefghijklmnopqrstuvwxyz"]
    lines = [b" ".join(rng.choice(words) + bytes([97 + rng.randrange(26)]) for _ in range(8)) for _ in range(420_000)]
    return b"\n".join(lines) + b"\n" + base


def _wrapped(base: bytes, width: int = 80) -> bytes:
    """Each line cut every ``width`` columns, as a terminal wraps it and a copy from it keeps."""
    return b"\n".join(line[i : i + width] for line in base.split(b"\n") for i in range(0, max(len(line), 1), width))


def _noise(base: bytes) -> bytes:
    """Bytes that are not UTF-8 (a progress bar cut inside a character, a stray escape), no NUL: under 5%."""
    noise = bytes(_RANDOM.randrange(0x80, 0x100) for _ in range(40))
    return base[:200] + noise + base[200:]


def large_from_stdin(folder: Path, base: bytes, suffix: str) -> Prepared:
    content = folder / "content"
    content.write_bytes(_large(base))
    return Prepared("-", stdin=str(content))


def large_fifo(folder: Path, base: bytes, suffix: str) -> Prepared:
    return fifo(folder, _large(base), suffix)


LOG_INPUTS = [
    *(_as_log(i) for i in FILE_INPUTS if "sh" in i.formats),
    log_case("secrets of every shape", _with_secrets),
    log_case("the OOM sentence 2,000 times", lambda b: b * 2000, seconds=20),
    log_case("an OOM sentence without numbers", lambda b: b"torch.OutOfMemoryError: CUDA out of memory.\n"),
    log_case("figures beyond any number", lambda b: b.replace(b"5.75 GiB", b"9" * 400 + b" GiB")),
    log_case("wrapped by the terminal at 80 columns", _wrapped),
    log_case("wrapped by the terminal at 61 columns", lambda b: _wrapped(b, 61)),
    log_case("binary noise without NUL bytes", _noise),
    log_case("a 100 MB log", _large, seconds=60),
    log_case("40 MiB of distinct lines naming memory", _distinct_memory_lines, seconds=90),
    Input("log: a 100 MB log on standard input", large_from_stdin, "accepted", ("log",), 60),
    Input("log: a 100 MB log through a FIFO", large_fifo, "accepted", ("log",), 60),
    Input("log: NUL bytes at its end", data(lambda b: b + b"\x00" * 64), "refused", ("log",)),
    Input("log: only start-up lines, no failure", data(lambda b: _STEP * 50), "accepted", ("log",)),
]
ACCELERATE_INPUTS = [
    edit("accelerate: num_processes 0", "num_processes: 2", "num_processes: 0"),
    edit("accelerate: num_processes 2**70", "num_processes: 2", f"num_processes: {2**70}"),
    edit("accelerate: num_machines .nan", "num_machines: 1", "num_machines: .nan"),
    edit("accelerate: more machines than processes", "num_machines: 1", "num_machines: 4"),
    edit("accelerate: an unknown distributed type", "distributed_type: DEEPSPEED", "distributed_type: WARP_DRIVE"),
    edit("accelerate: a ZeRO stage of 7", "zero_stage: 2", "zero_stage: 7"),
    edit("accelerate: a list as the processes", "num_processes: 2", "num_processes: [1, 2]"),
    edit("accelerate: a zero-width space in a key", "num_processes: 2", "num_processes\u200b: 2"),
    edit("accelerate: num_machines 0", "num_machines: 1", "num_machines: 0"),
    edit("accelerate: num_machines -1", "num_machines: 1", "num_machines: -1"),
    edit("accelerate: an integer of 5,000 digits", "num_processes: 2", "num_processes: " + "9" * 5000),
]


# ---- output lines name files escaped (issue 38, item 5) ----


def named_folder(folder: Path) -> Path:
    """A folder whose name holds an escape sequence, a bell, a C1 control and a bidi override (issue 38, item 5:
    a file name in a command's output line is printed escaped)."""
    target = folder / "out\x1b[2J\x07\x9b31m\u202eevil"
    target.mkdir()
    return target


OUTPUT_INPUTS.append(Input("outputs in a folder named with control characters", outputs_in(named_folder), "accepted"))


# ---- readers bounded by construction (issue 38, item 2): JSON and YAML bounded in nesting and integer digits for
# every structured file a command reads; a local model folder's config.json and safetensors headers (the target
# ``advise --verl`` with the folder as its model path); predictions read by pyarrow.


def structured(value: bytes) -> Callable[[bytes], bytes]:
    """The valid file with ``value`` added under a key of its own (JSON: wrapped in an object; YAML: a line)."""

    def change(base: bytes) -> bytes:
        if base.lstrip().startswith((b"{", b"[")):
            return b'{"hostile": ' + value + b', "valid": ' + base + b"}"
        return base.rstrip(b"\n") + b"\nhostile_value: " + value + b"\n"

    return change


FILE_INPUTS += [
    Input("an integer of 5,000 digits", data(structured(b"9" * 5000)), formats=("json", "yaml")),
    Input("an integer of 400 digits", data(structured(b"9" * 400)), formats=("json", "yaml")),
    Input("nested 200 deep", data(structured(b"[" * 200 + b"]" * 200)), formats=("json", "yaml")),
]

#: A Qwen2.5-0.5B config.json (the facts of its Hub repository, as estimation/knownconfigs.py ships them).
MODEL_CONFIG = {
    **{"model_type": "qwen2", "hidden_size": 896, "num_hidden_layers": 24, "num_attention_heads": 14},
    **{"num_key_value_heads": 2, "intermediate_size": 4864, "vocab_size": 151936, "max_position_embeddings": 32768},
    **{"tie_word_embeddings": True, "torch_dtype": "bfloat16"},
}


def tensors_header(shapes: object = None) -> dict:
    """A safetensors header of two layers of that model (shapes as its checkpoint has them; no data follows)."""
    header: dict = {"__metadata__": {"format": "pt"}}
    header["model.embed_tokens.weight"] = {"dtype": "BF16", "shape": [151936, 896], "data_offsets": [0, 0]}
    for i in range(2):
        for name, shape in (("self_attn.q_proj", [896, 896]), ("mlp.down_proj", [896, 4864])):
            given = shape if shapes is None else shapes
            header[f"model.layers.{i}.{name}.weight"] = {"dtype": "BF16", "shape": given, "data_offsets": [0, 0]}
    return header


def safetensors(header: object, length: int | None = None) -> bytes:
    raw = json.dumps(header).encode() if not isinstance(header, bytes) else header
    return struct.pack("<Q", len(raw) if length is None else length) + raw


def model_folder(folder: Path, files: dict[str, bytes | str | None] | None = None) -> Path:
    """A model folder: a valid config.json and model.safetensors, each replaced as ``files`` says (bytes: the
    content; "fifo", "socket", "folder", "/dev/zero": that instead; "unreadable": the valid file, mode 000)."""
    target = folder / "model"
    target.mkdir()
    valid = {"config.json": json.dumps(MODEL_CONFIG).encode(), "model.safetensors": safetensors(tensors_header())}
    for name, content in {**valid, **(files or {})}.items():
        path = target / name
        if content == "fifo":
            os.mkfifo(path)
        elif content == "socket":
            unix_socket(target, "").rename(path)
        elif content == "folder":
            path.mkdir()
        elif content == "/dev/zero":
            path.symlink_to("/dev/zero")
        elif content == "unreadable":
            path.write_bytes(valid[name])
            path.chmod(0)
        elif isinstance(content, bytes):
            path.write_bytes(content)
    return target


def with_model(files: dict[str, bytes | str | None] | None = None, sparse_to: int | None = None) -> Maker:
    """The valid launch script with its model path set to a model folder made by :func:`model_folder` (the file
    ``sparse_to`` names grown to that many bytes by a hole: it takes no disk space)."""

    def make(folder: Path, base: bytes, suffix: str) -> Prepared:
        target = model_folder(folder, files)
        if sparse_to is not None:
            name = next(iter(files or {"config.json": None}))
            with open(target / name, "r+b") as handle:
                handle.truncate(sparse_to)
        script = re.sub(rb"MODEL_PATH=\S+", b"MODEL_PATH=" + str(target).encode(), base, count=1)
        prepared = write(folder, script, suffix)
        prepared.unprivileged = any(v == "unreadable" for v in (files or {}).values())
        return prepared

    return make


def model_input(name: str, expect: str = "refused", seconds: float | None = 20, **made: object) -> Input:
    return Input(f"model folder: {name}", with_model(**made), expect, formats=("model",), seconds=seconds)


_CONFIG = "config.json"
MODEL_INPUTS = [
    Input("a FIFO fed the valid content", fifo, "accepted"),
    Input("/dev/stdin fed the valid content", from_stdin, "accepted"),
    model_input("valid (config.json and safetensors headers)", "accepted", files={}),
    model_input("config.json alone", "accepted", files={"model.safetensors": None}),
    model_input("config.json of 3 GiB (sparse)", files={_CONFIG: json.dumps(MODEL_CONFIG).encode()}, sparse_to=3 << 30),
    model_input("config.json a FIFO nobody writes", files={_CONFIG: "fifo"}),
    model_input("config.json a socket", files={_CONFIG: "socket"}),
    model_input("config.json a folder", files={_CONFIG: "folder"}),
    model_input("config.json a link to /dev/zero", files={_CONFIG: "/dev/zero"}),
    model_input("config.json another user's (unreadable)", files={_CONFIG: "unreadable"}),
    model_input("config.json not JSON", files={_CONFIG: b"{oops"}),
    model_input("config.json a JSON list", files={_CONFIG: b"[1, 2]"}),
    model_input("config.json nested 100,000 deep", files={_CONFIG: b"[" * 100_000 + b"]" * 100_000}),
    model_input("config.json nested 200 deep", files={_CONFIG: b'{"a": ' + b"[" * 200 + b"]" * 200 + b"}"}),
    model_input(
        "config.json with an integer of 5,000 digits",
        files={_CONFIG: json.dumps(MODEL_CONFIG).replace("896", "9" * 5000, 1).encode()},
    ),
    model_input(
        "config.json with an integer of 400 digits",
        files={_CONFIG: json.dumps(MODEL_CONFIG).replace("896", "9" * 400, 1).encode()},
    ),
    *(
        model_input(
            f"config.json hidden_size {value}", files={_CONFIG: json.dumps({**MODEL_CONFIG, "hidden_size": v}).encode()}
        )
        for value, v in (("0", 0), ("-3", -3), ("true", True), ("2**40", 2**40), ("'896'", "896"))
    ),
    model_input("safetensors header that is text", files={"model.safetensors": safetensors(b"not json at all")}),
    model_input("safetensors header that is a list", files={"model.safetensors": safetensors([1, 2])}),
    model_input(
        "safetensors null shapes",
        files={
            "model.safetensors": safetensors(
                tensors_header(shapes=None) | {"x.weight": {"dtype": "BF16", "shape": None}}
            )
        },
    ),
    model_input(
        "safetensors negative shapes", files={"model.safetensors": safetensors(tensors_header(shapes=[-5, 896]))}
    ),
    model_input("safetensors text shapes", files={"model.safetensors": safetensors(tensors_header(shapes=["a", "b"]))}),
    model_input(
        "safetensors boolean shapes", files={"model.safetensors": safetensors(tensors_header(shapes=[True, 2]))}
    ),
    model_input(
        "safetensors a shape of 5,000 digits",
        files={"model.safetensors": safetensors(b'{"x.weight": {"dtype": "BF16", "shape": [' + b"9" * 5000 + b"]}}")},
    ),
    model_input("safetensors header nested 100,000 deep", files={"model.safetensors": safetensors(b"[" * 100_000)}),
    model_input(
        "safetensors header length beyond the file", files={"model.safetensors": safetensors(tensors_header(), 10_000)}
    ),
    model_input("safetensors header length 2**63", files={"model.safetensors": safetensors(tensors_header(), 2**63)}),
    model_input("safetensors of 3 bytes", files={"model.safetensors": b"abc"}),
    model_input("safetensors a FIFO nobody writes", files={"model.safetensors": "fifo"}),
    model_input("safetensors another user's (unreadable)", files={"model.safetensors": "unreadable"}),
    model_input(
        "safetensors of 3 GiB (sparse) with a valid header",
        "accepted",
        files={"model.safetensors": safetensors(tensors_header())},
        sparse_to=3 << 30,
    ),
]


def jsonl_deep(base: bytes) -> bytes:
    """A JSON Lines row nested 100,000 deep before the valid rows (pyarrow's reader overflows its stack on it)."""
    return b'{"hostile": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n" + base


def parquet_described(base: bytes) -> bytes:
    """The valid predictions as Parquet whose ``datasets`` description (schema metadata) is nested 100,000 deep."""
    import io

    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    table = pacsv.read_csv(io.BytesIO(base)).replace_schema_metadata({b"huggingface": b"[" * 100_000})
    buffer = io.BytesIO()
    pq.write_table(table.cast(pa.schema([pa.field(n, pa.string()) for n in table.column_names])), buffer)
    return buffer.getvalue()


PREDICTIONS_INPUTS = [
    Input("JSON Lines nested 100,000 deep", data(jsonl_deep), formats=("csv",)),
    Input("Parquet whose datasets description is nested 100,000 deep", data(parquet_described), "accepted", ("csv",)),
]

"""Every operating-system failure of an output is one line naming the path and the reason, and nothing is left:
a read-only folder is refused before any work, a full file system leaves neither a file nor a folder the command
created (a tmpfs of 4 KiB where this process may mount one, else a file-size limit)."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from rlvrambench_hf.data.tables.output import check_outputs, new_folder, write_all_atomic, write_atomic, write_json
from rlvrambench_hf.errors import MESSAGE_LIMIT, OutputError
from rlvrambench_hf.release.space import write_space


def _mount(target: Path, options: str) -> bool:
    try:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(target)], capture_output=True)
    except OSError:
        return False
    return done.returncode == 0


@pytest.fixture
def read_only(tmp_path: Path) -> Iterator[Path]:
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o555)
    mounted = os.access(folder, os.W_OK) and _mount(folder, "ro,size=64k")
    if os.access(folder, os.W_OK):
        pytest.skip("no folder here is read-only for this user (root without mount)")
    yield folder
    if mounted:
        subprocess.run(["umount", "-l", str(folder)], check=False)


@contextlib.contextmanager
def file_size_limit(limit: int) -> Iterator[None]:
    """Writes beyond ``limit`` bytes fail with EFBIG (instead of the signal) while the block runs."""
    previous = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, previous[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, previous)
        signal.signal(signal.SIGXFSZ, handler)


Filled = Callable[[], contextlib.AbstractContextManager]


@pytest.fixture
def full(tmp_path: Path) -> Iterator[tuple[Path, Filled]]:
    """A folder with 4 KiB of room, and the context in which it is full."""
    folder = tmp_path / "full"
    folder.mkdir()
    if _mount(folder, "size=4k"):
        yield folder, contextlib.nullcontext
        subprocess.run(["umount", "-l", str(folder)], check=False)
    else:
        yield folder, lambda: file_size_limit(4096)


def one_line(error: BaseException, *words: str) -> None:
    text = str(error)
    assert "\n" not in text and len(text) <= MESSAGE_LIMIT, text
    assert all(word in text for word in words), text


def test_a_read_only_folder_is_refused_before_any_work(read_only: Path) -> None:
    for files, folders in (([read_only / "a.json"], []), ([], [read_only / "space"])):
        with pytest.raises(OutputError) as caught:
            check_outputs(files, folders=folders)
        one_line(caught.value, str(read_only), "write it elsewhere")
    with pytest.raises(OutputError) as caught:
        write_space(read_only / "space")
    one_line(caught.value, str(read_only / "space"))
    assert list(read_only.iterdir()) == []


def test_a_full_file_system_leaves_nothing(full: tuple[Path, Filled]) -> None:
    folder, filled = full
    with filled(), pytest.raises(OutputError) as caught:
        write_space(folder / "space")
    one_line(caught.value, str(folder / "space"), "nothing was written")
    assert list(folder.iterdir()) == [], "the Space folder or one of its files was left"
    files = {folder / "small.txt": "x" * 100, folder / "large.txt": "y" * 100_000}
    with filled(), pytest.raises(OutputError) as caught:
        write_all_atomic(files)
    one_line(caught.value, "large.txt")
    assert list(folder.iterdir()) == [], "the file that fitted was renamed into place without the other"
    with filled(), pytest.raises(OutputError):
        write_atomic(folder / "big.bin", b"z" * 100_000)
    assert list(folder.iterdir()) == []


def test_a_new_folder_is_removed_when_what_fills_it_fails(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "c"
    with pytest.raises(RuntimeError), new_folder(target):
        assert target.is_dir()
        raise RuntimeError("the write failed")
    assert list(tmp_path.iterdir()) == []
    existing = tmp_path / "kept"
    existing.mkdir()
    with pytest.raises(RuntimeError), new_folder(existing):
        raise RuntimeError("the write failed")
    assert existing.is_dir()


def test_an_output_in_a_missing_folder_creates_it_and_a_failed_write_removes_it(
    tmp_path: Path, full: tuple[Path, Filled]
) -> None:
    check_outputs([tmp_path / "scores" / "mine.json"])  # refused neither before the work ...
    assert not (tmp_path / "scores").exists()  # ... nor created by the check
    write_json(tmp_path / "scores" / "deep" / "mine.json", {"a": 1})
    assert (tmp_path / "scores" / "deep" / "mine.json").read_text() == '{\n  "a": 1\n}\n'
    write_all_atomic({tmp_path / "x" / "one.txt": "1", tmp_path / "y" / "z" / "two.txt": "2"})
    assert (tmp_path / "y" / "z" / "two.txt").read_text() == "2"
    folder, filled = full
    with filled(), pytest.raises(OutputError) as caught:
        write_atomic(folder / "new" / "deeper" / "big.bin", b"z" * 100_000)
    one_line(caught.value, "big.bin")
    assert list(folder.iterdir()) == [], "a folder the failed write created was left behind"
    with filled(), pytest.raises(OutputError):
        write_all_atomic({folder / "a" / "small.txt": "x", folder / "b" / "large.txt": "y" * 100_000})
    assert list(folder.iterdir()) == []
    (tmp_path / "file").write_text("")
    with pytest.raises(OutputError) as caught:
        check_outputs([tmp_path / "file" / "sub" / "x.json"])
    one_line(caught.value, "is a file, not a directory")

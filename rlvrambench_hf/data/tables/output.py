"""Writing outputs: checked before any work, written atomically, never over an input.

:func:`check_outputs` is called by every command that writes, before it computes anything: an output that is (or
links to) one of the command's input files, that lies inside the source folder or the Hugging Face cache, that
names the same file twice, that lies under a file, or where nothing can be written (a read-only file system, a
folder without write permission) is refused with one line. An output's missing folders are created when it is
written (``--output scores/mine.json`` makes ``scores/``), as ``mkdir -p`` would, and removed again when the write
fails. :func:`atomic_output` writes a temporary file beside the target and renames it over the target only when
complete; :func:`write_all_atomic` writes every file of a set before renaming any; :func:`new_folder` creates an
output folder and removes it again when what was to fill it fails. Every ``OSError`` of a write (a full disk, a
file-size limit, a permission) is one :class:`~rlvrambench_hf.errors.OutputError` line naming the path and the
system's reason, and nothing is left behind. A temporary file left by a killed process is removed by the next
write of the same output.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

from ...errors import OutputError

PathLike = str | os.PathLike[str]


def check_outputs(
    files: Iterable[PathLike | None] = (),
    *,
    folders: Iterable[PathLike | None] = (),
    inputs: Mapping[str, PathLike | None] | None = None,
    input_folders: Mapping[str, PathLike | None] | None = None,
    source: Any = None,
) -> None:
    """Refuse, before any work, outputs that cannot be written or would overwrite an input.

    ``files`` are output files, ``folders`` output folders (everything inside counts as written); ``inputs`` and
    ``input_folders`` name each input file or folder by how the user gave it (``{"--predictions": path}``);
    ``source`` is the command's release source (a local folder is an input folder)."""
    named = {label: (Path(p), False) for label, p in (inputs or {}).items() if p is not None}
    named |= {label: (Path(p), True) for label, p in (input_folders or {}).items() if p is not None}
    root = getattr(source, "root", None)
    if root is not None:
        named["--source"] = (Path(root), True)
    seen: dict[Path, Path] = {}
    for path, is_folder in [(Path(f), False) for f in files if f is not None] + [
        (Path(f), True) for f in folders if f is not None
    ]:
        check_target(path, folder=is_folder)
        key = _real(path)
        if key in seen:
            raise OutputError(f"output {path} is named twice (also as {seen[key]}); give each output its own path")
        seen[key] = path
        for cache in _caches():
            if _inside(key, cache) or (is_folder and _inside(cache, key)):
                raise OutputError(f"output {path} is inside the Hugging Face cache {cache}; write it elsewhere")
        for label, (given, is_input_folder) in named.items():
            relation = _relation(path, key, is_folder, given, is_input_folder)
            if relation:
                raise OutputError(f"output {path} {relation} the input {label} {given}; refusing to overwrite an input")


def check_target(path: PathLike, *, folder: bool = False) -> None:
    """Refuse an output path that lies under a file, that is a folder (a file when ``folder``), or that is a
    device, FIFO or socket (replacing it would not write to it). Missing folders above it are fine: they are
    created when it is written."""
    target = Path(path)
    try:
        _check_target(target, folder)
        _check_writable(target, folder)
    except OSError as exc:  # a name too long, a permission, a loop of links
        raise OutputError(f"output {target} cannot be used: {why(exc)}") from None


def why(exc: OSError) -> str:
    """The system's reason for a failed write, in its own words (``No space left on device``)."""
    return os.strerror(exc.errno) if exc.errno else str(exc) or type(exc).__name__


def output_error(path: PathLike, exc: OSError, *, doing: str = "write output") -> OutputError:
    """The one line for ``exc`` met while writing ``path`` (the path and the reason; nothing was written)."""
    return OutputError(f"cannot {doing} {path}: {why(exc)}; nothing was written")


def _check_writable(target: Path, folder: bool) -> None:
    """Refuse an output whose folder (the output folder itself, or the nearest existing folder above it) cannot be
    written: on a read-only file system, or without write permission."""
    base = target if folder and target.is_dir() else target.parent
    while not base.exists() and base != base.parent:
        base = base.parent
    if os.access(base, os.W_OK | os.X_OK):
        return
    read_only = bool(os.statvfs(base).f_flag & os.ST_RDONLY)
    where = "is on a read-only file system" if read_only else "is not writable (permission denied)"
    raise OutputError(f"output {target}: the folder {base} {where}; write it elsewhere")


def _check_target(target: Path, folder: bool) -> None:
    if not folder and target.is_dir():
        raise OutputError(f"output {target} is a directory")
    if folder and target.exists() and not target.is_dir():
        raise OutputError(f"output {target} exists and is not a directory")
    if not folder and target.exists() and not target.is_file():
        raise OutputError(f"output {target} is not a regular file (a device, FIFO or socket); name a file")
    parent = target.parent
    if parent.is_dir():
        return
    for ancestor in [parent, *parent.parents]:
        if ancestor.exists() or ancestor.is_symlink():
            if ancestor.is_dir():
                return
            raise OutputError(f"output {target}: {ancestor} is a file, not a directory")


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _caches() -> list[Path]:
    """The Hub cache and the datasets cache (where an output would poison what later runs read)."""
    from huggingface_hub import constants

    datasets_cache = os.environ.get("HF_DATASETS_CACHE") or os.path.join(constants.HF_HOME, "datasets")
    return [_real(Path(p).expanduser()) for p in (constants.HF_HUB_CACHE, datasets_cache)]


def _relation(output: Path, real_output: Path, is_folder: bool, given: Path, input_folder: bool) -> str | None:
    """How writing ``output`` would overwrite the input ``given`` (None: it would not)."""
    real_input = _real(given)
    if real_output == real_input:
        return "is"
    if input_folder and _inside(real_output, real_input):
        return "is inside"
    if is_folder and _inside(real_input, real_output):
        return "contains"
    try:
        if output.exists() and given.exists() and os.path.samefile(output, given):
            return "is a hard link of"
    except OSError:
        pass
    return None


def object_file(spec: str | None) -> str | None:
    """The Python file of a ``module:attr`` or ``path/to/file.py:attr`` object spec, if one exists (an input)."""
    if not spec:
        return None
    module = spec.rpartition(":")[0]
    for candidate in (module, module.replace(".", "/") + ".py"):
        try:
            if candidate and Path(candidate).is_file():
                return candidate
        except OSError:  # a name too long to be a file
            continue
    return None


@contextmanager
def atomic_output(path: PathLike, mode: str = "w", **open_kwargs: Any) -> Iterator[IO[Any]]:
    """Open a temporary file next to ``path``; it replaces ``path`` only if the block ends without error."""
    target = Path(path)
    if "b" not in mode:
        open_kwargs.setdefault("encoding", "utf-8")
        open_kwargs.setdefault("newline", "")
    created = _make_folders(target.parent)
    try:
        fd, tmp = _new_temporary(target)
    except BaseException:
        _remove_empty(created)
        raise
    try:
        with os.fdopen(fd, mode, **open_kwargs) as handle:
            yield handle
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        _remove_empty(created)
        raise output_error(target, exc) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        _remove_empty(created)
        raise


def write_atomic(path: PathLike, data: str | bytes) -> None:
    """Write ``data`` to ``path`` atomically."""
    with atomic_output(path, "wb" if isinstance(data, bytes) else "w") as handle:
        handle.write(data)


def json_text(data: object, *, sort_keys: bool = False) -> str:
    """``data`` as the JSON the commands write: indented by 2, UTF-8, no NaN, a final newline."""
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False, sort_keys=sort_keys) + "\n"


def write_json(path: PathLike, data: object, *, sort_keys: bool = False) -> None:
    """Write ``data`` to ``path`` as :func:`json_text`, atomically."""
    write_atomic(path, json_text(data, sort_keys=sort_keys))


def write_all_atomic(files: Mapping[Path, str | bytes] | Mapping[PathLike, str | bytes]) -> None:
    """Write several files so that all of them appear, or none: each is written to a temporary file and closed,
    and only when every one of them was written completely are they renamed into place."""
    staged: list[tuple[Path, str]] = []
    created: list[Path] = []
    try:
        for path, data in files.items():
            target = Path(path)
            created += _make_folders(target.parent)
            staged.append((target, _staged(target, data)))
        for target, tmp in staged:
            try:
                os.replace(tmp, target)
            except OSError as exc:
                raise output_error(target, exc) from None
    except BaseException:
        for _, tmp in staged:
            Path(tmp).unlink(missing_ok=True)
        _remove_empty(sorted(created, key=lambda f: len(f.parts), reverse=True))
        raise


def _new_temporary(target: Path) -> tuple[int, str]:
    """A new temporary file beside ``target`` (its descriptor and path), once ``target`` is checked writable and this
    process's stale temporaries of it are gone; one line when the folder refuses it."""
    check_target(target)
    _remove_stale_temporaries(target)
    try:
        return tempfile.mkstemp(prefix=f".{target.name}.{os.getpid()}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise output_error(target, exc) from None


def _staged(target: Path, data: str | bytes) -> str:
    """A complete, closed temporary copy of ``data`` beside ``target`` (its path), or one line and nothing left."""
    fd, tmp = _new_temporary(target)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.chmod(tmp, 0o644)
    except BaseException as exc:
        Path(tmp).unlink(missing_ok=True)
        if isinstance(exc, OSError):
            raise output_error(target, exc) from None
        raise
    return tmp


@contextmanager
def new_folder(path: PathLike) -> Iterator[Path]:
    """The output folder ``path``, created (with missing parents) when it does not exist; when the block fails,
    the folders it created are removed again (they are empty: the writes inside are atomic)."""
    target = Path(path)
    created = _make_folders(target)
    try:
        yield target
    except BaseException:
        _remove_empty(created)
        raise


def _make_folders(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents; the folders created, innermost first (one line when the system
    refuses one, and nothing created is left)."""
    created = []
    for missing in [folder, *folder.parents]:
        if missing.is_dir():
            break
        created.append(missing)
    for missing in reversed(created):
        try:
            missing.mkdir()
        except FileExistsError:
            if not missing.is_dir():
                _remove_empty(created)
                raise OutputError(f"cannot create the output folder {missing}: a file is in the way") from None
        except OSError as exc:
            _remove_empty(created)
            raise output_error(missing, exc, doing="create the output folder") from None
    return created


def _remove_empty(folders: list[Path]) -> None:
    """Remove the folders an output created (innermost first), as far as they are empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            continue


def _remove_stale_temporaries(target: Path) -> None:
    """Remove ``.<name>.<pid>.*.tmp`` files beside ``target`` whose process no longer runs."""
    pattern = re.compile(rf"^\.{re.escape(target.name)}\.(\d+)\..+\.tmp$")
    try:
        names = os.listdir(target.parent)
    except OSError:
        return
    for name in names:
        match = pattern.match(name)
        if match and not pid_alive(int(match.group(1))):
            (target.parent / name).unlink(missing_ok=True)


def pid_alive(pid: int) -> bool:
    """Whether a process with this id runs on this machine (a reused id counts as running: nothing is removed)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True

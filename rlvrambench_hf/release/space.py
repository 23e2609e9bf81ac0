"""The metric as a Hub Space, the way ``evaluate`` publishes its own, so that ``evaluate.load("<owner>/<name>")``
works for anyone once it is pushed.

``evaluate.load("<owner>/<name>")`` downloads ``<name>.py`` from the Space repository ``<owner>/<name>`` and imports
it; the Space itself runs ``app.py``, evaluate's Gradio widget. :func:`space_files` gives the folder such a Space
holds: the module as ``<name>.py``, ``README.md`` (the metric card; its YAML configures the Space), ``app.py`` (as
``evaluate-cli create`` writes it) and ``requirements.txt`` naming this package at this version.
:func:`write_space` writes it; :func:`check_space` verifies that a folder is exactly that; :func:`push_space`
verifies, plans and commits it with the path of ``release push`` (:func:`.push.push_folder`, repository type space).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

from ..errors import InputError, IntegrityError, quote

if TYPE_CHECKING:  # pragma: no cover
    from .push import PushOptions, PushResult

#: The Space the package's documentation names.
DEFAULT_SPACE_ID = "kobzaond/rlvrambench"
SPACE_SDK = "gradio"
APP = """import evaluate
from evaluate.utils import launch_gradio_widget

module = evaluate.load("{repo_id}")
launch_gradio_widget(module)
"""
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def _module_name(repo_id: str) -> str:
    if not _REPO_ID.match(repo_id):
        raise InputError(f"Space id {quote(repo_id)} must be OWNER/NAME (letters, digits, '.', '_', '-')")
    return repo_id.split("/")[1]


def space_files(repo_id: str = DEFAULT_SPACE_ID) -> dict[str, bytes]:
    """The files of the metric's Space ``repo_id``, by path: module, card, app and requirements."""
    from .. import __version__, metric_path

    name = _module_name(repo_id)
    module = Path(metric_path())
    card = (module / "README.md").read_text(encoding="utf-8").replace(DEFAULT_SPACE_ID, repo_id)
    requirements = f"evaluate>=0.4.6\nrlvrambench-hf=={__version__}\n"
    return {
        f"{name}.py": (module / "rlvrambench.py").read_bytes(),
        "README.md": card.encode("utf-8"),
        "app.py": APP.format(repo_id=repo_id).encode("utf-8"),
        "requirements.txt": requirements.encode("utf-8"),
    }


def write_space(folder: str | os.PathLike[str], repo_id: str = DEFAULT_SPACE_ID, *, overwrite: bool = False) -> Path:
    """Write the Space folder of ``repo_id`` into ``folder`` (created; it must not exist or be empty, unless
    ``overwrite``, which replaces the Space's files)."""
    from ..data.tables.output import check_outputs, new_folder, write_all_atomic

    files = space_files(repo_id)
    target = Path(folder).expanduser()
    check_outputs(folders=[target])
    if target.is_dir() and any(target.iterdir()) and not overwrite:
        raise InputError(f"output folder {target} is not empty (add --overwrite to replace the Space files)")
    with new_folder(target):
        write_all_atomic({target / name: data for name, data in files.items()})
    return target


def check_space(folder: str | os.PathLike[str], repo_id: str) -> None:
    """One-line :class:`IntegrityError` unless ``folder`` holds exactly the Space files of ``repo_id`` as this
    version of the package writes them (a stale module, an edited card or an app for another Space are refused)."""
    target = Path(folder).expanduser()
    if not target.is_dir():
        raise InputError(f"Space folder {target} does not exist")
    expected = space_files(repo_id)
    present = {p.relative_to(target).as_posix() for p in target.rglob("*") if p.is_file()}
    problems = [f"{name}: missing" for name in expected if name not in present]
    problems += [
        f"{name}: differs from what rlvrambench-hf writes for {repo_id}"
        for name, data in expected.items()
        if name in present and (target / name).read_bytes() != data
    ]
    problems += [f"{name}: not a file of the Space" for name in sorted(present - set(expected))]
    if problems:
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise IntegrityError(
            f"Space folder {target} failed verification: {problems[0]}{more}; write it with `rlvrambench metric "
            f"space --repo-id {repo_id}`"
        )


def push_space(
    folder: str | os.PathLike[str], repo_id: str = DEFAULT_SPACE_ID, **options: Unpack[PushOptions]
) -> PushResult:
    """Verify the Space folder, plan against the Space ``repo_id@revision`` and (unless ``dry_run``) commit it; a
    missing Space is planned as empty and created (Gradio SDK) on commit."""
    from .. import __version__
    from .push import push_folder

    check_space(folder, repo_id)
    options["message"] = options.get("message") or f"RLVRAMBench metric, rlvrambench-hf {__version__}"
    return push_folder(folder, repo_id, repo_type="space", create={"space_sdk": SPACE_SDK}, **options)

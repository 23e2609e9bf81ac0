"""The builtins a launch script's reading runs itself (:mod:`.run`): ``shift``, ``set --``, ``unset``, ``exit``,
``return``, ``break`` / ``continue``, the tests (``[``, ``[[``, ``test``), ``read``, ``getopts``, ``true`` /
``false`` / ``:``. Each takes the shell's state, the command's words and its line, and gives the command's status
(None: not known until the script runs)."""

from __future__ import annotations

import re
from collections.abc import Callable

from .conditions import Truth, bracket, double_bracket
from .state import Shell, clean, marker, unresolved


class Exit(Exception):
    def __init__(self, line: int) -> None:
        self.line = line


class Return(Exception):
    pass


class Break(Exception):
    def __init__(self, levels: int, again: bool) -> None:
        self.levels, self.again = levels, again


def _shift(shell: Shell, argv: list[str], line: int) -> Truth:
    shell.argument_line = shell.argument_line or line
    try:
        count = int(clean(argv[1])[0]) if len(argv) > 1 else 1
    except ValueError:
        return None
    if count > len(shell.positional):
        return False
    shell.positional = shell.positional[count:]
    return True


def _set(shell: Shell, argv: list[str], line: int) -> Truth:
    if "--" in argv:
        shell.positional = argv[argv.index("--") + 1 :]
    elif len(argv) > 1 and not argv[1].startswith(("-", "+")):
        shell.positional = argv[1:]
    return True


def _unset(shell: Shell, argv: list[str], line: int) -> Truth:
    for name in argv[1:]:
        for key in (name, f"{name}[@]"):
            if key in shell:
                del shell[key]
    return True


def _exit(shell: Shell, argv: list[str], line: int) -> Truth:
    raise Exit(line)


def _return(shell: Shell, argv: list[str], line: int) -> Truth:
    raise Return


def _break(shell: Shell, argv: list[str], line: int) -> Truth:
    levels = int(argv[1]) if len(argv) > 1 and argv[1].isdigit() else 1
    raise Break(max(levels, 1), argv[0] == "continue")


def _test(shell: Shell, argv: list[str], line: int) -> Truth:
    body = argv[1:-1] if argv[0] in ("[", "[[") and argv[-1:] in (["]"], ["]]"]) else argv[1:]
    texts = [clean(w)[0] for w in body]
    if argv[0] == "[[":
        plain = {k: clean(v)[0] for k, v in shell.items() if unresolved(v) is None}
        return double_bracket(texts, plain)
    return bracket(texts)


def _read(shell: Shell, argv: list[str], line: int) -> Truth:
    for name in argv[1:]:
        if re.fullmatch(r"[A-Za-z_]\w*", name):
            dict.__setitem__(shell, name, marker(f"${name}", f"read at line {line} when the script runs"))
    return None


def _getopts(shell: Shell, argv: list[str], line: int) -> Truth:
    """``getopts OPTSTRING NAME [ARGS]`` as bash steps through the options (``OPTIND``, ``OPTARG``)."""
    shell = shell
    shell.argument_line = shell.argument_line or line
    if len(argv) < 3:
        return None
    spec, name = clean(argv[1])[0], clean(argv[2])[0]
    raw = argv[3:] if len(argv) > 3 else shell.positional
    args = [clean(a)[0] for a in raw]
    if any(unresolved(a) for a in args):
        return None
    try:
        index, position = int(shell.get("OPTIND", "1")), int(shell.get("\0OPTPOS", "1"))
    except ValueError:
        return None
    if index > len(args) or not args[index - 1].startswith("-") or args[index - 1] in ("-", "--"):
        if index <= len(args) and args[index - 1] == "--":
            shell["OPTIND"] = str(index + 1)
        return False
    arg = args[index - 1]
    letter = arg[position]
    known = letter != ":" and letter in spec
    wants = known and spec[spec.index(letter) + 1 : spec.index(letter) + 2] == ":"
    value, step = None, position + 1 >= len(arg)
    if wants:
        value = arg[position + 1 :] if position + 1 < len(arg) else (raw[index] if index < len(args) else None)
        index += 1 if position + 1 < len(arg) or value is None else 2
        position = 1
    elif step:
        index, position = index + 1, 1
    else:
        position += 1
    shell["OPTIND"], shell["\0OPTPOS"] = str(index), str(position)
    shell[name] = letter if known and (value is not None or not wants) else "?"
    if value is not None:
        shell["OPTARG"] = value
    return True


def _true(shell: Shell, argv: list[str], line: int) -> Truth:
    return argv[0] != "false"


#: Each builtin by name.
BUILTINS: dict[str, Callable[[Shell, list[str], int], Truth]] = {
    "shift": _shift, "set": _set, "unset": _unset, "exit": _exit, "return": _return, "break": _break,
    "continue": _break, "[": _test, "[[": _test, "test": _test, "read": _read, "getopts": _getopts, "true": _true,
    ":": _true, "false": _true,
}  # fmt: skip

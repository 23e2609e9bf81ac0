"""Exceptions raised by rlvrambench-hf.

Every error a user can cause derives from :class:`RLVRAMBenchError`; its message is one line that names the
problem. The command line prints that line and exits with status 2.
"""


class RLVRAMBenchError(Exception):
    """Base class of every error the package raises on bad input or a bad release."""


class UnknownConfigError(RLVRAMBenchError, KeyError):
    """A config, split, track, rule or other name that the registry does not know."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class SourceError(RLVRAMBenchError):
    """The source (Hub repository, revision or local folder) cannot be opened or reached."""


class MissingFileError(SourceError):
    """A file that a config needs is not part of the requested revision."""


class IntegrityError(RLVRAMBenchError):
    """A file does not match its published SHA-256 digest, or a manifest is unsafe."""


class SchemaError(RLVRAMBenchError):
    """A data file does not fit the registry: extra or missing columns, or a value outside its type."""


class InputError(RLVRAMBenchError, ValueError):
    """A user-supplied file or argument (predictions, decisions, policy, options) is invalid."""


class OutputError(InputError):
    """An output cannot be written: refused before any work (it would overwrite an input, its folder is a file, ...)
    or the write itself failed (a full disk); nothing is left behind."""


class MissingExtraError(RLVRAMBenchError, ImportError):
    """An optional dependency is not installed; the message names the ``pip install`` that brings it."""


def import_extra(module: str, extra: str, purpose: str, alternative: str = ""):
    """Import ``module`` of the optional extra ``extra``, or raise a one-line :class:`MissingExtraError` saying
    which ``pip install 'rlvrambench-hf[extra]'`` brings it (``purpose``: what needs it, e.g. "drawing figures";
    ``alternative``: another way out, appended after "or")."""
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise MissingExtraError(
            f"{purpose} needs {module.split('.')[0]}, which is not installed: "
            f"pip install 'rlvrambench-hf[{extra}]'" + (f" (or {alternative})" if alternative else "")
        ) from None


def first_line(exc: BaseException, *, typed: bool = False) -> str:
    """The first line of a library exception's message (its type name when empty), for one-line errors;
    ``typed`` prefixes the type name (``ValueError: ...``), for exceptions raised by a user's own code."""
    lines = str(exc).strip().splitlines()
    if not lines:
        return type(exc).__name__
    return f"{type(exc).__name__}: {lines[0]}" if typed else lines[0]

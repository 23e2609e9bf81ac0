"""Exceptions raised by rlvrambench-hf.

Every error a user can cause derives from :class:`RLVRAMBenchError`; its message is one line that names the
problem. The command line prints that line and exits with status 2. As huggingface_hub's errors do, an error also
carries what it is about as fields, for code that handles it: ``path`` (the file, as the message names it),
``column``, ``config``, ``repo_id`` and ``revision``, each None where it does not apply.
"""

from __future__ import annotations

from typing import Any


class RLVRAMBenchError(Exception):
    """Base class of every error the package raises on bad input or a bad release."""

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        column: str | None = None,
        config: str | None = None,
        repo_id: str | None = None,
        revision: str | None = None,
    ) -> None:
        super().__init__(message)
        self.path, self.column, self.config = path, column, config
        self.repo_id, self.revision = repo_id, revision

    @property
    def fields(self) -> dict[str, str]:
        """The fields that are set, by name."""
        named = {"path": self.path, "column": self.column, "config": self.config}
        named |= {"repo_id": self.repo_id, "revision": self.revision}
        return {k: v for k, v in named.items() if v is not None}

    def with_fields(self, **fields: str | None) -> RLVRAMBenchError:
        """This error with the given fields set where they are still unset (for re-raising with more context)."""
        for name, value in fields.items():
            if getattr(self, name) is None:
                setattr(self, name, value)
        return self


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


class NumericalError(RLVRAMBenchError, ArithmeticError):
    """A computation failed on valid input: a solver did not converge, or produced non-finite values."""


class OutputError(InputError):
    """An output cannot be written: refused before any work (it would overwrite an input, its folder is a file, ...)
    or the write itself failed (a full disk); nothing is left behind."""


class MissingExtraError(RLVRAMBenchError, ImportError):
    """An optional dependency is not installed; the message names the ``pip install`` that brings it."""


def import_extra(module: str, extra: str, purpose: str, alternative: str = "") -> Any:
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

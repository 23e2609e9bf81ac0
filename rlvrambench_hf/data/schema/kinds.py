"""The column kinds: what each kind of column is in Arrow, ``datasets``, Croissant, a release CSV and a preview.

Every module that needs one of these reads it here (the registry, the typed reader, export, Croissant, the CLI);
nothing else translates a kind. Cells arrive as text (blanks and ``nan`` already null): :meth:`Kind.unfit` marks
the values a kind refuses, :meth:`Kind.parse` converts the rest, :meth:`Kind.release_text` writes them back as the
release's CSV files do.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from ...arrow import string_array

if TYPE_CHECKING:  # pragma: no cover
    import datasets

#: Separator of the semicolon-separated lists of the release.
LIST_SEPARATOR = ";"
#: Separator of the lists of step numbers (``1,2,3``) of the admission panel's run records.
STEP_SEPARATOR = ","
_TRUE = ("True", "1")


@dataclass(frozen=True)
class Kind:
    """One kind of column. Labels are stored as int64 class indices, as ``datasets`` stores a ``ClassLabel``."""

    name: str
    arrow_type: pa.DataType
    croissant_type: str
    display: str
    pattern: str | None = None  # the regular expression every non-null cell must match; None: any text

    def feature(self, labels: tuple[str, ...] = ()) -> datasets.ClassLabel | datasets.Value | datasets.List:
        """The ``datasets`` feature of a column of this kind (``labels``: the class names of a label column)."""
        import datasets

        if self is LABEL:
            return datasets.ClassLabel(names=list(labels))
        if self.is_list:
            return datasets.List(datasets.Value(str(self.arrow_type.value_type)))
        return datasets.Value(self.name)

    @property
    def is_list(self) -> bool:
        """A column of lists (Croissant marks its fields as arrays)."""
        return bool(pa.types.is_list(self.arrow_type))

    def unfit(self, text: pa.Array, labels: tuple[str, ...] = ()) -> pa.Array | None:
        """A boolean mask of the cells this kind refuses (null cells are never refused), or None when the kind
        takes any text."""
        if self is LABEL:
            return pc.and_(pc.is_valid(text), pc.invert(pc.is_in(text, value_set=string_array(labels))))
        if self.pattern is None:
            return None
        unfit = pc.invert(pc.match_substring_regex(text, self.pattern))
        return pc.or_(unfit, _beyond_int64(text)) if self.arrow_type == pa.int64() else unfit

    def parse(self, text: pa.Array, labels: tuple[str, ...] = ()) -> pa.Array:
        """The typed values of ``text`` (cells already checked with :meth:`unfit`)."""
        if self is LABEL:
            return pc.index_in(text, value_set=string_array(labels)).cast(pa.int64())
        if self is STRING_LIST:
            return pc.split_pattern(text, LIST_SEPARATOR)
        if self is INT64_LIST:
            return pc.split_pattern(text, STEP_SEPARATOR).cast(self.arrow_type)
        if self is BOOL:
            truth = pc.is_in(text, value_set=string_array(_TRUE))
            return pc.if_else(pc.is_valid(text), truth, pa.nulls(1, pa.bool_())[0])
        return text.cast(self.arrow_type)

    def release_text(self, values: pa.ChunkedArray) -> Any:
        """Stored values as the release's CSV files write them (lists joined, booleans ``True``/``False``)."""
        if self is STRING_LIST:
            return pc.binary_join(values, LIST_SEPARATOR)
        if self is INT64_LIST:
            return pc.binary_join(values.cast(pa.list_(pa.string())), STEP_SEPARATOR)
        if self is BOOL:
            false, true = string_array(["False", "True"])  # scalars from buffers: Python strings would import pandas
            return pc.if_else(values, true, false)
        return values


_INT64_MAX = str(2**63 - 1)


def _beyond_int64(text: pa.Array) -> pa.Array:
    """Integers written with more digits than int64 holds (compared as text: no overflow on the way; the scalars
    are built from buffers, as pyarrow's Python converters would import pandas)."""
    digits = pc.utf8_ltrim(pc.utf8_ltrim(text, characters="-"), characters="0")
    length = pc.utf8_length(digits)
    largest = string_array([_INT64_MAX])[0]
    longest = pc.utf8_length(string_array([_INT64_MAX]))[0]
    return pc.or_(pc.greater(length, longest), pc.and_(pc.equal(length, longest), pc.greater(digits, largest)))


STRING = Kind("string", pa.string(), "sc:Text", "string")
INT64 = Kind("int64", pa.int64(), "sc:Integer", "int64", r"^-?[0-9]+$")
FLOAT64 = Kind("float64", pa.float64(), "sc:Float", "float64", r"^-?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$")
BOOL = Kind("bool", pa.bool_(), "sc:Boolean", "bool", r"^(True|False|0|1)$")
LABEL = Kind("label", pa.int64(), "sc:Integer", "label")
STRING_LIST = Kind("string_list", pa.list_(pa.string()), "sc:Text", "list<string>")
INT64_LIST = Kind("int64_list", pa.list_(pa.int64()), "sc:Integer", "list<int64>", r"^-?[0-9]+(,-?[0-9]+)*$")

#: Every kind by name.
KINDS: dict[str, Kind] = {k.name: k for k in (STRING, INT64, FLOAT64, BOOL, LABEL, STRING_LIST, INT64_LIST)}

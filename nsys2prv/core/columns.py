"""The normalised columns of each data kind, as types: mypy checks every column a translator reads.

Each kind's column names are one ``Literal`` below (``kinds.py`` declares what each holds from it:
``kinds._cols``; ``read_kind`` checks a table against it at run time).  A stage C function takes the
kind's rows as ``Frame[<the kind's Literal>]``: ``df["nmae"]``, or reading a column the kind does not
declare, is then a mypy error (``tests/test_columns.py``).  At run time a ``Frame`` is a pandas
DataFrame; only mypy sees the difference.

A column only some exports or stages give (``OPTIONAL``: a stream's overlap lane, a kernel's launch
parameters, a sample's call-stack levels) is read with ``optional(df, name)``, which says so.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Generic, Literal, TypeVar, get_args, overload

import numpy as np
import pandas as pd

from nsys2prv.core import registry as R

Span = Literal["start", "end"]  # every kind's rows are intervals (an instant: start == end)
OnCpu = Literal[Span, "tid"]  # rows on a CPU thread
Stream = Literal["gpid", "device", "stream"]  # rows on a GPU stream
# GPU activities: their stream (gpid, device, stream), launch correlation id and stage A's GPU id
GpuActivity = Literal[Span, Stream, "corr", "gpu"]

CudaApi = Literal[OnCpu, "corr", "name"]
Kernels = Literal[GpuActivity, "graph_node", "name", "demangled", "nccl"]
Memcpy = Literal[GpuActivity, "bytes", "copy_kind"]
Memset = Literal[GpuActivity, "bytes"]
Nvtx = Literal[OnCpu, "kind", "domain", "name", "depth"]  # (also the NCCL ranges: kind nccl)
Mpi = Literal[OnCpu, "peer", "size", "recv_size", "tag", "comm", "name", "source"]
Osrt = Literal[OnCpu, "name"]
Sched = Literal[OnCpu, "cpu", "sched_in"]
Samples = OnCpu
GpuMetrics = Literal[Span, "gpu", "value", "metric"]
GraphExec = Literal[GpuActivity, "graph_id", "exec_id"]
GraphApi = Literal[OnCpu, "graph_id", "exec_id", "node_id", "name"]
OpenAcc = Literal[OnCpu, "event_kind", "bytes", "table", "name", "function"]

LEVEL_COLUMNS = tuple(f"fn{k}" for k in range(R.SAMPLED_LEVELS))  # a sample's call stack, innermost first
KERNEL_COLUMN = "kernel"  # its innermost kernel-mode frame

# Columns present only in some tables: read with ``optional``
OPTIONAL = frozenset(
    ("lane",)  # a GPU activity's overlap lane (stage A: pipeline/lanes.py), where its stream overlaps
    + tuple(R.KERNEL_PARAMS)  # the kernel launch parameters the export has
    + LEVEL_COLUMNS
    + (KERNEL_COLUMN,)  # the sample's call-stack levels it has
)

C = TypeVar("C", bound=str, contravariant=True)  # a table with more columns serves where fewer are read


def names(columns: Any) -> tuple[str, ...]:
    """The column names of one of the Literals above, in declaration order."""
    out: list[str] = []
    for a in get_args(columns):
        out += names(a) if get_args(a) else [a]
    return tuple(dict.fromkeys(out))


if TYPE_CHECKING:
    F = TypeVar("F", bound="Frame[Any]")

    class Frame(Generic[C]):
        """A kind's normalised table as mypy sees it: its declared columns by name; every other
        DataFrame attribute as pandas' own (untyped)."""

        @overload
        def __getitem__(self, key: C) -> Any: ...
        @overload
        def __getitem__(self: F, key: np.ndarray) -> F: ...  # a row selection (a mask)
        def __getitem__(self, key: Any) -> Any: ...
        def __getattr__(self, name: str) -> Any: ...
        def __len__(self) -> int: ...
        def __contains__(self, key: str) -> bool: ...

else:

    class Frame:
        def __class_getitem__(cls, item):
            return pd.DataFrame


def optional(df: Any, column: str) -> Any:
    """``df``'s column ``column``, one of ``OPTIONAL`` (None where the table has none)."""
    assert column in OPTIONAL, f"{column} is not an optional column"
    return df[column] if column in df else None

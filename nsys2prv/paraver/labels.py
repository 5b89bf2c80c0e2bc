"""Numbering of dynamic event values (names) and encoding of name columns to ids.

For each event type, the names seen anywhere in the trace are sorted and numbered
from 1 (or, for a type that also has fixed values, from just above its largest
fixed value).  Value 0 is always the type's "end" value.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from nsys2prv.paraver.registry import EventType
from nsys2prv.translate.records import EventBatch


def _pair_frames(batches: list[EventBatch]):
    for b in batches:
        for types, values in b.pairs:
            if values.dtype != object or len(values) == 0:
                continue
            if np.ndim(types) == 0:
                yield pd.DataFrame({"t": np.int64(types), "v": pd.unique(values)})
            else:
                yield pd.DataFrame({"t": types, "v": values}).drop_duplicates()


class ValueLabels:
    def __init__(self, types: dict[int, EventType]):
        self.types = types
        self.names: dict[int, pd.Index] = {}   # type id -> sorted names (value = position + base)
        self.base: dict[int, int] = {}

    def collect(self, batches: list[EventBatch]) -> None:
        frames = list(_pair_frames(batches))
        if not frames:
            return
        allp = pd.concat(frames, ignore_index=True).drop_duplicates()
        for t, grp in allp.groupby("t", sort=True):
            t = int(t)
            names = sorted(set(grp["v"].astype(str)))
            fixed = self.types[t].values if t in self.types else {}
            self.base[t] = (max(fixed) + 1) if fixed else 1
            self.names[t] = pd.Index(names, dtype=object)

    @classmethod
    def from_names(cls, types: dict[int, EventType], names: dict[int, list]) -> "ValueLabels":
        """Numbering from the names of every dynamic type (type id -> names seen, any order, repeats ok)."""
        labels = cls(types)
        for t in sorted(names):
            fixed = types[t].values if t in types else {}
            labels.base[t] = (max(fixed) + 1) if fixed else 1
            labels.names[t] = pd.Index(sorted(set(map(str, names[t]))), dtype=object)
        return labels

    def value_of(self, type_id: int, names) -> np.ndarray:
        pos = self.names[type_id].get_indexer(pd.Index(names, dtype=object))
        if (pos < 0).any():
            raise AssertionError(f"name not collected for event type {type_id}")
        return pos + self.base[type_id]

    def encode(self, types, values: np.ndarray) -> np.ndarray:
        """Object (name) column -> int64 value ids; int columns pass through."""
        if values.dtype != object:
            return values.astype(np.int64, copy=False)
        out = np.zeros(len(values), np.int64)
        codes, uniq = pd.factorize(values, use_na_sentinel=False)     # names as str(value), like astype(str)
        svals = np.asarray(uniq, dtype=object).astype(str)
        if np.ndim(types) == 0:
            groups = [(int(types), slice(None))]
        else:
            types = np.asarray(types, np.int64)
            groups = [(int(t), types == t) for t in np.unique(types)]
        for t, sel in groups:
            pos = self.names[t].get_indexer(svals)[codes[sel]]
            if (pos < 0).any():
                raise AssertionError(f"name not collected for event type {t}")
            out[sel] = pos + self.base[t]
        return out

    def labels(self, type_id: int) -> dict[int, str]:
        names = self.names.get(type_id)
        if names is None:
            return {}
        base = self.base[type_id]
        return {base + i: n for i, n in enumerate(names)}

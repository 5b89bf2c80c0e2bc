"""Numbering of dynamic event values (names) and encoding of name columns to ids.

For each event type, the names seen anywhere in the trace are sorted and numbered
from 1 (or, for a type that also has fixed values, from just above its largest
fixed value).  Value 0 is always the type's "end" value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from nsys2prv.core.names import Names, is_names
from nsys2prv.core.registry import EventType
from nsys2prv.translate.records import EventBatch


def _used_names(batches: list[EventBatch]):
    """(type id, names used) of every name column of ``batches``."""
    for b in batches:
        for types, values in b.pairs:
            if not is_names(values) or len(values) == 0:
                continue
            v = Names.of(values)
            if np.ndim(types) == 0:
                yield int(types), v.used()
            else:
                types = np.asarray(types, np.int64)
                for t in np.unique(types):
                    yield int(t), v[types == t].used()


class ValueLabels:
    def __init__(self, types: dict[int, EventType]):
        self.types = types
        self.names: dict[int, pd.Index] = {}  # type id -> sorted names (value = position + base)
        self.base: dict[int, int] = {}
        self._pos: dict = {}  # (id of a type's names, id of a Names dictionary) -> (them, positions)

    def collect(self, batches: list[EventBatch]) -> None:
        seen: dict[int, set] = {}
        for t, names in _used_names(batches):
            seen.setdefault(t, set()).update(names.tolist())
        for t in sorted(seen):
            fixed = self.types[t].values if t in self.types else {}
            self.base[t] = (max(fixed) + 1) if fixed else 1
            self.names[t] = pd.Index(sorted(seen[t]), dtype=object)
        self.share_groups()

    def share_groups(self) -> None:
        """Dynamic types of one group: every one numbered over the union of the group's names."""
        groups: dict[str, list[int]] = {}
        for t in self.names:
            et = self.types.get(t)
            if et is not None and et.group and et.kind == "dynamic":
                groups.setdefault(et.group, []).append(t)
        for members in groups.values():
            if len(members) > 1:
                union = pd.Index(sorted(set().union(*(self.names[t] for t in members))), dtype=object)
                for t in members:
                    self.names[t] = union

    @classmethod
    def from_names(cls, types: dict[int, EventType], names: Mapping[int, Iterable]) -> "ValueLabels":
        """Numbering from the names of every dynamic type (type id -> names seen, any order, repeats ok)."""
        labels = cls(types)
        for t in sorted(names):
            fixed = types[t].values if t in types else {}
            labels.base[t] = (max(fixed) + 1) if fixed else 1
            labels.names[t] = pd.Index(sorted(set(map(str, names[t]))), dtype=object)
        labels.share_groups()
        return labels

    def value_of(self, type_id: int, names) -> np.ndarray:
        pos = self.names[type_id].get_indexer(pd.Index(names, dtype=object))
        if (pos < 0).any():
            raise AssertionError(f"name not collected for event type {type_id}")
        return pos + self.base[type_id]

    def encode(self, types, values) -> np.ndarray:
        """Name column (``Names`` or object array) -> int64 value ids; int columns pass through."""
        if not is_names(values):
            return values.astype(np.int64, copy=False)
        v = Names.of(values)
        if np.ndim(types) == 0:  # (one type: the dictionary's values looked up at once)
            positions = self._positions(int(types), v.names)
            if (positions < 0).any() and (positions[v.codes] < 0).any():
                raise AssertionError(f"name not collected for event type {int(types)}")
            return (positions + self.base[int(types)])[v.codes]
        types = np.asarray(types, np.int64)
        out = np.zeros(len(v), np.int64)
        for t in np.unique(types).tolist():
            sel = types == t
            pos = self._positions(t, v.names)[v.codes[sel]]
            if (pos < 0).any():
                raise AssertionError(f"name not collected for event type {t}")
            out[sel] = pos + self.base[t]
        return out

    def _positions(self, t: int, names: np.ndarray) -> np.ndarray:
        """Position of each of ``names`` among type ``t``'s sorted names (-1: absent), once per
        dictionary: the batches of a translator share one (begin and end records, row subsets)."""
        numbered = self.names[t]  # (the types of a group share it: ``share_groups``)
        key = (id(numbered), id(names))
        hit = self._pos.get(key)
        if hit is None or hit[0] is not names or hit[1] is not numbered:
            hit = self._pos[key] = (names, numbered, numbered.get_indexer(names))  # (both kept: their ids stay theirs)
        return hit[2]

    def labels(self, type_id: int) -> dict[int, str]:
        names = self.names.get(type_id)
        if names is None:
            return {}
        base = self.base[type_id]
        return {base + i: n for i, n in enumerate(names)}

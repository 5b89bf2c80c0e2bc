"""Name columns: dictionary-encoded (``Names``) and tested once per distinct name (columns repeat
a few names many times)."""

from __future__ import annotations

import re
from typing import Callable

import numpy as np
import pandas as pd


class Names:
    """A column of names, dictionary-encoded: row i is ``names[codes[i]]``.

    ``names`` holds Python str (missing values as ``str(value)``, e.g. "nan"); it may hold names no
    row uses (after row selection) and the same str twice.  Event values that are names travel
    through translation in this form: selecting rows copies integer codes, never strings, and the
    writer numbers each distinct name once instead of hashing every row's string.
    """

    __slots__ = ("codes", "names")

    def __init__(self, codes: np.ndarray, names: np.ndarray):
        self.codes, self.names = codes, names

    @classmethod
    def of(cls, col, share: "Names | None" = None) -> "Names":
        """The names of ``col`` (a Series, Index, array or list; a ``Names`` as it is); ``share``:
        names of another column, whose dictionary this one takes when both have the same (the
        writer then numbers it once: the levels of a call stack share their categories)."""
        if isinstance(col, Names):
            return col
        if isinstance(getattr(col, "dtype", None), pd.CategoricalDtype):  # codes as they are
            cat = pd.Categorical(col)
            codes = cat.codes.astype(np.int64)
            names = _strings(cat.categories)
            if (codes < 0).any():  # missing: "nan", as str()
                names = np.append(names, str(np.nan))
                codes[codes < 0] = len(names) - 1
            if share is not None and len(share.names) == len(names) and np.array_equal(share.names, names):
                names = share.names
            return cls(codes, names)
        if not isinstance(col, (pd.Series, pd.Index, pd.api.extensions.ExtensionArray)):
            col = np.asarray(col, dtype=object)
        codes, uniq = pd.factorize(col, use_na_sentinel=False)  # arrow-backed str: in C++
        return cls(np.asarray(codes, np.int64), _strings(uniq))

    def __len__(self) -> int:
        return len(self.codes)

    def __getitem__(self, rows) -> "Names":
        return Names(self.codes[rows], self.names)

    def used(self) -> np.ndarray:
        """The names some row uses."""
        return self.names[np.bincount(self.codes, minlength=len(self.names)) > 0]

    def to_numpy(self) -> np.ndarray:
        return self.names[self.codes]


def _strings(values) -> np.ndarray:
    """``str`` of each of ``values`` (distinct values: categories, uniques) as an object array; a
    column of strings converted at once, its missing values (if any) as ``str`` of the value that
    stands for them."""
    if isinstance(values.dtype, pd.StringDtype):
        out = values.to_numpy(dtype=object)
        missing = np.flatnonzero(pd.isna(out))
        if len(missing):
            out[missing] = [str(values[i]) for i in missing]
        return out
    return np.array([str(u) for u in values], dtype=object)


def is_names(values) -> bool:
    """Whether an event value column holds names (``Names`` or an object array) rather than ints."""
    return isinstance(values, Names) or getattr(values, "dtype", None) == object


def per_name(names, test: Callable[[str], bool]) -> np.ndarray:
    """``test`` applied to every distinct name, broadcast back to the column; missing names are False."""
    if isinstance(names, Names):
        codes, uniq = names.codes, names.names
    elif isinstance(getattr(names, "dtype", None), pd.CategoricalDtype):  # the categories, as they are
        cat = pd.Categorical(names)
        codes, uniq = cat.codes, cat.categories
    else:
        if not isinstance(names, (pd.Series, pd.Index)):
            names = pd.Series(names, dtype=object)
        codes, uniq = pd.factorize(names, use_na_sentinel=True)
    if len(codes) == 0:
        return np.zeros(0, bool)
    hit = np.fromiter((bool(test(str(u))) for u in uniq), bool, count=len(uniq))
    return np.append(hit, False)[codes]  # code -1 (missing) -> the appended False


def contains(names, pattern: str, case: bool = True) -> np.ndarray:
    """Names containing the regular expression ``pattern``."""
    rx = re.compile(pattern, 0 if case else re.IGNORECASE)
    return per_name(names, lambda s: rx.search(s) is not None)

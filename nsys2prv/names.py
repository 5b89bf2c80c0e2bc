"""Tests on name columns, evaluated once per distinct name (columns repeat a few names many times)."""

from __future__ import annotations

import re
from typing import Callable

import numpy as np
import pandas as pd


def per_name(names, test: Callable[[str], bool]) -> np.ndarray:
    """``test`` applied to every distinct name, broadcast back to the column; missing names are False."""
    codes, uniq = pd.factorize(pd.Series(names, dtype=object), use_na_sentinel=True)
    if len(codes) == 0:
        return np.zeros(0, bool)
    hit = np.fromiter((bool(test(str(u))) for u in uniq), bool, count=len(uniq))
    return np.append(hit, False)[codes]     # code -1 (missing) -> the appended False


def contains(names, pattern: str, case: bool = True) -> np.ndarray:
    """Names containing the regular expression ``pattern``."""
    rx = re.compile(pattern, 0 if case else re.IGNORECASE)
    return per_name(names, lambda s: rx.search(s) is not None)

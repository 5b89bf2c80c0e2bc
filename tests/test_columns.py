"""Columnar building blocks of translation: dictionary-encoded names, their numbering, pair-key joins."""

import numpy as np
import pandas as pd
import pytest

from nsys2prv.core import registry as R
from nsys2prv.core.names import Names, is_names, per_name
from nsys2prv.paraver.labels import ValueLabels
from nsys2prv.translate.launches import match, match_parts, pair_codes
from nsys2prv.translate.records import EventBatch


@pytest.mark.parametrize("dtype", ["str", object, "category"])
def test_names_of_any_column_keeps_each_row(dtype):
    col = pd.Series(["b", "a", None, "b", "c"], dtype=dtype)
    n = Names.of(col)
    assert n.to_numpy().tolist() == ["b", "a", "nan", "b", "c"]  # missing as str(value), like astype(str)
    assert len(n) == 5 and is_names(n) and Names.of(n) is n
    sub = n[np.array([False, True, False, True, False])]
    assert sub.to_numpy().tolist() == ["a", "b"]
    assert sorted(sub.used().tolist()) == ["a", "b"]  # the dictionary keeps "c", unused
    assert not is_names(np.arange(3))


@pytest.mark.parametrize("dtype", ["str", object, "category"])
def test_per_name_on_names_and_columns_agree(dtype):
    col = pd.Series(["ncclKernel_x", "gemm", None, "NCCLdev"], dtype=dtype)
    test = lambda s: "nccl" in s.lower()
    assert per_name(col, test).tolist() == [True, False, False, True]
    assert per_name(Names.of(col), test).tolist() == [True, False, False, True]
    assert per_name(col, lambda s: s == "nan").tolist() == [False] * 4  # missing: False, never "nan"


def test_labels_number_names_from_codes_as_from_objects():
    a = Names.of(pd.Series(["zeta", "alpha", "zeta", "mid"], dtype="str"))
    b = np.array(["mid", "omega"], dtype=object)
    t = R.CUDA_API.id
    batches = [
        EventBatch(np.arange(4), np.zeros(4, np.int64), np.zeros(4, np.int64), [(t, a[np.array([0, 1, 3])])]),
        EventBatch(np.arange(2), np.zeros(2, np.int64), np.zeros(2, np.int64), [(t, b)]),
    ]
    labels = ValueLabels(dict(R.BY_ID))
    labels.collect(batches)
    assert list(labels.names[t]) == ["alpha", "mid", "omega", "zeta"]  # "zeta" (row 2) is used by row 0
    base = labels.base[t]
    assert labels.encode(t, a).tolist() == [base + 3, base, base + 3, base + 1]
    assert labels.encode(t, b).tolist() == [base + 1, base + 2]
    with pytest.raises(AssertionError, match="not collected"):
        labels.encode(t, Names.of(["unknown"]))


def test_labels_with_per_row_types():
    t1, t2 = R.CUDA_API.id, R.OSRT.id
    names = Names.of(["x", "y", "x", "z"])
    types = np.array([t1, t2, t2, t1])
    labels = ValueLabels({})
    labels.collect([EventBatch(np.arange(4), np.zeros(4, np.int64), np.zeros(4, np.int64), [(types, names)])])
    assert list(labels.names[t1]) == ["x", "z"] and list(labels.names[t2]) == ["x", "y"]
    assert labels.encode(types, names).tolist() == [1, 2, 1, 2]


def test_pair_codes_equal_exactly_for_equal_pairs():
    k1 = np.array([5, 5, 7, 7, 5], np.int64) << 40
    k2 = np.array([1, 2, 1, 2, 1], np.int64)
    (c,), size = pair_codes([k1], [k2])
    assert c[0] == c[4] and len(set(c[:4].tolist())) == 4
    assert size == 4 and c.min() >= 0 and c.max() < size  # (2 processes x ids 1..2: by arithmetic)
    # in parts: the codes of the whole, cut as the parts are (an empty part too)
    parts, size2 = pair_codes([k1[:2], k1[2:2], k1[2:]], [k2[:2], k2[2:2], k2[2:]])
    assert size2 == size and np.concatenate(parts).tolist() == c.tolist() and len(parts[1]) == 0
    # one process: the ids less the smallest, one code each
    (one,), size1 = pair_codes([np.full(3, 9 << 24, np.int64)], [np.array([7, 4, 7], np.int64)])
    assert one.tolist() == [3, 0, 3] and size1 == 4
    # a k2 range too wide for few codes a pair: the distinct pairs are numbered instead
    k2w = np.array([-(1 << 62), 1 << 62, -(1 << 62), 0, -(1 << 62)], np.int64)
    (cw,), sw = pair_codes([k1], [k2w])
    assert cw[0] == cw[4] and cw[0] != cw[2] and len(set(cw[:4].tolist())) == 4
    assert sw == 4 and sorted(set(cw.tolist())) == [0, 1, 2, 3]
    assert pair_codes([np.zeros(0, np.int64)], [np.zeros(0, np.int64)])[1] == 0


def test_match_takes_the_first_call_of_each_code():
    calls = np.array([4, 9, 4, 1], np.int64)  # one process (tid 1 << 24), the correlation ids
    acts = np.array([4, 1, 2, 9, 10, 0], np.int64)
    tid = np.full(4, 1 << 24, np.int64)
    got = match(tid, calls, {"kernels": (np.full(6, 1 << 24, np.int64), acts)})
    assert got.rows["kernels"].tolist() == [0, 3, -1, 1, -1, -1] and got.shared == 1
    none = match(tid[:0], calls[:0], {"kernels": (np.full(6, 1 << 24, np.int64), acts)})
    assert none.rows["kernels"].tolist() == [-1] * 6 and none.shared == 0
    assert match(tid, calls, {"kernels": (acts[:0], acts[:0])}).rows["kernels"].tolist() == []


@pytest.mark.parametrize("procs,spread", [(1, 1), (2, 7), (1, 1 << 40)])
def test_match_in_parts_is_match_of_the_whole(procs, spread):
    """The tables in parts (stage A's batches, an empty one among them), calls without an id in some:
    the rows and the count of shared ids are those of the tables put together."""
    rng = np.random.default_rng(procs + spread % 89)
    n = 3000
    tid = (rng.integers(1, procs + 1, n).astype(np.int64) << 24) | rng.integers(1, 4, n)
    corr = rng.integers(0, 2000, n).astype(np.int64) * spread
    corr[rng.random(n) < 0.05] = -1
    gp = rng.integers(1, procs + 1, 2500).astype(np.int64) << 24
    gc = rng.integers(-1, 2100, 2500).astype(np.int64) * spread
    whole = match(tid, corr, {"kernels": (gp, gc), "memcpy": (gp[:40], gc[:40])})
    cut, cut2 = [0, 700, 700, 1900, n], [0, 1, 1200, 2500]
    parts = match_parts(
        [(tid[a:b], corr[a:b]) for a, b in zip(cut, cut[1:])],
        {"kernels": [(gp[a:b], gc[a:b]) for a, b in zip(cut2, cut2[1:])], "memcpy": [(gp[:40], gc[:40])]},
    )
    assert list(parts.rows) == ["kernels", "memcpy"] and parts.shared == whole.shared > 0
    for k in whole.rows:
        assert parts.rows[k].dtype == np.int64 and parts.rows[k].tolist() == whole.rows[k].tolist()
    assert (whole.rows["kernels"] >= 0).any() and (whole.rows["kernels"] == -1).any()


@pytest.mark.parametrize("procs,spread", [(1, 1), (3, 1), (1, 1 << 40), (2, 7)])
def test_match_links_the_first_call_of_each_process_and_id(procs, spread):
    """``match`` against a dictionary of (process, id) -> first call: dense ids, several processes,
    ids too sparse for arithmetic codes; ids shared by calls (the first linked, the rest counted)."""
    from nsys2prv.nsys.ids import process_key
    from nsys2prv.translate.launches import match

    rng = np.random.default_rng(procs * 7 + spread % 97)
    n = 5000
    pids = rng.integers(1, procs + 1, n).astype(np.int64)
    tid = (pids << 24) | rng.integers(1, 4, n)
    corr = rng.integers(0, 3000, n).astype(np.int64) * spread
    corr[rng.random(n) < 0.05] = -1  # calls without an id
    first: dict[tuple[int, int], int] = {}
    for i, (k, c) in enumerate(zip(process_key(tid).tolist(), corr.tolist())):
        if c >= 0:
            first.setdefault((k, c), i)
    gp = process_key((rng.integers(1, procs + 1, 4000).astype(np.int64) << 24) | 1)
    gc = rng.integers(-1, 3200, 4000).astype(np.int64) * spread
    got = match(tid, corr, {"kernels": (gp, gc), "memcpy": (gp[:0], gc[:0])})
    assert got.rows["kernels"].tolist() == [first.get((k, c), -1) for k, c in zip(gp.tolist(), gc.tolist())]
    assert got.rows["memcpy"].tolist() == []
    assert got.shared == int((corr >= 0).sum()) - len(first)


@pytest.mark.parametrize("wide", [False, True])
def test_key_table_looks_up_tuples_exactly(wide):
    from nsys2prv.model.resources import KeyTable

    big = (1 << 61) if wide else 0  # wide: the ranges do not fit one int64 code
    keys = [(7, 0, 13 + big), (7, 1, 13), (9, 0, 14), (7, 0, 20)]
    t = KeyTable(keys, [10, 11, 12, 13])
    assert t.mixed is not wide
    q = [
        np.array(c, np.int64)
        for c in zip(
            *[(7, 0, 13 + big), (9, 0, 14), (7, 0, 14), (8, 0, 13), (7, 0, 20), (7, 1, 13), (-5, 0, 13), (7, 2, 13)]
        )
    ]
    assert t.lookup(*q).tolist() == [10, 12, -1, -1, 13, 11, -1, -1]
    assert KeyTable([], []).lookup(np.zeros(2, np.int64), np.zeros(2, np.int64)).tolist() == [-1, -1]


@pytest.mark.parametrize("ids", [[3, 9, 3, 4, 3], [3.0, 9.0, None, 4.0, 3.0]])
def test_text_names_per_distinct_id(ids):
    from nsys2prv.nsys.readers.base import text_names

    class Report:  # StringIds 3 and 4; 9 is not there
        def lookup(self, keys):
            table = {3: "cudaLaunchKernel_v7000", 4: "cudaMemcpy"}
            return np.array([table.get(int(k)) if pd.notna(k) else None for k in keys], dtype=object)

    col = pd.Series(text_names(Report(), pd.Series(ids)))
    unknown9 = f"<unknown name #{pd.Series(ids)[1]}>"
    null = [f"<unknown name #{pd.Series(ids)[2]}>"] if None in ids else ["cudaLaunchKernel_v7000"]
    assert col.tolist() == ["cudaLaunchKernel_v7000", unknown9, *null, "cudaMemcpy", "cudaLaunchKernel_v7000"]
    assert isinstance(col.dtype, pd.CategoricalDtype) and col.cat.categories.is_unique  # each name once
    stripped = pd.Series(text_names(Report(), pd.Series(ids), strip_suffix=True)).tolist()
    assert stripped[0] == stripped[4] == "cudaLaunchKernel" and stripped[3] == "cudaMemcpy"


def test_to_int64_sets_only_what_is_not_int64_already():
    from nsys2prv.nsys.readers.base import ReadResult, interval_frame, to_int64

    df = pd.DataFrame({"a": np.array([1, 2], np.int64), "b": pd.array([3, None], dtype="Int64"), "c": [1.0, np.nan]})
    a = df["a"].to_numpy()
    for col, fill in (("a", 0), ("b", -1), ("c", 7), ("d", 5)):
        to_int64(df, col, fill)
    assert df["a"].to_numpy() is a or np.shares_memory(df["a"].to_numpy(), a)  # untouched
    assert df["b"].tolist() == [3, -1] and df["c"].tolist() == [1, 7] and df["d"].tolist() == [5, 5]
    assert all(df[c].dtype == np.int64 for c in "abcd")
    # the time hygiene's int64 fast path drops and counts rows ending before they start
    res = ReadResult()
    out = interval_frame(pd.DataFrame({"start": [5, 9, 1], "end": [6, 8, 1]}), res)
    assert out["start"].tolist() == [5, 1] and res.dropped == {"end before start": 1}


def test_invalid_utf8_text_is_replaced_not_fatal(tmp_path):
    import sqlite3

    from nsys2prv.nsys.database import Report

    path = tmp_path / "r.sqlite"
    con = sqlite3.connect(path)
    con.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL)")
    con.execute("INSERT INTO StringIds VALUES (1, 'good'), (2, CAST(x'6b65726ee9' AS TEXT))")  # latin-1 'kerné'
    con.execute("CREATE TABLE TARGET_INFO_SESSION_START_TIME (utcEpochNs INTEGER)")  # an export
    con.commit()
    con.close()
    report = Report(path, 0, source=str(path))
    assert report.rows("SELECT value FROM StringIds WHERE id = 1") == [("good",)]  # fast path, valid text
    assert report.strings.to_dict() == {1: "good", 2: "kern\ufffd"}  # bad byte replaced
    assert report.query("SELECT id, value FROM StringIds")["value"].tolist() == ["good", "kern\ufffd"]
    report.close()


def test_the_kernels_reader_flags_nccl_kernels_once(tmp_path):
    """The one NCCL rule (core.classify.is_nccl, case-insensitive on the short name) is applied by the
    kernels reader: its ``nccl`` column is what the trace, POP and the alignment read."""
    from nsysgen import NsysBuilder

    from nsys2prv.nsys.database import Report
    from nsys2prv.nsys.readers import kernels

    b = NsysBuilder(tmp_path / "k.sqlite")
    for i, name in enumerate(["ncclDevKernel_AllReduce_Sum_f32", "gemm", "NCCLKernel", "nccl_like_copy", "stencil"]):
        b.kernel(100, 0, 7, 1_000 * i, 1_000 * i + 500, 10 + i, name)
    report = Report(b.save())
    try:
        res = kernels.read(report)
    finally:
        report.close()
    assert res is not None and res.table is not None
    df = res.table
    assert df["nccl"].dtype == bool and list(df.columns)[-1] == "nccl"
    assert dict(zip(df["name"].astype(str), df["nccl"])) == {
        "ncclDevKernel_AllReduce_Sum_f32": True,
        "gemm": False,
        "NCCLKernel": True,
        "nccl_like_copy": True,
        "stencil": False,
    }


@pytest.mark.parametrize("dtype", ["str", "string", object])
def test_names_of_shares_an_equal_dictionary_and_numbers_it_once(dtype):
    # the levels of a call stack: categoricals over the same names share one dictionary, and the
    # types of one group ("sampled") look its names up once
    cats = pd.Index(["f", "main", "g", None][:3], dtype=dtype)
    lvl0 = pd.Series(pd.Categorical(["main", "f", None, "g"], categories=cats))
    lvl1 = pd.Series(pd.Categorical(["f", None, "g", "g"], categories=cats))
    other = pd.Series(pd.Categorical(["f", "h"], categories=["f", "h"]))
    a = Names.of(lvl0)
    b = Names.of(lvl1, share=a)
    c = Names.of(other, share=a)
    assert a.to_numpy().tolist() == ["main", "f", "nan", "g"] and b.to_numpy().tolist() == ["f", "nan", "g", "g"]
    assert b.names is a.names and c.names is not a.names and c.to_numpy().tolist() == ["f", "h"]
    t0, t1 = R.SAMPLED[0].id, R.SAMPLED[1].id
    batches = [
        EventBatch(np.arange(4), np.zeros(4, np.int64), np.zeros(4, np.int64), [(t, v)]) for t, v in ((t0, a), (t1, b))
    ]
    labels = ValueLabels(dict(R.BY_ID))
    labels.collect(batches)
    assert list(labels.names[t0]) == ["f", "g", "main", "nan"] and labels.names[t1] is labels.names[t0]
    assert labels.encode(t0, a).tolist() == [3, 1, 4, 2] and labels.encode(t1, b).tolist() == [1, 4, 2, 2]
    assert len(labels._pos) == 1  # one lookup for both types


def test_names_of_arrow_strings_with_missing_values_as_str_gives_them():
    for col, missing in (
        (pd.Series(["b", None, "a"], dtype="string[pyarrow]"), "<NA>"),
        (pd.Series(["b", None], dtype="str"), "nan"),
    ):
        assert Names.of(col).to_numpy().tolist() == [str(x) for x in col.tolist()] == ["b", missing, "a"][: len(col)]

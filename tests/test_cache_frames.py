"""The table cache reads its tables back as ``to_pandas`` would make them (``codec.frame_of``), with
Arrow checking the dictionaries pandas then trusts."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from nsys2prv.nsys.codec import CacheDamage, frame_of


def _same(table: pa.Table) -> pd.DataFrame:
    want, got = table.to_pandas(use_threads=False), frame_of(table)
    pd.testing.assert_frame_equal(got, want, check_exact=True, check_categorical=True)
    for i in range(want.shape[1]):
        w, g = want.iloc[:, i], got.iloc[:, i]
        if isinstance(w.dtype, pd.CategoricalDtype):
            assert g.cat.categories.dtype == w.cat.categories.dtype and g.cat.codes.dtype == w.cat.codes.dtype
    return got


def _round_trip(df: pd.DataFrame, tmp_path) -> pa.Table:
    pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp_path / "t.parquet", compression="lz4")
    return pq.ParquetFile(tmp_path / "t.parquet").read(use_threads=False)


def test_a_cached_table_reads_back_as_to_pandas_makes_it(tmp_path):
    names = pd.Categorical(["b", "a", None, "b"], categories=["a", "b", "zz"])
    df = pd.DataFrame(
        {
            "start": np.array([5, 1, 2, 3], np.int64),
            "lane": np.array([0, 1, 0, 2], np.uint8),
            "share": [0.5, 1.0, np.nan, 2.0],
            "nccl": [True, False, False, True],
            "fn0": names,
            "fn1": pd.Categorical(["a", "a", "b", None], categories=["a", "b", "zz"]),  # (the same dictionary)
            "kernel": pd.Categorical(["k", "k", "k", "k"]),
        }
    )
    table = _round_trip(df, tmp_path)
    got = _same(table)
    assert got["fn0"].cat.categories.tolist() == ["a", "b", "zz"] and got["fn0"].cat.codes.tolist() == [1, 0, -1, 1]
    assert got["fn0"].dtype == got["fn1"].dtype and got["kernel"].tolist() == ["k"] * 4
    assert got["start"].tolist() == [5, 1, 2, 3] and got["lane"].dtype == np.uint8
    got.loc[1, "start"] = 7  # (writable: stage C may change a column in place)
    assert table.column("start").to_pylist() == [5, 1, 2, 3]
    assert got._mgr.nblocks == len(df.columns)  # (the fast path: a block per column, as read)


def test_other_columns_are_left_to_to_pandas(tmp_path):
    cases = [
        pd.DataFrame({"a": pd.array([1, None], dtype="Int64"), "b": [1, 2]}),  # a null in an integer column
        pd.DataFrame({"a": ["x", "y"], "b": [1, 2]}),  # text not dictionary-coded
        pd.DataFrame({"a": pd.Categorical([1, 2]), "b": [1, 2]}),  # a dictionary of numbers
        pd.DataFrame({"a": pd.Series([], dtype=np.int64)}),  # no rows
        pd.DataFrame(  # extension types without a null: stored as plain Arrow types, made again by to_pandas
            {
                "a": pd.array([1, 2], dtype="Int64"),
                "b": pd.array([True, False], dtype="boolean"),
                "c": pd.array([1.0, 2.0], dtype="Float64"),
            }
        ),
    ]
    tables = [pa.Table.from_pandas(df, preserve_index=False) for df in cases]
    indexed = pd.DataFrame({"a": [1, 2]}, index=pd.RangeIndex(5, 7))
    tables += [pa.Table.from_pandas(indexed), pa.Table.from_pandas(indexed.set_index("a"))]  # (an index kept)
    tables.append(pa.Table.from_arrays([pa.array([1, 2]), pa.array([3, 4])], names=["a", "a"]))  # a name twice
    for table in tables:
        got = _same(table)
        assert got.shape == (table.num_rows, table.num_columns)
    assert frame_of(pa.table({})).shape == (0, 0)


def test_a_dictionary_pandas_would_refuse_is_damage():
    def table(codes, values):
        return pa.table({"fn": pa.DictionaryArray.from_arrays(pa.array(codes, pa.int8()), values, safe=False)})

    twice = table([0, 1, 2], pa.array(["a", "b", "a"]))  # (a tampered file: the same category twice)
    with pytest.raises(ValueError, match="unique"):
        twice.to_pandas()
    with pytest.raises(CacheDamage, match="column fn: categories not unique"):
        frame_of(twice)
    nulls = table([0, 1], pa.array(["a", None]))
    with pytest.raises(ValueError, match="cannot be null"):
        nulls.to_pandas()
    with pytest.raises(CacheDamage, match="column fn: categories cannot be null"):
        frame_of(nulls)
    for codes in ([0, 5], [0, -2], [-1, 0]):  # (past the dictionary; a negative code that is not a null)
        with pytest.raises(CacheDamage, match="column fn: a code out of range"):
            frame_of(table(codes, pa.array(["a", "b"])))
    assert frame_of(table([1, None], pa.array(["a", "b"])))["fn"].tolist() == ["b", np.nan]


def test_the_cache_delta_encodes_its_integers_and_reads_them_back_exactly(tmp_path):
    """``codec._write`` / ``write_batches``: integer columns DELTA_BINARY_PACKED (then LZ4), text by
    its dictionary, other columns plain; every value back as written (the int64 extremes, whose steps
    overflow, and NULLs too)."""
    from nsys2prv.nsys.codec import write_batches, write_parquet

    big, small = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    df = pd.DataFrame(
        {
            "start": np.array([10, 12, big, small, 15, -1], np.int64),
            "corr": pd.array([1, None, 3, 4, None, 6], dtype="Int64"),
            "lane": np.array([0, 1, 0, 2, 1, 0], np.int32),
            "nccl": [True, False, False, True, True, False],
            "share": [0.5, 1.0, np.nan, 2.0, 0.0, 1.5],
            "name": pd.Categorical(["k", "k", "m", "k", "m", "k"]),
        }
    )
    for i, write in enumerate(
        (
            lambda fh: write_parquet(pa.Table.from_pandas(df, preserve_index=False), fh),
            lambda fh: write_batches([df.iloc[:4], df.iloc[4:]], fh),
        )
    ):
        path = tmp_path / f"t{i}.parquet"
        with open(path, "wb") as fh:
            write(fh)
        pf = pq.ParquetFile(path)
        encodings = {
            pf.metadata.row_group(0).column(j).path_in_schema: set(pf.metadata.row_group(0).column(j).encodings)
            for j in range(pf.metadata.num_columns)
        }
        assert all("DELTA_BINARY_PACKED" in encodings[c] for c in ("start", "corr", "lane"))
        assert "DELTA_BINARY_PACKED" not in encodings["nccl"] | encodings["share"] | encodings["name"]
        assert "RLE_DICTIONARY" in encodings["name"]
        codecs = {pf.metadata.row_group(0).column(j).compression for j in range(pf.metadata.num_columns)}
        assert len(codecs) == 1 and codecs <= {"LZ4", "LZ4_RAW"}  # (Arrow's name of "lz4" by version)
        back = pf.read(use_threads=False).to_pandas()
        assert back["start"].tolist() == df["start"].tolist() and back["lane"].tolist() == df["lane"].tolist()
        assert back["corr"].isna().tolist() == df["corr"].isna().tolist()
        assert back["corr"].dropna().astype(np.int64).tolist() == [1, 3, 4, 6]
        assert back["name"].astype(str).tolist() == df["name"].astype(str).tolist()


def test_a_runs_own_cache_is_arrow_ipc_read_by_row_groups_as_its_parquet(tmp_path, monkeypatch):
    """``TableCache(ipc=True)`` (a ``--no-cache`` run's own cache) stores a table as an Arrow IPC file
    of a record batch per ROW_GROUP rows (its manifest says so); ``table`` and ``parquet_file``'s row
    groups read back exactly what the Parquet cache of the same table gives; a damaged file is
    ``CacheDamage`` or an Arrow error (stage C's ``CACHE_DAMAGE``), never a wild read."""
    from nsys2prv.nsys import codec
    from nsys2prv.nsys.cache import TableCache
    from nsys2prv.pipeline.report import CACHE_DAMAGE

    monkeypatch.setattr(codec, "ROW_GROUP", 4)
    src = tmp_path / "r.sqlite"
    src.write_bytes(b"x")
    df = pd.DataFrame(
        {
            "start": np.arange(10, dtype=np.int64) * 7,
            "lane": np.array([0, 1, 0, 2, 1, 0, 0, 0, 3, 1], np.uint8),
            "corr": pd.array([1, None, 3, 4, None, 6, 7, 8, 9, 10], dtype="Int64"),
            "nccl": [True, False] * 5,
            "name": pd.Categorical(list("kkmkmkkmmk"), categories=["k", "m", "unused"]),
            "fn1": pd.Categorical(list("kmkmkmkmkm"), categories=["k", "m", "unused"]),
            "code": pd.Categorical([3, 1, 3, 3, 1, 1, 3, 1, 3, 3]),  # (Parquet gives numbers back plain)
        }
    )
    caches = {ipc: TableCache(tmp_path / f"c{ipc}" / "tables", src, ipc=ipc) for ipc in (False, True)}
    for c in caches.values():
        c.store(None, {"kernels": (df, {"source_rows": 10, "dropped": {}, "notes": {}})})
    files = {ipc: sorted(p.name for p in c.dir.iterdir()) for ipc, c in caches.items()}
    assert files == {False: ["kernels.parquet", "kinds.json"], True: ["kernels.arrow", "kinds.json"]}
    fresh = {ipc: TableCache(tmp_path / f"c{ipc}" / "tables", src) for ipc in (False, True)}  # (as stage C)
    assert fresh[True].kinds["kernels"]["source_rows"] == fresh[False].kinds["kernels"]["source_rows"] == 10
    assert fresh[True]._schemas["kernels"]["ipc"] is True and "ipc" not in fresh[False]._schemas["kernels"]
    pd.testing.assert_frame_equal(fresh[True].table("kernels"), fresh[False].table("kernels"), check_exact=True)
    assert fresh[True].table("kernels")["code"].tolist() == df["code"].tolist()
    with fresh[True].parquet_file("kernels") as ipc, fresh[False].parquet_file("kernels") as pf:
        assert ipc.metadata.num_row_groups == pf.metadata.num_row_groups == 3
        assert [ipc.metadata.row_group(i).num_rows for i in range(3)] == [4, 4, 2]
        assert ipc.schema_arrow.names == pf.schema_arrow.names
        for i in range(3):
            assert ipc.read_row_group(i, columns=["start", "name"]).equals(pf.read_row_group(i, ["start", "name"]))
            assert ipc.read_row_group(i).schema.equals(pf.read_row_group(i).schema, check_metadata=True)
            a, b = ipc.read_row_group(i).to_pandas(), pf.read_row_group(i).to_pandas()
            pd.testing.assert_frame_equal(a, b, check_exact=True)
    path = caches[True].dir / "kernels.arrow"
    data = bytearray(path.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = b"\xff" * 64  # (the batches' buffers and their lengths)
    path.write_bytes(bytes(data))
    with pytest.raises(CACHE_DAMAGE):
        TableCache(tmp_path / "cTrue" / "tables", src).table("kernels")
    path.write_bytes(bytes(data[:100]))
    with pytest.raises(CACHE_DAMAGE):
        TableCache(tmp_path / "cTrue" / "tables", src).table("kernels")


def test_a_runs_own_cache_stores_a_large_table_in_batches_as_arrow_ipc(tmp_path, monkeypatch):
    """``TableCache(ipc=True).store_batches`` (a large table of a ``--no-cache`` run, read a batch at a
    time) writes one Arrow IPC file, a record batch per ROW_GROUP rows of each frame as Parquet makes
    its row groups; the frames' own text dictionaries (other values, other orders, unused ones) are
    laid over one dictionary that grows with them, so every row group reads back with it and with the
    values the Parquet cache of the same frames gives."""
    from nsys2prv.nsys import codec
    from nsys2prv.nsys.cache import TableCache

    monkeypatch.setattr(codec, "ROW_GROUP", 4)
    src = tmp_path / "r.sqlite"
    src.write_bytes(b"x")
    names = [list("kkmkmk"), list("zmmkz"), list("mmmm"), list("qkz")]
    cats = [["k", "m", "unused"], ["z", "m", "k"], ["m"], ["q", "k", "z"]]
    frames = [
        pd.DataFrame(
            {
                "start": np.arange(len(n), dtype=np.int64) + 10 * i,
                "corr": pd.array([None if (j + i) % 3 == 0 else j for j in range(len(n))], dtype="Int64"),
                "name": pd.Categorical(n, categories=c),
                "code": pd.Categorical([7] * len(n)),  # (not text: decoded, as Parquet gives it back)
            }
        )
        for i, (n, c) in enumerate(zip(names, cats))
    ]
    frames[1].loc[2, "name"] = None  # (a missing name stays missing)
    tally = {"source_rows": 18, "dropped": {}, "notes": {}}
    caches = {ipc: TableCache(tmp_path / f"c{ipc}" / "tables", src, ipc=ipc) for ipc in (False, True)}
    for c in caches.values():
        c.store_batches("cuda_api", iter(frames), lambda: tally)
    files = {ipc: sorted(p.name for p in c.dir.iterdir()) for ipc, c in caches.items()}
    assert files == {False: ["cuda_api.parquet", "kinds.json"], True: ["cuda_api.arrow", "kinds.json"]}
    fresh = {ipc: TableCache(tmp_path / f"c{ipc}" / "tables", src) for ipc in (False, True)}
    assert fresh[True].kinds["cuda_api"]["source_rows"] == 18
    assert fresh[True]._schemas["cuda_api"] == {"columns": ["start", "corr", "name", "code"], "ipc": True}
    whole = {ipc: c.table("cuda_api") for ipc, c in fresh.items()}
    assert list(whole[True]["name"].cat.categories) == ["k", "m", "unused", "z", "q"]
    for col in ("start", "corr", "code"):
        assert whole[True][col].tolist() == whole[False][col].tolist()
    want = [x for n in names for x in n]
    want[6 + 2] = None
    assert whole[True]["name"].astype(object).where(whole[True]["name"].notna(), None).tolist() == want
    assert whole[False]["name"].astype(object).where(whole[False]["name"].notna(), None).tolist() == want
    with fresh[True].parquet_file("cuda_api") as ipc, fresh[False].parquet_file("cuda_api") as pf:
        rows = [pf.metadata.row_group(i).num_rows for i in range(pf.metadata.num_row_groups)]
        assert rows == [4, 2, 4, 1, 4, 3]
        assert [ipc.metadata.row_group(i).num_rows for i in range(ipc.metadata.num_row_groups)] == rows
        for i in range(len(rows)):
            a, b = ipc.read_row_group(i).to_pandas(), pf.read_row_group(i).to_pandas()
            assert list(a["name"].cat.categories) == ["k", "m", "unused", "z", "q"]
            assert a["name"].astype(object).tolist() == b["name"].astype(object).tolist()
            assert a["start"].tolist() == b["start"].tolist() and a["corr"].tolist() == b["corr"].tolist()


def test_an_ipc_row_group_checks_the_columns_it_reads(tmp_path):
    """``IpcGroups`` checks in full the columns a read asks for (a name code past its dictionary's end:
    an Arrow error, never a wild read) and leaves the others untouched (the slice plan reads only the
    starts and ends of every group)."""
    from nsys2prv.nsys.codec import IpcGroups

    bad = pa.DictionaryArray.from_arrays(pa.array([0, 5, 1], pa.int32()), pa.array(["a", "b"]), safe=False)
    batch = pa.record_batch([pa.array([1, 2, 3], pa.int64()), bad], names=["start", "name"])
    with pa.OSFile(str(tmp_path / "t.arrow"), "wb") as sink, pa.ipc.new_file(sink, batch.schema) as w:
        w.write_batch(batch)
    groups = IpcGroups(pa.memory_map(str(tmp_path / "t.arrow")))
    assert groups.read_row_group(0, columns=["start"]).column("start").to_pylist() == [1, 2, 3]
    assert groups.read(columns=["start"]).num_rows == 3
    for read in (lambda: groups.read_row_group(0), lambda: groups.read_row_group(0, ["name"]), groups.read):
        with pytest.raises(pa.ArrowInvalid):
            read()

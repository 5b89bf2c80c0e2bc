"""The generator itself: every schema shape builds, its tables/columns are the DDL's, ids round-trip."""

from __future__ import annotations

import sqlite3

import pytest
from nsysgen import DDL_DIR, SCHEMAS, NsysBuilder, decode_gtid, encode_gtid, parse_ddl, schema_ddl


def _tables(path) -> dict[str, list[str]]:
    con = sqlite3.connect(path)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        return {n: [r[1] for r in con.execute(f'PRAGMA table_info("{n}")')] for n in names}
    finally:
        con.close()


def _small(path, schema, lazy=True, **kw):
    b = NsysBuilder(path, schema=schema, lazy=lazy, host="nodeX", env={"PMI_RANK": "3"}, **kw)
    b.process(100, "app")
    b.thread_name(100, 101, "worker")
    b.cuda_api(100, 100, "cudaLaunchKernel_v7000", 10, 20, 1)
    b.kernel(100, 0, 7, 30, 40, 1, "k", grid=(2, 3, 4), block=(5, 6, 7))
    b.memcpy(100, 0, 7, 41, 42, 2, 64, 1)
    b.memset(100, 0, 7, 50, 60, 3, 16)
    b.nvtx_push(100, 100, 1, 100, text="a")
    b.mpi(100, 100, "MPI_Init", 0, 5)
    b.mpi(100, 100, "MPI_Send", 6, 7, kind="p2p", peer=1, size=8, tag=4)
    b.mpi_rank(100, 100, 3, ts=5)
    b.osrt(100, 101, "read", 3, 9)
    b.gpu_metric_sample(0, 10, {"SMs Active [Throughput %]": 50})
    return b, b.save()


def _meta(con, table):
    return dict(con.execute(f"SELECT name, value FROM {table}").fetchall())


@pytest.mark.parametrize("schema", SCHEMAS)
def test_full_export_has_exactly_the_ddl_tables_and_columns(tmp_path, schema):
    _, path = _small(tmp_path / "r.sqlite", schema, lazy=False)
    got = _tables(path)
    want = {
        name: [c.name for c in t.items if hasattr(c, "name")]
        for name, t in parse_ddl("\n".join(schema_ddl(schema).values())).items()
    }
    assert got == want


@pytest.mark.parametrize("schema", SCHEMAS)
def test_lazy_export_has_only_tables_with_rows_plus_metadata(tmp_path, schema):
    _, path = _small(tmp_path / "r.sqlite", schema)
    got = set(_tables(path))
    ddl = set(schema_ddl(schema))
    assert got <= ddl
    assert "CUDA_GPU_MEMORY_USAGE_EVENTS" not in got and "SCHED_EVENTS" not in got  # no rows -> no table
    for t in (
        "StringIds",
        "ThreadNames",
        "PROCESSES",
        "TARGET_INFO_SESSION_START_TIME",
        "TARGET_INFO_SYSTEM_ENV",
        "CUPTI_ACTIVITY_KIND_RUNTIME",
        "CUPTI_ACTIVITY_KIND_KERNEL",
        "CUPTI_ACTIVITY_KIND_MEMCPY",
        "CUPTI_ACTIVITY_KIND_MEMSET",
        "NVTX_EVENTS",
        "OSRT_API",
    ):
        assert t in got, t
    enums = {t for t in got if t.startswith("ENUM_")}
    assert bool(enums) == (schema != "2.9.1")
    assert enums == {t for t in ddl if t.startswith("ENUM_")}  # a lazy export writes every enum table


def test_schema_specific_tables_and_columns(tmp_path):
    shapes = {s: _tables(_small(tmp_path / f"{s}.sqlite", s, lazy=False)[1]) for s in SCHEMAS}
    s291, s300, s3132, s322 = (shapes[s] for s in SCHEMAS)
    # metadata table name
    assert "EXPORT_META_DATA" in s291 and "EXPORT_META_DATA" in s300
    assert "META_DATA_EXPORT" not in s300 and "META_DATA_CAPTURE" not in s300
    assert "META_DATA_EXPORT" in s3132 and "META_DATA_CAPTURE" in s3132 and "EXPORT_META_DATA" not in s3132
    # enums (the 3.0.0 typo, fixed by 3.13.2), none in 2.x
    assert "ENUM_CUDA_KRENEL_LAUNCH_TYPE" in s300 and "ENUM_CUDA_KERNEL_LAUNCH_TYPE" not in s300
    assert "ENUM_CUDA_KERNEL_LAUNCH_TYPE" in s3132 and "ENUM_CUDA_KRENEL_LAUNCH_TYPE" not in s3132
    assert not [t for t in s291 if t.startswith("ENUM_")]
    # greenContextId, inserted right after contextId
    for t in ("CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"):
        assert "greenContextId" not in s300[t] and "greenContextId" not in s291[t]
        cols = s3132[t]
        assert cols[cols.index("contextId") + 1] == "greenContextId", t
    # null stream / context info
    assert "TARGET_INFO_CUDA_NULL_STREAM" in s291 and "TARGET_INFO_CUDA_CONTEXT_INFO" not in s291
    assert "TARGET_INFO_CUDA_CONTEXT_INFO" in s3132 and "TARGET_INFO_CUDA_NULL_STREAM" not in s3132
    # DX12 object name: TEXT objectName in 2.x, objectNameId in 3.0.0
    assert "objectName" in s291["DX12_API"] and "objectNameId" not in s291["DX12_API"]
    assert "objectNameId" in s300["DX12_API"]
    assert "CUDA_GPU_MEMORY_POOL_EVENTS" in s300 and "CUDA_GPU_MEMORY_POOL_EVENTS" not in s291
    assert not [c for c in s291["CUDA_GPU_MEMORY_USAGE_EVENTS"] if "MemoryPool" in c]
    # MPI: none before 3.13.2; commUid only in 3.22
    for s in (s291, s300):
        assert not [t for t in s if t.startswith("MPI_")]
    assert "MPI_P2P_EVENTS" in s3132 and "commUid" not in s3132["MPI_P2P_EVENTS"]
    p2p = s322["MPI_P2P_EVENTS"]
    assert p2p == [
        "start",
        "end",
        "globalTid",
        "textId",
        "commHandle",
        "commUid",
        "tag",
        "remoteRank",
        "size",
        "requestHandle",
    ]
    assert s322["MPI_COLLECTIVES_EVENTS"] == [
        "start",
        "end",
        "globalTid",
        "textId",
        "commHandle",
        "commUid",
        "rootRank",
        "size",
        "recvSize",
        "requestHandle",
    ]
    assert s322["MPI_COMMUNICATORS"][-1] == "commUid" and s322["MPI_RANKS"] == ["globalTid", "rank"]
    # GPU metrics: GENERIC_EVENTS in the older shapes, GPU_METRICS in 3.22
    assert "GENERIC_EVENTS" in s300 and "GPU_METRICS" not in s300
    assert s322["GPU_METRICS"] == ["timestamp", "typeId", "metricId", "value"] and "GENERIC_EVENTS" not in s322
    assert s322["TARGET_INFO_GPU_METRICS"] == ["typeId", "sourceId", "typeName", "metricId", "metricName"]
    assert s322["TARGET_INFO_CUDA_DEVICE"][:3] == ["gpuId", "cudaId", "pid"]
    # NVTX: same columns up to 3.13.2; 3.22 appends binaryData and has payload schema tables
    assert s291["NVTX_EVENTS"] == s300["NVTX_EVENTS"] == s3132["NVTX_EVENTS"]
    assert s322["NVTX_EVENTS"] == s300["NVTX_EVENTS"] + ["binaryData"]
    assert "NVTX_PAYLOAD_SCHEMAS" in s322 and "NVTX_PAYLOAD_SCHEMA_ENTRIES" in s322
    # CUDA graphs: node table in <= 3.0.0 (as CUDA_GRAPH_EVENTS), renamed + graph-level in 3.22
    assert "graphNodeId" in s300["CUDA_GRAPH_EVENTS"] and "CUDA_GRAPH_NODE_EVENTS" not in s300
    assert "graphId" in s322["CUDA_GRAPH_EVENTS"] and "graphNodeId" in s322["CUDA_GRAPH_NODE_EVENTS"]
    assert "graphExecId" in s322["CUPTI_ACTIVITY_KIND_GRAPH_TRACE"]


def test_real_ddl_files_are_unmodified_exports():
    """The two local DDL files are nsys exports, parseable and round-trippable by the DDL model."""
    for v, n_min in (("3.0.0", 130), ("3.13.2", 80)):
        text = (DDL_DIR / f"schema_{v}.sql").read_text()
        tables = parse_ddl(text)
        assert len(tables) >= n_min
        con = sqlite3.connect(":memory:")
        for t in tables.values():
            con.execute(t.render())
        for name, t in tables.items():
            orig = sqlite3.connect(":memory:")
        # the rendered DDL gives the same columns as the original text
        orig = sqlite3.connect(":memory:")
        orig.executescript(text)
        for name in tables:
            a = [r[1:4] for r in orig.execute(f'PRAGMA table_info("{name}")')]
            b = [r[1:4] for r in con.execute(f'PRAGMA table_info("{name}")')]
            assert a == b, name


@pytest.mark.parametrize("schema", SCHEMAS)
def test_metadata_and_contents(tmp_path, schema):
    b, path = _small(tmp_path / "r.sqlite", schema, session_start_ns=1_700_000_000_123_456_789)
    con = sqlite3.connect(path)
    old = schema in ("2.9.1", "3.0.0")
    meta = _meta(con, "EXPORT_META_DATA" if old else "META_DATA_EXPORT")
    assert meta["EXPORT_SCHEMA_VERSION"].startswith(schema)
    assert meta["EXPORT_LAZY" if old else "EXPORT_PARAM_LAZY"] == "true"
    if not old:
        assert meta["EXPORT_PARAM_TIME_NORMALIZE"] == "false" and meta["EXPORT_PARAM_TIME_SHIFT"] == "0"
        env = [
            v
            for k, v in con.execute("SELECT name, value FROM META_DATA_CAPTURE")
            if k == "PROCESS_0:ENVIRONMENT_VARIABLE"
        ]
        assert env == ['PMI_RANK="3"']
    start = con.execute("SELECT utcEpochNs FROM TARGET_INFO_SESSION_START_TIME").fetchall()
    assert start == [(1_700_000_000_123_456_789,)]
    assert con.execute("SELECT value FROM TARGET_INFO_SYSTEM_ENV WHERE name='Hostname'").fetchall() == [("nodeX",)]
    # strings resolve
    name = con.execute(
        "SELECT s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId"
    ).fetchone()
    assert name == ("cudaLaunchKernel_v7000",)
    assert con.execute(
        "SELECT gridX, gridY, gridZ, blockX, blockY, blockZ FROM CUPTI_ACTIVITY_KIND_KERNEL"
    ).fetchall() == [(2, 3, 4, 5, 6, 7)]
    # MPI rank and MPI calls
    if old:
        assert not con.execute("SELECT name FROM sqlite_master WHERE name LIKE 'MPI_%'").fetchall()
        rows = con.execute(
            "SELECT eventType, text, domainId, textId FROM NVTX_EVENTS ORDER BY start, eventType"
        ).fetchall()
        dom = [r for r in rows if r[0] == 75]
        assert [(r[1], r[2]) for r in dom] == [("MPI", 1)]
        mpi_names = con.execute(
            "SELECT s.value FROM NVTX_EVENTS n JOIN StringIds s ON s.id = n.textId "
            "WHERE eventType = 59 AND domainId = 1 ORDER BY start"
        ).fetchall()
        assert mpi_names == [("MPI_Init",), ("MPI_Send",)]
        assert ("MPI Rank 3",) in con.execute("SELECT text FROM NVTX_EVENTS WHERE eventType = 39").fetchall()
    else:
        assert con.execute("SELECT rank FROM MPI_RANKS").fetchall() == [(3,)]
        assert con.execute("SELECT remoteRank, size, tag FROM MPI_P2P_EVENTS").fetchall() == [(1, 8, 4)]
    # GPU metrics
    if schema == "3.22":
        assert con.execute(
            "SELECT g.value, i.metricName, g.typeId & 255 FROM GPU_METRICS g JOIN "
            "TARGET_INFO_GPU_METRICS i USING (typeId, metricId)"
        ).fetchall() == [(50, "SMs Active [Throughput %]", 0)]
    else:
        assert con.execute(
            "SELECT json_extract(data, '$.\"SMs Active [Throughput %]\"'), typeId & 255 FROM GENERIC_EVENTS"
        ).fetchall() == [(50, 0)]


@pytest.mark.parametrize("schema", SCHEMAS)
def test_global_tid_encoding_decodes_back(tmp_path, schema):
    b, path = _small(tmp_path / "r.sqlite", schema)
    con = sqlite3.connect(path)
    g = con.execute("SELECT globalTid FROM OSRT_API").fetchone()[0]
    assert decode_gtid(g) == {"hw": 0, "vm": 1, "pid": 100, "tid": 101}
    assert g == (1 << 48) | (100 << 24) | 101
    gp = con.execute("SELECT globalPid FROM CUPTI_ACTIVITY_KIND_KERNEL").fetchone()[0]
    assert gp == b.process(100).gpid == (g & 0xFFFFFFFFFF000000)
    assert con.execute("SELECT globalPid, pid, name FROM PROCESSES").fetchall() == [(gp, 100, "app")]
    # NVIDIA's arithmetic (sheet §2) agrees
    assert (g // 0x1000000 % 0x1000000, g % 0x1000000) == (100, 101)


def test_encode_gtid_fields_and_limits():
    g = encode_gtid(0xABCDEF, 0x123456, vm=2, hw=3)
    assert decode_gtid(g) == {"hw": 3, "vm": 2, "pid": 0xABCDEF, "tid": 0x123456}
    assert encode_gtid(8061, 8061) == 281610217856893  # the mrank0 example of the sheet
    with pytest.raises(ValueError):
        encode_gtid(1 << 24, 0)


def test_shuffle_keeps_rows_changes_order(tmp_path):
    _, a = _small(tmp_path / "a.sqlite", "3.13.2")
    b = NsysBuilder(tmp_path / "b.sqlite", schema="3.13.2", shuffle_seed=7)
    for i in range(50):
        b.osrt(100, 100, f"f{i}", i * 10, i * 10 + 5)
    b.save()
    con = sqlite3.connect(tmp_path / "b.sqlite")
    starts = [r[0] for r in con.execute("SELECT start FROM OSRT_API")]
    assert sorted(starts) == [i * 10 for i in range(50)] and starts != sorted(starts)

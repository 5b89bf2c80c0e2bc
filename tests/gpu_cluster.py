"""A generated GPU cluster run for the GUI tier and scripts/render_views.py: 8 MPI ranks on 2 hosts
(4 a host), one GPU each, in nsys 2024.5's export shape (tests/nsysgen.py).

Each rank: MPI_Init (the ranks start 50 us apart), 6 time steps of 2 ms, each an NVTX range
"timestep" with three kernels (``halo_pack`` on stream 13, ``stencil`` and ``reduce`` on stream 7;
``stencil`` takes 40 us longer per rank, the imbalance), a 1 MiB device-to-host copy, an
MPI_Sendrecv with rank r^1 and an MPI_Allreduce that all ranks leave together, then MPI_Finalize;
GPU metrics (SMs active, DRAM read bandwidth) every 250 us.  The calls end when the data say they
can (a receive when its partner is done, a collective when the last rank entered), so the clocks of
the two hosts stay consistent.
"""

from __future__ import annotations

from pathlib import Path

from nsysgen import NsysBuilder


def gpu_cluster_reports(where: Path, ranks: int = 8, per_host: int = 4) -> list[Path]:
    """One report per rank in WHERE (rank<r>.sqlite); rank r on host node<r // per_host>, its own GPU
    (CUDA device r % per_host, nsys GPU id the same)."""
    sm, dram = "SMs Active [Throughput %]", "DRAM Read Bandwidth [Throughput %]"
    kernels = (("halo_pack", 80_000, 13), ("stencil", 600_000, 7), ("reduce", 120_000, 7))
    period, start = 2_000_000, 3_000_000  # one time step every 2 ms, the first at 3 ms

    def busy_until(rank: int, step: int) -> int:  # when rank's GPU work of a step ends (stencil grows with rank)
        t = start + step * period
        return t + sum(d + 40_000 * rank * (n == "stencil") + 40_000 for n, d, _ in kernels) + 130_000

    where.mkdir(parents=True, exist_ok=True)
    out = []
    for r in range(ranks):
        pid, tid = 5000 + r, 5000 + r
        dev = r % per_host
        b = NsysBuilder(
            where / f"rank{r}.sqlite", schema="3.13.2", host=f"node{r // per_host}", env={"PMI_RANK": str(r)}
        )
        b.process(pid, "./stencil")
        b.mpi(pid, tid, "MPI_Init", 10_000 + r * 50_000, 2_500_000, kind="other")
        b.mpi_rank(pid, tid, r, ts=2_500_500)
        corr = 0
        for step in range(6):
            t = start + step * period
            b.nvtx_push(pid, tid, t, t + period - 100_000, text="timestep")
            for name, dur, stream in kernels:
                dur += 40_000 * r * (name == "stencil")
                corr += 1
                b.cuda_api(pid, tid, "cudaLaunchKernel_v7000", t, t + 20_000, corr)
                b.kernel(pid, dev, stream, t + 30_000, t + 30_000 + dur, corr, name)
                t += dur + 40_000
            corr += 1
            b.cuda_api(pid, tid, "cudaMemcpy_v3020", t, t + 120_000, corr)
            b.memcpy(pid, dev, 7, t + 10_000, t + 110_000, corr, 1 << 20, copy_kind=2)
            t += 130_000
            peer = r ^ 1
            meet = max(busy_until(r, step), busy_until(peer, step)) + 30_000
            b.mpi(pid, tid, "MPI_Sendrecv", t, meet, kind="p2p", peer=peer, size=4096, tag=step)
            last = max(max(busy_until(q, step), busy_until(q ^ 1, step)) + 30_000 for q in range(ranks))
            b.mpi(pid, tid, "MPI_Allreduce", meet + 5_000, last + 60_000, kind="coll", size=8)
        end = start + 6 * period
        b.mpi(pid, tid, "MPI_Finalize", end, end + 300_000 + r * 20_000, kind="other")
        for k, ts in enumerate(range(start, end, 250_000)):
            b.gpu_metric_sample(dev, ts, {sm: (20 * k + 10 * r) % 100, dram: (15 * k) % 80})
        out.append(b.save())
    return out


if __name__ == "__main__":  # python tests/gpu_cluster.py DIR: the 8 reports, for nsys2prv -m DIR/rank*.sqlite
    import sys

    for path in gpu_cluster_reports(Path(sys.argv[1])):
        print(path)

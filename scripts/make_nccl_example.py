#!/usr/bin/env python3
"""Two generated reports of a 2-GPU NCCL data-parallel step, for checking our traces with other tools
(BSC BasicAnalysis, paramedir): ranks 0 and 1 on one host, each on its own GPU (ordinals 0 and 1),
4 training steps of forward/backward kernels, a host-to-device copy, an NCCL all-reduce kernel and a
cudaStreamSynchronize each.

    python3 scripts/make_nccl_example.py OUTDIR            # no MPI calls (NCCL bootstrapped by torchrun)
    python3 scripts/make_nccl_example.py OUTDIR --mpi      # plus an MPI_Allreduce per step on the host
    nsys2prv -m OUTDIR/rank*.sqlite OUTDIR/out

Times are exact (ns): rank 1's kernels are 20% longer, so its GPU idles less before the all-reduce
(device load imbalance); both all-reduce kernels start 60 us before the step's common point.  The
files are nsys-shaped SQLite exports (schema 3.13.2) made with tests/nsysgen.py.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from nsysgen import NsysBuilder  # noqa: E402  (the tests' generator of nsys exports)

NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
STEP = 1_000_000


def rank_report(path: Path, r: int, mpi: bool) -> Path:
    b = NsysBuilder(path, host="gpunode0", env={"SLURM_PROCID": str(r)})
    pid = 7000 + r
    b.process(pid, "python3 train.py")
    corr = 0
    t = 50_000
    for step in range(4):
        fwd = 300_000 if r == 0 else 360_000
        for name, length in (("forward_gemm", fwd), ("backward_gemm", fwd)):
            corr += 1
            b.cuda_api(pid, pid, "cudaLaunchKernel_v7000", t, t + 8_000, corr)
            b.kernel(pid, r, 7, t + 10_000, t + 10_000 + length, corr, name)
            t += length + 12_000
        corr += 1
        b.cuda_api(pid, pid, "cudaMemcpyAsync_v3020", t, t + 5_000, corr)
        b.memcpy(pid, r, 7, t + 6_000, t + 46_000, corr, 1 << 22, copy_kind=1)
        corr += 1
        start = 50_000 + (step * STEP) + 900_000  # both ranks enter the all-reduce together
        b.cuda_api(pid, pid, "cudaLaunchKernel_v7000", t + 50_000, t + 55_000, corr)
        b.kernel(pid, r, 13, max(t + 60_000, start - 60_000), start, corr, NCCL)
        b.cuda_api(pid, pid, "cudaStreamSynchronize_v3020", t + 56_000, start + 2_000, corr + 1000)
        if mpi:
            b.mpi(
                pid, pid, "MPI_Allreduce", start + 5_000, start + 40_000 + 10_000 * r, kind="coll", size=8, recv_size=8
            )
        t = 50_000 + (step + 1) * STEP
    return b.save()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("outdir", type=Path)
    ap.add_argument("--mpi", action="store_true", help="add an MPI_Allreduce per step")
    args = ap.parse_args()
    args.outdir.mkdir(parents=True, exist_ok=True)
    for r in range(2):
        print(f"wrote {rank_report(args.outdir / f'rank{r}.sqlite', r, args.mpi)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The table of readers: one per data kind.  Adding a data kind = adding a row here."""

from nsys2prv.nsys.readers import cuda_api, gpu_metrics, graphs, kernels, memops, mpi, nccl, nvtx, openacc, osrt
from nsys2prv.nsys.readers.base import ReadResult, Reader

READERS: tuple[Reader, ...] = (
    cuda_api.READER,
    kernels.READER,
    memops.MEMCPY_READER,
    memops.MEMSET_READER,
    nvtx.READER,
    nccl.READER,
    mpi.READER,
    osrt.READER,
    gpu_metrics.READER,
    graphs.EXEC_READER,
    graphs.API_READER,
    openacc.READER,
)

__all__ = ["READERS", "ReadResult", "Reader"]

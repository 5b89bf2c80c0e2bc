"""The table of readers: one per data kind.  Adding a data kind = adding a row here."""

from nsys2prv.nsys.readers import cuda_api, kernels, memops, mpi, nvtx, osrt
from nsys2prv.nsys.readers.base import ReadResult, Reader

READERS: tuple[Reader, ...] = (
    cuda_api.READER,
    kernels.READER,
    memops.MEMCPY_READER,
    memops.MEMSET_READER,
    nvtx.READER,
    nvtx.NCCL_READER,
    mpi.READER,
    osrt.READER,
)

__all__ = ["READERS", "ReadResult", "Reader"]

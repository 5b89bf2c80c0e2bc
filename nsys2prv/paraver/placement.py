"""Where each block of a relayed merge goes (``merge.merge_split``): the processes that format the
blocks in turn pass the offset on in a ring of pipes.  A process formats its next block into memory,
waits for the offset that block starts at (the end of the block before it, sent by the process that
formatted that one: ``Ring.receive``), sends its own end on (``Ring.send``: known once its text is,
before it is written, so the next block's process need not wait for the write) and writes the block
there (``write_at``: explicit offsets, the descriptor's shared file offset is not moved).  Every byte
of the .prv is written once, by the process that formatted it: no part file copied in afterwards
(r10m: 0.7 GB of ``copy_file_range``, 0.73 CPU s) -- but for a block larger than its process's buffer
(many reports: a block gives each report's chunk a few merge rounds), whose text beyond it goes to a
file of its own first, copied in by the kernel (``copy_at``) when the offset comes.

Only for a plain file (the gzip stream is written through one process: ``merge._append``)."""

from __future__ import annotations

import errno
import io
import os
import stat
import struct

import numpy as np

_OFFSET = struct.Struct("<q")
SPILL_BYTES = 1 << 24  # a block's text kept in memory beyond which it goes to a file (``BlockText``)
COPY_BLOCK = 1 << 22
_NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EPERM, errno.EBADF}


def plain_file(fh) -> bool:
    """Whether ``fh`` writes straight into a regular file (not through gzip or a pipe)."""
    try:
        return isinstance(fh, io.BufferedWriter) and stat.S_ISREG(os.fstat(fh.fileno()).st_mode)
    except (OSError, ValueError, io.UnsupportedOperation):
        return False


class Ring:
    """The pipes linking the processes that take the blocks in turn (made before they fork): process
    p receives its blocks' offsets on pipe p and sends its blocks' ends on pipe p + 1 (the last on
    pipe 0); ``out``: the output's descriptor (inherited)."""

    def __init__(self, out: int, processes: int):
        self.out = out
        self.pipes = [os.pipe() for _ in range(processes)]

    def start(self, offset: int) -> None:
        """The first block starts at ``offset`` (what comes before it is written and flushed)."""
        send(self.pipes[0][1], offset)

    def receive(self, p: int) -> int:
        """The offset process ``p``'s next block starts at (waits for it)."""
        return _receive(self.pipes[p][0])

    def send(self, p: int, offset: int) -> None:
        """Process ``p``'s block ends at ``offset``: the next block starts there."""
        send(self.pipes[(p + 1) % len(self.pipes)][1], offset)

    def close(self) -> None:
        for r, w in self.pipes:
            os.close(r)
            os.close(w)


def send(fd: int, offset: int) -> None:
    os.write(fd, _OFFSET.pack(offset))  # (8 bytes: one atomic pipe write)


def _receive(fd: int) -> int:
    data = b""
    while len(data) < _OFFSET.size:
        got = os.read(fd, _OFFSET.size - len(data))
        if not got:
            raise EOFError("the merge's offset never came")  # (the caller failed: it ends this process)
        data += got
    return _OFFSET.unpack(data)[0]


def write_at(out: int, data: memoryview, at: int) -> None:
    """All of ``data`` into ``out`` at offset ``at`` (the descriptor's file offset not moved)."""
    done = 0
    while done < len(data):
        n = os.pwrite(out, data[done:], at + done)
        if n <= 0:
            raise OSError("the .prv took no more bytes")
        done += n


def copy_at(src: int, out: int, at: int, size: int) -> None:
    """``size`` bytes of ``src`` from its start into ``out`` at offset ``at`` (neither descriptor's
    file offset moved): by the kernel where it can, else read and written."""
    done = 0
    try:
        while done < size:
            n = os.copy_file_range(src, out, size - done, done, at + done)
            if n == 0:
                break
            done += n
    except OSError as exc:
        if exc.errno not in _NO_KERNEL_COPY:
            raise
    except AttributeError:  # (no copy_file_range on this platform)
        pass
    while done < size:
        block = os.pread(src, min(COPY_BLOCK, size - done), done)
        if not block:
            raise OSError(errno.EIO, "a merge block's spilled text ended early")
        done += os.pwrite(out, block, at + done)


class BlockText:
    """A block's text, formatted straight into one array reused from block to block; beyond SPILL_BYTES
    the text so far goes to the file ``spill`` (created when first needed), so memory stays bounded
    whatever a block's size (``land`` puts both where the block goes)."""

    def __init__(self, size: int, spill: str):
        self.buf = np.empty(size, np.uint8)
        self.n = 0  # bytes in ``buf``
        self.spill, self.fd, self.spilled = spill, -1, 0  # (bytes in the file)

    def room(self, n: int) -> np.ndarray:
        """At least ``n`` bytes to format into, after the text so far (spilled, or the array grown)."""
        if self.n + n > len(self.buf):
            if self.n >= SPILL_BYTES:
                if self.fd < 0:
                    self.fd = os.open(self.spill, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                write_at(self.fd, self.buf[: self.n].data, self.spilled)
                self.spilled += self.n
                self.n = 0
            if self.n + n > len(self.buf):
                grown = np.empty(max(2 * len(self.buf), self.n + n), np.uint8)
                grown[: self.n] = self.buf[: self.n]
                self.buf = grown
        return self.buf[self.n : self.n + n]

    def advance(self, n: int) -> None:
        self.n += n

    def write(self, data) -> None:
        m = len(data)
        self.room(m)[:] = np.frombuffer(data, np.uint8)
        self.n += m

    def size(self) -> int:
        return self.spilled + self.n

    def land(self, out: int, at: int) -> None:
        """The block's text into ``out`` at ``at`` (the spilled part by the kernel), then emptied."""
        if self.spilled:
            copy_at(self.fd, out, at, self.spilled)
        write_at(out, self.buf[: self.n].data, at + self.spilled)
        self.n = self.spilled = 0

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            os.unlink(self.spill)
            self.fd = -1

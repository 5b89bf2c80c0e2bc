#!/usr/bin/env python3
"""What writing into the page cache costs here, on memory the kernel hands out fresh or just freed:
the system CPU of writing files of SIZE MB (4 MB writes, each file closed), in this order:

    write A, write B           (fresh pages: nothing freed yet)
    remove A and B, write C    (the pages A and B just gave back)
    sleep 3 s, write D         (C kept; pages freed longer ago, or never used)

On a virtual machine whose host takes back the guest's free memory (virtio-balloon free page
reporting, ``/sys/bus/virtio/drivers/virtio_balloon``), fresh pages cost a fault on the host each:
the system time of a conversion follows how much memory it touches that was not freed moments
before, not only how much it writes (BENCHMARKS.md, "Issue 40, stop 56").

Usage: bench_fresh_pages.py DIR [--size MB] [--rounds N]   (DIR: on the disk the outputs go to)
"""

from __future__ import annotations

import argparse
import os
import resource
import time

CASES = ("fresh", "fresh again", "just freed", "after 3 s")


def _write(path: str, size: int, block: bytes) -> float:
    """System CPU seconds of writing ``size`` bytes to a new file at ``path``."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_stime
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        for _ in range(size // len(block)):
            os.write(fd, block)
    finally:
        os.close(fd)
    return resource.getrusage(resource.RUSAGE_SELF).ru_stime - before


def one_round(where: str, size: int, block: bytes) -> list[float]:
    a, b, c, d = paths = [os.path.join(where, f"fresh_pages.{x}.{os.getpid()}") for x in "abcd"]
    try:
        got = [_write(a, size, block), _write(b, size, block)]
        os.unlink(a)
        os.unlink(b)
        got.append(_write(c, size, block))
        time.sleep(3)
        got.append(_write(d, size, block))
        return got
    finally:  # (also when interrupted: no file of SIZE MB left behind)
        for p in paths:
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--size", type=int, default=1024, help="MB a file (default 1024)")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    block = os.urandom(4 << 20)
    for r in range(args.rounds):
        got = one_round(args.dir, args.size << 20, block)
        print(f"round {r + 1}: " + ", ".join(f"{c} {s / (args.size / 1024):.2f} s/GB" for c, s in zip(CASES, got)))


if __name__ == "__main__":
    main()

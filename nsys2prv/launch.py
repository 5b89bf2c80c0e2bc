"""The console script: signals are caught before anything heavy is imported (pandas, numba: most of
the start-up), so that a Ctrl-C or a SIGTERM at any moment ends the command with one line."""

import signal
import sys

from nsys2prv.core import collector
from nsys2prv.core.errors import Interrupted, catch_signals


def entry() -> None:
    catch_signals()
    collector.hold()  # (until the command's imports are done: ``collector.release``)
    try:
        from nsys2prv.cli import entry as run  # after the handlers: this import loads everything
    except Interrupted as exc:
        print(
            f"nsys2prv: stopped by {signal.Signals(exc.signum).name}; nothing written (earlier outputs are kept)",
            file=sys.stderr,
        )
        raise SystemExit(128 + exc.signum) from None
    run()

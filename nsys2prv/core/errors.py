"""Errors shown to the user as one line (file + problem), never as a traceback, and the signals that
stop a conversion."""

import signal
import threading
from contextlib import contextmanager


class UserError(Exception):
    """A problem with the user's input or environment; printed as one line, exit code 2."""

    def __init__(self, message: str, path: str | None = None):
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)

    def __reduce__(self):  # raised in worker processes, re-raised in the main one
        return (type(self), (self.message, self.path))


class Interrupted(BaseException):
    """A SIGINT, SIGTERM or SIGHUP, raised in the main thread so that every ``finally`` cleans up (not a
    KeyboardInterrupt: click would print "Aborted!")."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _raise_interrupted(signum, _frame):
    raise Interrupted(signum)


def catch_signals() -> None:
    for sig in STOP_SIGNALS:
        signal.signal(sig, _raise_interrupted)


@contextmanager
def signals_recorded():
    """The stop signals only recorded while the block runs (their handlers replaced: Python runs a
    handler in the main thread whichever thread the kernel delivers to -- a signal mask would not hold
    in a process with other threads); yields the list of those that arrived.  Outside the main thread
    (where handlers cannot be set) nothing is replaced."""
    held: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield held
        return
    old = {sig: signal.signal(sig, lambda signum, _frame: held.append(int(signum))) for sig in STOP_SIGNALS}
    try:
        yield held
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


@contextmanager
def signals_held():
    """Around a fork: a stop signal that arrives meanwhile only recorded, and raised again right after
    with the handlers back (``Interrupted`` in the command), in the caller's code.  Its handler would
    otherwise run inside the fork's hooks (logging's ``after_in_parent``), where Python reports the
    exception as ignored and drops it: the command printed a traceback beside its one line, or ran on
    to the end and exited 0.  A child forked inside starts with the recording handlers
    (``workers.init_worker`` ignores the signals)."""
    held: list[int] = []
    try:
        with signals_recorded() as held:
            yield
    finally:  # (also when the fork failed: the signal still stops the command)
        if held:
            signal.raise_signal(held[0])

"""Errors shown to the user as one line (file + problem), never as a traceback, and the signals that
stop a conversion."""

import signal
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


_CAUGHT: list[int] = []  # the signals caught since ``catch_signals`` (``signals_held``)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _raise_interrupted(signum, _frame):
    _CAUGHT.append(signum)
    raise Interrupted(signum)


def catch_signals() -> None:
    _CAUGHT.clear()
    for sig in STOP_SIGNALS:
        signal.signal(sig, _raise_interrupted)


@contextmanager
def signals_held():
    """Around a fork in the main thread: the stop signals held (blocked) while it forks and delivered
    after it, where their ``Interrupted`` is raised as anywhere else.  Raised inside the fork's hooks
    (logging's ``after_in_parent``), Python would print the exception as ignored and drop it: the
    command ran on to the end and exited 0.  A child forked inside starts with them held
    (``workers.init_worker`` ignores, then lets them through).  A signal another thread took meanwhile
    (its handler then run in this one, maybe inside the hooks) is raised again on the way out."""
    caught = len(_CAUGHT)
    mask = getattr(signal, "pthread_sigmask", None)  # (POSIX)
    old = mask(signal.SIG_BLOCK, STOP_SIGNALS) if mask is not None else None
    try:
        yield
    finally:
        if mask is not None and old is not None:
            mask(signal.SIG_SETMASK, old)  # (a signal held: its handler runs from here)
    if len(_CAUGHT) > caught:
        raise Interrupted(_CAUGHT[caught])


def let_signals_through() -> None:
    """In a process forked inside ``signals_held``: the stop signals no longer held (after setting
    what they do)."""
    mask = getattr(signal, "pthread_sigmask", None)
    if mask is not None:
        mask(signal.SIG_UNBLOCK, STOP_SIGNALS)

"""Errors shown to the user as one line (file + problem), never as a traceback, and the signals that
stop a conversion."""

import signal


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


_CAUGHT: list[int] = []  # the signals caught since ``catch_signals`` (``raise_caught``)


def _raise_interrupted(signum, _frame):
    _CAUGHT.append(signum)
    raise Interrupted(signum)


def catch_signals() -> None:
    _CAUGHT.clear()
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_interrupted)


def raise_caught() -> None:
    """Right after forking a process: a signal that arrived during the fork had its ``Interrupted``
    raised inside the fork's hooks (logging's ``after_in_parent``), where Python reports an exception
    and drops it -- the command then ran on to the end and exited 0.  Raised again here."""
    if _CAUGHT:
        raise Interrupted(_CAUGHT[0])

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


def _raise_interrupted(signum, _frame):
    raise Interrupted(signum)


def catch_signals() -> None:
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _raise_interrupted)

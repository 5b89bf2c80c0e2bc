"""Errors shown to the user as one line (file + problem), never as a traceback."""


class UserError(Exception):
    """A problem with the user's input or environment; printed as one line, exit code 2."""

    def __init__(self, message: str, path: str | None = None):
        self.path = path
        self.message = message
        super().__init__(f"{path}: {message}" if path else message)

    def __reduce__(self):   # raised in worker processes, re-raised in the main one
        return (type(self), (self.message, self.path))

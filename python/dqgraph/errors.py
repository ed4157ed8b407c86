"""Exceptions: one class per dqg_status, each carrying the status and the
library's message (dqg_last_error())."""

OK = 0
INVALID_ARGUMENT = 1
UNSUPPORTED = 2
OUT_OF_MEMORY = 3
BACKEND_ERROR = 4
IO_ERROR = 5
PARSE_ERROR = 6


class Error(Exception):
    """A dqgraph call failed. `status` is the dqg_status code, `message` the
    library's explanation (naming the op, the input and the rule)."""

    status = None

    def __init__(self, message, status=None):
        super().__init__(message)
        self.message = message
        if status is not None:
            self.status = status


class InvalidArgument(Error, ValueError):
    """DQG_INVALID_ARGUMENT: the graph, an attribute, a buffer or an array
    breaks a rule. Arguments the binding checks itself raise it too, before
    any call into the library."""

    status = INVALID_ARGUMENT


# The name under which graph-building errors are usually looked for.
InvalidGraph = InvalidArgument


class InvalidArgumentType(InvalidArgument, TypeError):
    """An argument of the wrong Python type (a string where an integer is
    due, a float for a dimension, a missing argument): refused by the
    binding before any call into the library. A dqgraph.InvalidArgument that
    is also a TypeError."""


class Unsupported(Error):
    """DQG_UNSUPPORTED: valid, but not supported by dqgraph."""

    status = UNSUPPORTED


class OutOfMemory(Error, MemoryError):
    status = OUT_OF_MEMORY


class BackendError(Error):
    """DQG_BACKEND_ERROR: oneDNN refused or failed."""

    status = BACKEND_ERROR


class IOError(Error, OSError):  # noqa: A001 - dqgraph.IOError, an OSError too
    status = IO_ERROR


class ParseError(Error):
    """DQG_PARSE_ERROR: not a valid ONNX model or tensor file."""

    status = PARSE_ERROR


_BY_STATUS = {
    c.status: c for c in (InvalidArgument, Unsupported, OutOfMemory, BackendError, IOError, ParseError)
}


def from_status(status, message):
    cls = _BY_STATUS.get(status, Error)
    return cls(message, status)

"""Python values -> C arguments, checked. ctypes converts an int that does not
fit its C type by dropping the high bits (2**32 becomes tensor id 0) and
float() and int() take strings and truncate floats, so every value that
crosses into the library goes through one of these first: a wrong type
raises InvalidArgumentType, a value outside the C type's range
InvalidArgument, before anything is called."""

import numbers
import operator
from collections.abc import Mapping

import numpy as np

from . import errors

INT32 = (-(2**31), 2**31 - 1)
INT64 = (-(2**63), 2**63 - 1)
UINT64 = (0, 2**64 - 1)  # also size_t: dqgraph runs on 64-bit systems


def _kind(value):
    return type(value).__name__


def integer(what, value, lo=INT64[0], hi=INT64[1]):
    """An int (or NumPy integer) in [lo, hi]. bool and float are refused:
    True as a dimension or 2.7 as an axis is a mistake, not a number."""
    if isinstance(value, (bool, np.bool_)):
        raise errors.InvalidArgumentType("%s: expected an integer, got %r" % (what, value))
    try:
        v = operator.index(value)
    except TypeError:
        raise errors.InvalidArgumentType(
            "%s: expected an integer, got %r (%s)" % (what, value, _kind(value))) from None
    if not lo <= v <= hi:
        raise errors.InvalidArgument("%s: %d is outside [%d, %d]" % (what, v, lo, hi))
    return v


def integers(what, values, lo=INT64[0], hi=INT64[1], length=None, max_length=None):
    """A sequence of integers, each in [lo, hi]; a str, a single number or
    None is refused rather than iterated or wrapped."""
    if isinstance(values, (str, bytes, Mapping)) or not hasattr(values, "__iter__"):
        raise errors.InvalidArgumentType(
            "%s: expected a sequence of integers, got %r (%s)" % (what, values, _kind(values)))
    items = [integer("%s[%d]" % (what, i), v, lo, hi) for i, v in enumerate(values)]
    if length is not None and len(items) != length:
        raise errors.InvalidArgument("%s: expected %d values, got %d" % (what, length, len(items)))
    if max_length is not None and len(items) > max_length:
        raise errors.InvalidArgument(
            "%s: %d values; dqgraph's rank limit is %d" % (what, len(items), max_length))
    return items


def real(what, value):
    """A Python or NumPy real number (passed to C as float or double)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise errors.InvalidArgumentType(
            "%s: expected a number, got %r (%s)" % (what, value, _kind(value)))
    return float(value)


def flag(what, value):
    """A bool (or NumPy bool, or the integers 0 and 1): bool("no") is True,
    so strings and other objects are refused."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)) and value in (0, 1):
        return bool(value)
    raise errors.InvalidArgumentType("%s: expected True or False, got %r" % (what, value))


def text(what, value, optional=True):
    """A str for a C string (None: NULL if optional), UTF-8 encoded; an
    embedded NUL would silently cut the name short in C, so it is refused."""
    if value is None:
        if optional:
            return None
        raise errors.InvalidArgumentType("%s: a name is required" % what)
    if not isinstance(value, str):
        raise errors.InvalidArgumentType(
            "%s: expected a str, got %r (%s)" % (what, value, _kind(value)))
    if "\0" in value:
        raise errors.InvalidArgument("%s: %r contains a NUL character" % (what, value))
    return value.encode("utf-8")


def mapping(what, value, optional=True):
    """A dict-like argument ({name: array}); None is {} if optional."""
    if value is None and optional:
        return {}
    if not isinstance(value, Mapping):
        raise errors.InvalidArgumentType(
            "%s: expected a dict, got %r (%s)" % (what, value, _kind(value)))
    return dict(value)


def c_array(value, dtype=None):
    """A C-contiguous array of `value` (a copy only if needed). Unlike
    numpy.ascontiguousarray it keeps a 0-d array 0-d: a scalar stays a
    scalar, with shape ()."""
    return np.asarray(value, dtype=dtype, order="C")

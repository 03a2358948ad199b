"""glibc's malloc kept from growing its heap around large blocks.

glibc maps a block of at least its mmap threshold (128 KiB) by itself and gives it back when it
is freed, but each such free raises the threshold to that block's size (up to 32 MiB): blocks
of that size then come from the main heap. Large tables that are rebuilt again and again (the
walk cache's dictionaries) then grow the heap while the bytes in use stay flat.
`pin_mmap_threshold` fixes the threshold at glibc's default, which also stops the dynamic
raise: every large block is mapped, and unmapped when freed. An operator who sets
MALLOC_MMAP_THRESHOLD_ keeps that value; on a C library without mallopt nothing changes.
"""

from __future__ import annotations

import ctypes
import logging
import os

__all__ = ["pin_mmap_threshold", "MMAP_THRESHOLD", "MallInfo2", "mallinfo"]

log = logging.getLogger(__name__)

M_MMAP_THRESHOLD = -3  # mallopt's parameter number (malloc.h)
MMAP_THRESHOLD = 128 * 1024  # glibc's default, held fixed
_OPERATOR_SETTING = "MALLOC_MMAP_THRESHOLD_"


def pin_mmap_threshold() -> bool:
    """Fix glibc's mmap threshold at its default; whether it was set.

    CPython rebuilds a dictionary's table when inserts have used up its free
    slots, and the walk cache's two large dictionaries of a context (its
    steps and their tags) are rebuilt again and again while structural
    changes drop steps and walks put them back. Taken from the heap, a new
    table that fits no hole extends it, and the old one leaves a hole that
    smaller blocks then split. With the threshold fixed every large block is
    mapped, and unmapped when freed."""
    if _OPERATOR_SETTING in os.environ:
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        log.debug("no mallopt in this C library: the allocator is left as it is")
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))


class MallInfo2(ctypes.Structure):
    """glibc's struct mallinfo2 (2.33 and later), every field a size_t."""

    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


def mallinfo() -> MallInfo2:
    """glibc's own accounting of its heap and mapped blocks, now (for benches
    and tests: AttributeError where the C library has no mallinfo2)."""
    call = ctypes.CDLL(None).mallinfo2
    call.restype = MallInfo2
    info: MallInfo2 = call()
    return info

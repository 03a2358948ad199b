"""ibsnmp.malloc_threshold: large blocks stay mapped after glibc would have moved them to its heap."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

# In a fresh process: a 10 MiB block freed (glibc raises its threshold to
# 10 MiB), then a 9 MiB block: where it comes from is in mallinfo2's hblkhd
# (the bytes of mapped blocks).
PROBE = """
import ctypes, sys
from ibsnmp.malloc_threshold import mallinfo, pin_mmap_threshold

libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
pinned = pin_mmap_threshold() if sys.argv[1] == "pin" else False
libc.free(libc.malloc(10 << 20))
mapped = mallinfo().hblkhd
block = libc.malloc(9 << 20)
print(int(pinned), mallinfo().hblkhd - mapped)
libc.free(block)
"""


def _probe(mode: str, **env: str) -> tuple[bool, int]:
    out = subprocess.run([sys.executable, "-c", PROBE, mode], capture_output=True, text=True,
                         check=True, env={**os.environ, **env}).stdout.split()
    return out[0] == "1", int(out[1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_a_large_block_freed_does_not_move_the_next_ones_to_the_heap() -> None:
    assert _probe("leave") == (False, 0)  # glibc's own rule: the 9 MiB block from the heap
    pinned, mapped = _probe("pin")
    assert pinned and mapped >= 9 << 20


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc")
def test_the_operator_s_threshold_is_kept() -> None:
    pinned, mapped = _probe("pin", MALLOC_MMAP_THRESHOLD_=str(64 << 20))
    assert not pinned and mapped == 0  # 64 MiB: the 9 MiB block from the heap

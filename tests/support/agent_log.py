"""An agent process's output, read as it comes, for tests that wait on a line."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Callable


class AgentLog:
    """Reads `process.stdout` on a thread; `wait_for` returns the first line a
    predicate accepts (from the start of the output), or fails after a timeout."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        self.lines: list[str] = []
        self._changed = threading.Condition()
        self._ended = False
        self._thread = threading.Thread(target=self._read, args=(process,), daemon=True)
        self._thread.start()

    def _read(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            with self._changed:
                self.lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def wait_for(self, accept: Callable[[str], bool] | str, timeout: float = 30.0) -> str:
        """The first line `accept` takes (a string: a line containing it)."""
        test = (lambda line: accept in line) if isinstance(accept, str) else accept
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                found = next((line for line in self.lines if test(line)), None)
                if found is not None:
                    return found
                left = deadline - time.monotonic()
                if self._ended or left <= 0:
                    raise AssertionError(f"no such line ({'output ended' if self._ended else 'timeout'}):"
                                         "\n" + "\n".join(self.lines[-40:]))
                self._changed.wait(left)

    def text(self) -> str:
        with self._changed:
            return "\n".join(self.lines)

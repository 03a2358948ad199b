"""The embedded default provider: a simulated fabric built from a spec and a seed.

Counters need no background task: the model computes them from the time since `epoch`.
`start()` runs two optional tasks: the scenario (providers.scenario), whose timed events swap
in new snapshots and emit the IBA traps they raise, and the threshold watcher
(providers.thresholds), which emits 129 and 130 every `watch_interval`. Every change swaps in
a new immutable snapshot with one assignment before the events that report it are emitted.
Scenario times count from the epoch, times `time_scale`; what is due at start fires at once.
Reference: docs/providers.md, 'The simulated fabric'.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from pathlib import Path

from ibsnmp.events import TrapEvent
from ibsnmp.fabric.changes import with_counters_cleared
from ibsnmp.fabric.generators import build_fabric

from .base import ProviderCore, cancel_and_wait
from .scenario import Scenario, Step, apply_step, load_scenario
from .thresholds import ThresholdWatcher

DEFAULT_SPEC = "fat-tree:spines=2,leaves=4,hosts=4"
DEFAULT_WATCH_INTERVAL = 1.0

log = logging.getLogger("ibsnmp.providers.simulated")


class SimulatedProvider(ProviderCore):
    """`SimulatedProvider(spec, seed, scenario=None, *, time_scale=None,
    watch_interval=None, clock=time.monotonic)`.

    scenario: a Scenario or a path to load; its node names are resolved
      against the fabric here, so a bad name fails at construction
      (ScenarioError).
    time_scale: multiplies scenario times and the watch interval (default:
      the scenario's, else 1.0); 0.01 runs a 30 s scenario in 0.3 s.
    watch_interval: seconds (before time_scale) between threshold polls
      (default: the scenario's, else 1.0); 0 turns the watcher off.
    clock: the monotonic seconds that the epoch, elapsed() and the
      scenario's and the watcher's timing read; a test passes its event
      loop's `loop.time` to run them on that loop's (virtual) time.
    """

    def __init__(
        self,
        spec: str = DEFAULT_SPEC,
        seed: int = 1,
        scenario: Scenario | str | Path | None = None,
        *,
        time_scale: float | None = None,
        watch_interval: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(clock=clock)
        self._fabric = build_fabric(spec, seed=seed)
        self._seed = seed
        if isinstance(scenario, (str, Path)):
            scenario = load_scenario(scenario)
        self._scenario = scenario
        self._steps: tuple[Step, ...] = scenario.schedule(self._fabric, seed) if scenario is not None else ()
        if time_scale is None:
            time_scale = scenario.time_scale if scenario is not None else 1.0
        if watch_interval is None:
            watch_interval = scenario.watch_interval if scenario is not None else DEFAULT_WATCH_INTERVAL
        if time_scale <= 0:
            raise ValueError(f"time_scale must be > 0, got {time_scale}")
        if watch_interval < 0:
            raise ValueError(f"watch_interval must be >= 0, got {watch_interval}")
        self._time_scale = time_scale
        self._watch_interval = watch_interval
        self._watcher = ThresholdWatcher()
        self._watching = False  # the watcher has its baseline
        self._next_step = 0  # the scenario resumes here after stop() and start()
        self._tasks: list[asyncio.Task[None]] = []
        # Elapsed time counts from here, once the fabric is built.
        self._epoch = self._now()

    # -- the Provider interface ---------------------------------------------------

    async def start(self) -> None:
        """Arm the threshold watcher and start the scenario and watch tasks.
        After stop(), start() resumes the scenario where it stopped (what
        fell due in between runs at once)."""
        if self._tasks:
            return
        if self._watch_interval > 0:
            if not self._watching:
                self._watcher.poll(self._fabric, self.elapsed())  # the baseline
                self._watching = True
            self._tasks.append(asyncio.create_task(self._watch(), name="ibsnmp-thresholds"))
        if self._next_step < len(self._steps):
            self._tasks.append(asyncio.create_task(self._run_scenario(), name="ibsnmp-scenario"))

    async def stop(self) -> None:
        """Cancel the tasks and wait for them to end."""
        tasks, self._tasks = self._tasks, []
        await cancel_and_wait(tasks)

    # -- extras -------------------------------------------------------------------

    @property
    def scenario(self) -> Scenario | None:
        return self._scenario

    @property
    def steps(self) -> tuple[Step, ...]:
        """The scenario's occurrences in the order they run (scenario seconds)."""
        return self._steps

    @property
    def time_scale(self) -> float:
        return self._time_scale

    @property
    def watcher(self) -> ThresholdWatcher:
        return self._watcher

    def apply(self, step: Step) -> tuple[TrapEvent, ...]:
        """Run one scenario step now: swap in its snapshot, then emit its traps."""
        new, events = apply_step(self._fabric, step, self.elapsed())
        self._fabric = new
        for event in events:
            self._emit(event)
        return events

    def check_thresholds(self) -> tuple[TrapEvent, ...]:
        """One threshold poll now: emit 129/130 for each crossing, then swap
        in the snapshot with the counters the watcher cleared."""
        at = self.elapsed()
        fabric = self._fabric
        crossings = self._watcher.poll(fabric, at)
        events = tuple(c.event(fabric) for c in crossings)
        for event in events:
            self._emit(event)
        cleared = fabric
        for crossing in crossings:
            if crossing.clear:
                cleared = with_counters_cleared(cleared, crossing.ref, (crossing.counter,), at=at)
        if cleared is not fabric:
            # A scenario step may not have swapped in between: the two share
            # one event loop thread and neither awaits here.
            self._fabric = cleared
            self._watcher.observe(cleared, at)
        return events

    async def _run_scenario(self) -> None:
        scale = self._time_scale
        while self._next_step < len(self._steps):
            step = self._steps[self._next_step]
            delay = self._epoch + step.at * scale - self._now()
            if delay > 0:
                await asyncio.sleep(delay)
            self._next_step += 1
            try:
                events = self.apply(step)
            except Exception:
                log.exception("scenario: %s failed", step.describe(self._fabric))
                continue
            log.info("scenario: %s -> %s", step.describe(self._fabric),
                     ", ".join(str(int(e.trap)) for e in events) or "no trap")

    async def _watch(self) -> None:
        interval = self._watch_interval * self._time_scale
        next_at = self._now() + interval
        while True:
            await asyncio.sleep(max(0.0, next_at - self._now()))
            next_at = max(next_at + interval, self._now())  # no catch-up bursts
            try:
                self.check_thresholds()
            except Exception:
                log.exception("threshold watch failed; trying again in %.3g s", interval)

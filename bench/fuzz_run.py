#!/usr/bin/env python3
"""ibsnmp hostile-traffic run: a million mutated packets against one agent (not in CI).

    .venv/bin/python bench/fuzz_run.py                   # 1,000,000 mutants
    .venv/bin/python bench/fuzz_run.py --packets 20000   # a quick look at the rate
    .venv/bin/python bench/fuzz_run.py --minutes 30      # as many as fit

Seeds: the 26 captured requests of tests/data/wire-corpus (v1, v2c, v3;
GET, GETNEXT, GETBULK, SET, Response) and 7 built for the running agent
(SNMPv3 authNoPriv GET, GETNEXT, GETBULK and SET, re-signed after every
mutation; a v1 Trap, an SNMPv2-Trap and an InformRequest sent to it): 33.
The mutation engine is tests/support/wire_fuzz.py's; bench/fuzz_traffic.py sends,
attributes and judges (see there). Prints the figures at the end and every
100,000 packets; exits 1 when any answer was malformed, a probe went
unanswered or the agent died.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from common import LOCALHOST, Processes, start_ibsnmp  # noqa: E402
from fuzz_traffic import AGENT_CONFIG, FuzzSender, SeedSet  # noqa: E402
from tests.support.wire_fuzz import mutants  # noqa: E402
from tests.support.wire_v3 import discover  # noqa: E402

FABRIC = "fat-tree:spines=2,leaves=2,hosts=2"
REPORT_EVERY = 100_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--packets", type=int, default=1_000_000)
    parser.add_argument("--minutes", type=float, default=None,
                        help="stop after this long even if packets are left")
    parser.add_argument("--seed", type=int, default=20, help="mutation engine seed")
    parser.add_argument("--probe-every", type=int, default=1000)
    parser.add_argument("--rate", type=float, default=None,
                        help="mutants per second (default: as fast as the agent answers)")
    args = parser.parse_args()
    with Processes() as procs, tempfile.TemporaryDirectory(prefix="ibsnmp-fuzz-") as tmp:
        config = Path(tmp) / "agent.toml"
        config.write_text(AGENT_CONFIG)
        config.chmod(0o600)
        agent, port, _ = start_ibsnmp(procs, FABRIC, extra=["--config", str(config)])
        engine = discover(f"{LOCALHOST}:{port}")
        seeds = SeedSet(engine.boots, engine.engine_time)
        print(f"agent pid {agent.pid} on {LOCALHOST}:{port}; {len(seeds.seeds)} seeds: "
              f"{', '.join(sorted(seeds.seeds))}", flush=True)
        sender = FuzzSender(LOCALHOST, port, agent.alive, probe_every=args.probe_every)
        deadline = time.monotonic() + args.minutes * 60 if args.minutes else None
        stream = mutants(seeds.seeds, args.packets, seed=args.seed, finish=seeds.finish)
        figures = sender.figures

        def progress() -> bool:
            if figures.sent and figures.sent % REPORT_EVERY == 0:
                elapsed = time.monotonic() - started
                print(f"  {figures.sent:,} sent, {figures.answers:,} answers, "
                      f"{figures.sent / elapsed:.0f}/s", flush=True)
            return False

        started = time.monotonic()
        sender.run(stream, rate=args.rate, deadline=deadline, should_stop=progress)
        sender.close()
        alive = agent.alive()
        figures.agent_gone = figures.agent_gone or not alive
        errors = [line for _, line in agent.lines if "ERROR" in line or "Traceback" in line]
        print(figures.summary())
        print(f"agent log: {len(agent.lines)} lines, {len(errors)} ERROR/Traceback")
        for _, line in agent.lines[-6:]:
            print("  | " + line)
        for line in errors[:5]:
            print("  " + line)
        print("mutants answered, by seed: " + ", ".join(
            f"{name} {count:,}" for name, count in figures.answered_by_seed.most_common()))
        if figures.lost_after:
            print("markers lost after a mutant of: " + ", ".join(
                f"{name} {count:,}" for name, count in figures.lost_after.most_common()))
        for example in figures.examples:
            print("  " + example)
        clean = (not figures.unreadable_answers and not figures.answered_malformed
                 and figures.probes_answered == figures.probes_sent and not figures.agent_gone)
        return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())

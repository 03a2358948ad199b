"""Traps in live mode: trap 128 raised by the poll that sees a switch port
cross Down, 129/130 by PortCounters that grew by the port's threshold, and
one notification for one change whether the SM's Report or the poll comes
first. The snapshots are built from hand-made sweeps (test_live_snapshot's),
the provider without a port (no MAD is sent), the clock a test's own."""

from __future__ import annotations

from tests.unit.test_live_snapshot import CA, DISABLED, SWITCH, port, subnet

from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.fabric.model import Fabric, PortRef
from ibsnmp.live.snapshot import build_fabric, measured_counters
from ibsnmp.live.trap_ledger import TrapLedger
from ibsnmp.providers.base import ProviderCore
from ibsnmp.providers.live import LiveProvider

POLL_S = 5.0
LINK_DOWN_REPORT = TrapEvent(trap=IbaTrap.LINK_STATE_CHANGE, node_guid=SWITCH, lid=2)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def provider_serving_an_up_link(**counters: int) -> tuple[LiveProvider, list[TrapEvent], Clock]:
    provider = LiveProvider.__new__(LiveProvider)  # no umad port: snapshots only
    ProviderCore.__init__(provider)
    provider.poll_interval = POLL_S
    provider._fabric = fabric_with(**counters)  # type: ignore[arg-type]  # counter names only
    clock = Clock()
    provider._watch_traps(clock)
    sent: list[TrapEvent] = []
    provider.add_listener(sent.append)
    return provider, sent, clock


def fabric_with(*, switch_port1_phys: int = 5, thresholds: tuple[int, int] = (8, 8),
                **counters: int) -> Fabric:
    """The test subnet; `counters` read from switch port 1 (PortCounters names)."""
    net = subnet(switch_port1_phys=switch_port1_phys)
    local_phy, overrun = thresholds
    net.nodes[SWITCH].ports[1] = port(PortPhysicalState=switch_port1_phys,
                                      LocalPhyErrors=local_phy, OverrunErrors=overrun)
    read = {PortRef(SWITCH, 1): measured_counters({
        "LocalLinkIntegrityErrors": 0, "ExcessiveBufferOverrunErrors": 0, **counters})}
    return build_fabric(net, CA, counters=read)


def traps(events: list[TrapEvent]) -> list[tuple[IbaTrap, int, int | None]]:
    return [(event.trap, event.node_guid, event.port) for event in events]


def test_a_polled_link_going_down_raises_trap_128_from_the_switch() -> None:
    provider, sent, _ = provider_serving_an_up_link()
    provider._swap(fabric_with(switch_port1_phys=DISABLED))
    assert traps(sent) == [(IbaTrap.LINK_STATE_CHANGE, SWITCH, None)]


def test_a_change_the_sm_reported_is_not_raised_again_by_the_poll() -> None:
    provider, sent, clock = provider_serving_an_up_link()
    provider._on_report(LINK_DOWN_REPORT)
    clock.now += POLL_S
    provider._swap(fabric_with(switch_port1_phys=DISABLED))
    assert sent == [LINK_DOWN_REPORT]
    # The Report covered that change only: the link coming back is raised again.
    provider._swap(fabric_with())
    assert traps(sent[1:]) == [(IbaTrap.LINK_STATE_CHANGE, SWITCH, None)]


def test_a_report_after_the_poll_that_raised_the_change_is_not_sent_again() -> None:
    provider, sent, clock = provider_serving_an_up_link()
    provider._swap(fabric_with(switch_port1_phys=DISABLED))
    clock.now += 1.5 * POLL_S  # the SM was slow to forward it
    provider._on_report(LINK_DOWN_REPORT)
    assert traps(sent) == [(IbaTrap.LINK_STATE_CHANGE, SWITCH, None)]
    assert sent[0] is not LINK_DOWN_REPORT
    # The poll's trap covered one Report: a second change's Report is sent.
    provider._on_report(LINK_DOWN_REPORT)
    assert sent[1:] == [LINK_DOWN_REPORT]


def test_a_report_no_poll_matched_expires_after_two_polls() -> None:
    provider, sent, clock = provider_serving_an_up_link()
    provider._on_report(LINK_DOWN_REPORT)
    clock.now += 2.5 * POLL_S
    provider._swap(fabric_with(switch_port1_phys=DISABLED))
    assert traps(sent[1:]) == [(IbaTrap.LINK_STATE_CHANGE, SWITCH, None)]


def test_a_polled_trap_no_report_matched_expires_after_two_polls() -> None:
    provider, sent, clock = provider_serving_an_up_link()
    provider._swap(fabric_with(switch_port1_phys=DISABLED))
    clock.now += 2.5 * POLL_S
    provider._on_report(LINK_DOWN_REPORT)
    assert sent[1:] == [LINK_DOWN_REPORT]
    assert len(provider._ledger) == 1  # the Report's own entry; the poll's expired


def test_counters_that_grow_by_the_ports_threshold_raise_129_and_130() -> None:
    provider, sent, _ = provider_serving_an_up_link(LocalLinkIntegrityErrors=2)
    provider._swap(fabric_with(thresholds=(3, 4), LocalLinkIntegrityErrors=4,
                               ExcessiveBufferOverrunErrors=3))
    assert sent == []  # 2 and 3 grown: below 3 and 4
    provider._swap(fabric_with(thresholds=(3, 4), LocalLinkIntegrityErrors=5,
                               ExcessiveBufferOverrunErrors=4))
    assert traps(sent) == [(IbaTrap.LOCAL_LINK_INTEGRITY, SWITCH, 1),
                           (IbaTrap.EXCESSIVE_BUFFER_OVERRUN, SWITCH, 1)]
    assert {event.lid for event in sent} == {2}  # the switch's LID, as its SMA would send
    provider._swap(fabric_with(thresholds=(3, 4), LocalLinkIntegrityErrors=5,
                               ExcessiveBufferOverrunErrors=4))
    assert len(sent) == 2  # no growth, no trap


def test_a_threshold_trap_the_sm_also_reports_is_sent_once_either_way() -> None:
    report = TrapEvent(trap=IbaTrap.LOCAL_LINK_INTEGRITY, node_guid=SWITCH, lid=2, port=1)
    provider, sent, clock = provider_serving_an_up_link()
    provider._on_report(report)
    clock.now += POLL_S
    provider._swap(fabric_with(LocalLinkIntegrityErrors=8))
    assert sent == [report]
    provider._swap(fabric_with(LocalLinkIntegrityErrors=8, ExcessiveBufferOverrunErrors=9))
    assert traps(sent[1:]) == [(IbaTrap.EXCESSIVE_BUFFER_OVERRUN, SWITCH, 1)]
    provider._on_report(TrapEvent(trap=IbaTrap.EXCESSIVE_BUFFER_OVERRUN, node_guid=SWITCH,
                                  lid=2, port=1))
    assert len(sent) == 2
    # Another port's Report is another change.
    other = TrapEvent(trap=IbaTrap.LOCAL_LINK_INTEGRITY, node_guid=SWITCH, lid=2, port=2)
    provider._on_report(other)
    assert sent[2:] == [other]


def test_the_ledger_matches_each_arrival_once() -> None:
    clock = Clock()
    ledger = TrapLedger(10.0, clock)
    assert ledger.polled(LINK_DOWN_REPORT) and not ledger.reported(LINK_DOWN_REPORT)
    assert ledger.reported(LINK_DOWN_REPORT) and not ledger.polled(LINK_DOWN_REPORT)
    assert len(ledger) == 0
    assert ledger.reported(LINK_DOWN_REPORT)
    clock.now += 10.5
    assert ledger.polled(LINK_DOWN_REPORT)  # the Report expired

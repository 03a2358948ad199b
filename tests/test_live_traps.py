"""Trap 128 in live mode: raised by the poll that sees a switch port cross
Down, unless the SM's Report of the same trap came first (one notification
for one change). The snapshots are built from hand-made sweeps
(test_live_snapshot's), the provider without a port (no MAD is sent)."""

from __future__ import annotations

from test_live_snapshot import CA, DISABLED, SWITCH, subnet

from ibsnmp.events import IbaTrap, TrapEvent
from ibsnmp.live.snapshot import build_fabric
from ibsnmp.providers.base import ProviderCore
from ibsnmp.providers.live import LiveProvider


def provider_serving_an_up_link() -> tuple[LiveProvider, list[TrapEvent]]:
    provider = LiveProvider.__new__(LiveProvider)  # no umad port: snapshots only
    ProviderCore.__init__(provider)
    provider._fabric = build_fabric(subnet(), CA)
    provider._reported = {}
    provider.poll_interval = 5.0
    sent: list[TrapEvent] = []
    provider.add_listener(sent.append)
    return provider, sent


def test_a_polled_link_going_down_raises_trap_128_from_the_switch() -> None:
    provider, sent = provider_serving_an_up_link()
    provider._swap(build_fabric(subnet(switch_port1_phys=DISABLED), CA))
    assert [(event.trap, event.node_guid) for event in sent] == [
        (IbaTrap.LINK_STATE_CHANGE, SWITCH)]


def test_a_change_the_sm_reported_is_not_raised_again_by_the_poll() -> None:
    provider, sent = provider_serving_an_up_link()
    report = TrapEvent(trap=IbaTrap.LINK_STATE_CHANGE, node_guid=SWITCH, lid=2)
    provider._on_report(report)
    provider._swap(build_fabric(subnet(switch_port1_phys=DISABLED), CA))
    assert sent == [report]
    # The Report covered that change only: the link coming back is raised again.
    provider._swap(build_fabric(subnet(), CA))
    assert [(event.trap, event.node_guid) for event in sent[1:]] == [
        (IbaTrap.LINK_STATE_CHANGE, SWITCH)]


def test_a_report_no_poll_matched_expires_after_two_polls() -> None:
    provider, sent = provider_serving_an_up_link()
    provider._on_report(TrapEvent(trap=IbaTrap.LINK_STATE_CHANGE, node_guid=SWITCH, lid=2))
    provider._reported[SWITCH] -= 3 * provider.poll_interval  # as if three polls ago
    provider._swap(build_fabric(subnet(switch_port1_phys=DISABLED), CA))
    assert [(event.trap, event.node_guid) for event in sent[1:]] == [
        (IbaTrap.LINK_STATE_CHANGE, SWITCH)]
    assert provider._reported == {}

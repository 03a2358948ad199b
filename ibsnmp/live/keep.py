"""Last good readings across sweeps: what a sweep missed is served as an earlier sweep read it.

Real fabrics lose MADs: a sweep that got no answer from a node, one of its ports or one block
of a table has learned nothing about it. `Keeper.merge` takes a sweep's Subnet and returns the
one to serve: a node the sweep did not reach is kept, with its links, until it is confirmed
gone (by its count of missed sweeps, or by the SM's records); a node it reached keeps, from
the last reading, what did not answer this time. No I/O, no clock: the provider logs what
`SweepReport` says.
Reference: docs/providers.md, 'Lost MADs'.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from ibsnmp.mad.discovery import IS_SM, DiscoveredNode, PortKey, Subnet

DEFAULT_CONFIRM_AFTER = 3
SM_STATE_MASTER = 3  # SMInfo.SMState (IBA 14.2.5.13)

SmLists = Callable[[Sequence[int]], Mapping[int, bool]]
"""Node GUIDs -> whether the SM's records list each; a GUID left out is not
known (the SA did not answer)."""


@dataclass
class SweepReport:
    """What a merge kept and dropped: `kept` the nodes missing from the sweep
    (each with how many sweeps in a row it has been missing), `gone` the
    nodes confirmed gone now (`gone_from_sm` those of them the SM's records
    no longer list), `filled` the nodes of which something was
    taken from an earlier reading, `stale_masters` the ports whose kept
    MASTER SMInfo a fresh master replaced."""

    kept: dict[int, int] = field(default_factory=dict)
    gone: list[int] = field(default_factory=list)
    gone_from_sm: list[int] = field(default_factory=list)
    filled: list[int] = field(default_factory=list)
    stale_masters: list[PortKey] = field(default_factory=list)


class Keeper:
    """The subnet served, sweep after sweep (see `merge`)."""

    def __init__(self, confirm_after: int = DEFAULT_CONFIRM_AFTER, miss_gap: float = 0.0) -> None:
        if confirm_after < 1:
            raise ValueError("a node is confirmed gone after at least one sweep")
        self.confirm_after = confirm_after
        self.miss_gap = miss_gap
        self._served: Subnet | None = None
        self._missing: dict[int, int] = {}  # node GUID -> sweeps in a row without it
        self._counted: dict[int, float] = {}  # node GUID -> when its last miss was counted
        self._sm_listed: set[int] = set()  # missed nodes the SM's records listed at a miss

    @property
    def served(self) -> Subnet | None:
        return self._served

    def missing(self, guid: int) -> int:
        """Sweeps in a row that did not reach node `guid` (0: the last did)."""
        return self._missing.get(guid, 0)

    def merge(self, new: Subnet, now: float = 0.0, sm_lists: SmLists | None = None
              ) -> tuple[Subnet, SweepReport]:
        """The subnet to serve after the sweep that read `new` at `now`
        (monotonic seconds), which is completed in place and returned.

        - A node the sweep did not reach is kept, with its links, as last
          read, until it has been missing from `confirm_after` sweeps in a
          row, sweeps at least `miss_gap` seconds apart (quick sweeps brought
          on by a lossy stretch confirm nothing faster than the scheduled ones
          would), or the SM's records no longer list it after listing it at
          an earlier miss: then it is confirmed gone and dropped. An SA shows
          a requester only the nodes it shares a partition with, so a node it
          never listed is not taken as gone on its word.
        - A node the sweep reached keeps, from the last reading, what did not
          answer this time: its NodeDescription, a port's PortInfo,
          SwitchInfo, forwarding tables short of a block, a port's tables,
          SMInfo, LedInfo.
        - SMInfo is kept only while the port's PortInfo says IsSM (an SM that
          stops clears it), and a kept SMInfo that says MASTER is dropped when
          a fresh one says MASTER: after a failover the dead master answers no
          SMInfo, and the new one must be the only master served.

        `sm_lists` (SA NodeRecords, when the SA answers) is asked once, about
        the nodes the sweep missed that their count alone does not confirm
        gone."""
        report = SweepReport()
        old = self._served
        self._served = new
        if old is None:
            return new, report
        fresh_sms = set(_sm_ports(new))  # read by this sweep, before anything is kept
        unsure: dict[int, int] = {}  # missed, not confirmed by their count: GUID -> misses
        for guid in [guid for guid in old.nodes if guid not in new.nodes]:
            misses = self._missing.get(guid, 0)
            if guid not in self._counted or now - self._counted[guid] >= self.miss_gap:
                misses += 1
                self._counted[guid] = now
            if misses >= self.confirm_after:
                self._forget(guid)
                report.gone.append(guid)
            else:
                unsure[guid] = misses
        listed = sm_lists(list(unsure)) if sm_lists is not None and unsure else {}
        for guid, misses in unsure.items():
            said = listed.get(guid)
            if said:
                self._sm_listed.add(guid)
            elif said is False and guid in self._sm_listed:
                self._forget(guid)
                report.gone.append(guid)
                report.gone_from_sm.append(guid)
                continue
            self._missing[guid] = misses
            report.kept[guid] = misses
            new.nodes[guid] = old.nodes[guid]
        for guid in new.nodes.keys() - report.kept.keys():
            self._missing.pop(guid, None)
            self._counted.pop(guid, None)
            before = old.nodes.get(guid)
            if before is not None and before is not new.nodes[guid] and _fill(new.nodes[guid], before):
                report.filled.append(guid)
        _keep_links(old, new)
        report.stale_masters = _one_master(new, fresh_sms)
        return new, report

    def _forget(self, guid: int) -> None:
        """Node `guid` is confirmed gone: nothing of its misses is kept."""
        self._missing.pop(guid, None)
        self._counted.pop(guid, None)
        self._sm_listed.discard(guid)


def _fill(node: DiscoveredNode, before: DiscoveredNode) -> int:
    """Take from `before` what `node`'s sweep did not read; how many pieces."""
    taken = 0
    if node.description is None and before.description is not None:
        node.description, taken = before.description, taken + 1
    for num, info in before.ports.items():
        if num not in node.ports:
            node.ports[num], taken = info, taken + 1
    if node.switch_info is None and before.switch_info is not None:
        node.switch_info, taken = before.switch_info, taken + 1
    if node.switch_info is not None:
        if node.lft_pending or (not node.lft and before.lft):
            if before.lft_complete:
                node.lft, node.lft_pending, taken = dict(before.lft), 0, taken + 1
        if node.mft_pending or (not node.mft and before.mft):
            if before.mft_complete:
                node.mft, node.mft_pending, taken = dict(before.mft), 0, taken + 1
    for num, tables in before.tables.items():
        mine = node.tables.get(num)
        if mine is None:
            node.tables[num], taken = tables, taken + 1
        else:
            taken += mine.fill_from(tables)
    for num, tables in node.tables.items():
        port = node.ports.get(num)
        if (tables.sm_info is not None and port is not None
                and not port["CapabilityMask"] & IS_SM):
            tables.sm_info = None  # the SM stopped: its port says so
    return taken


def _keep_links(old: Subnet, new: Subnet) -> None:
    """Links of the last reading whose ends are both served and whose ports
    this sweep did not read otherwise (a kept node's, a port that did not
    answer)."""
    for end, peer in old.links.items():
        if end in new.links or end[0] not in new.nodes or peer[0] not in new.nodes:
            continue
        if peer in new.links and new.links[peer] != end:
            continue  # the peer port is linked elsewhere now
        new.links[end] = peer
        new.links.setdefault(peer, end)


def _sm_ports(subnet: Subnet) -> list[PortKey]:
    """The ports whose SMInfo the subnet holds."""
    return [(guid, num) for guid, node in subnet.nodes.items()
            for num, tables in node.tables.items() if tables.sm_info is not None]


def _one_master(subnet: Subnet, fresh: set[PortKey]) -> list[PortKey]:
    """Drop kept SMInfos that say MASTER when a freshly read one does."""
    masters = [key for key in _sm_ports(subnet) if _is_master(subnet, key)]
    if not any(key in fresh for key in masters):
        return []
    stale = [key for key in masters if key not in fresh]
    for guid, num in stale:
        subnet.nodes[guid].tables[num].sm_info = None
    return stale


def _is_master(subnet: Subnet, key: PortKey) -> bool:
    info = subnet.nodes[key[0]].tables[key[1]].sm_info
    return info is not None and info.get("SMState") == SM_STATE_MASTER

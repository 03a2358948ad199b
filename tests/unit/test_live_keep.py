"""What a sweep missed is served as an earlier sweep read it, until the node
is confirmed gone (ibsnmp.live.keep), on sweeps made by hand."""

from __future__ import annotations

from collections.abc import Sequence

from tests.unit.test_live_snapshot import answer

from ibsnmp.live.keep import SM_STATE_MASTER, Keeper
from ibsnmp.mad.attributes import NODE_INFO, PORT_INFO, SM_INFO, SWITCH_INFO
from ibsnmp.mad.discovery import IS_SM, DiscoveredNode, PortTables, Subnet
from ibsnmp.mad.records_generated import PortInfo

SWITCH, HOST, SM_HOST = 0x10, 0x20, 0x30


def port(*, sm: bool = False) -> PortInfo:
    return answer(PORT_INFO, PortState=4, CapabilityMask=IS_SM if sm else 0)


def switch(*, described: bool = True, lft: bool = True) -> DiscoveredNode:
    node = DiscoveredNode(SWITCH, (), answer(NODE_INFO, NodeType=2, NumPorts=2, NodeGUID=SWITCH),
                          "leaf" if described else None, {0: port(), 1: port(), 2: port()},
                          answer(SWITCH_INFO, LinearFDBTop=63))
    if lft:
        node.lft = {1: 1, 2: 2}
    else:
        node.lft_pending = 1  # a block did not answer
    return node


def host(guid: int = HOST, *, sm_state: int | None = None, sm_port: bool = False) -> DiscoveredNode:
    node = DiscoveredNode(guid, (1,), answer(NODE_INFO, NodeType=1, NumPorts=1, NodeGUID=guid),
                          f"host{guid:x}", {1: port(sm=sm_port or sm_state is not None)})
    tables = PortTables(guid + 1)
    tables.expect("guids", 1)
    tables.store("guids", 0, (guid + 1,))
    if sm_state is not None:
        tables.sm_info = answer(SM_INFO, GUID=guid + 1, SMState=sm_state, ActCount=1)
    node.tables[1] = tables
    return node


def subnet(*nodes: DiscoveredNode) -> Subnet:
    result = Subnet({node.guid: node for node in nodes})
    for node in nodes:
        if node.guid != SWITCH and SWITCH in result.nodes:
            result.links[(SWITCH, 1 if node.guid == HOST else 2)] = (node.guid, 1)
            result.links[(node.guid, 1)] = (SWITCH, 1 if node.guid == HOST else 2)
    return result


def test_a_node_missing_from_a_sweep_is_kept_until_it_is_missing_from_n() -> None:
    keeper = Keeper(confirm_after=3)
    keeper.merge(subnet(switch(), host()))
    for sweep in (1, 2):
        served, report = keeper.merge(subnet(switch()), now=float(sweep))
        assert set(served.nodes) == {SWITCH, HOST} and report.kept == {HOST: sweep}
        assert served.links[(SWITCH, 1)] == (HOST, 1)  # its link is kept too
        assert served.nodes[HOST].tables[1].table("guids") == (HOST + 1,)
    served, report = keeper.merge(subnet(switch()), now=3.0)
    assert set(served.nodes) == {SWITCH} and report.gone == [HOST] and not report.kept
    assert (SWITCH, 1) not in served.links


def test_quick_sweeps_count_a_miss_once_per_gap() -> None:
    keeper = Keeper(confirm_after=2, miss_gap=10.0)
    keeper.merge(subnet(switch(), host()))
    for now in (1.0, 2.0, 3.0, 10.5):  # three sweeps within the gap: one miss
        served, report = keeper.merge(subnet(switch()), now=now)
        assert HOST in served.nodes, now
    served, report = keeper.merge(subnet(switch()), now=11.5)
    assert report.gone == [HOST]


def test_an_answer_resets_the_count() -> None:
    keeper = Keeper(confirm_after=2)
    keeper.merge(subnet(switch(), host()))
    keeper.merge(subnet(switch()), now=1.0)
    assert keeper.missing(HOST) == 1
    keeper.merge(subnet(switch(), host()), now=2.0)
    assert keeper.missing(HOST) == 0
    served, report = keeper.merge(subnet(switch()), now=3.0)
    assert report.kept == {HOST: 1} and HOST in served.nodes


class SmRecords:
    """What the SA's NodeRecords say: `listed` the GUIDs it lists, or None
    when it does not answer; the GUIDs asked, call by call."""

    def __init__(self, listed: set[int] | None) -> None:
        self.listed = listed
        self.asked: list[list[int]] = []

    def __call__(self, guids: Sequence[int]) -> dict[int, bool]:
        self.asked.append(list(guids))
        return {} if self.listed is None else {guid: guid in self.listed for guid in guids}


def test_the_sm_no_longer_listing_a_node_it_listed_confirms_it_gone_at_once() -> None:
    keeper = Keeper(confirm_after=10)
    keeper.merge(subnet(switch(), host(), host(SM_HOST)))
    sm = SmRecords({SWITCH, HOST, SM_HOST})
    served, report = keeper.merge(subnet(switch()), now=1.0, sm_lists=sm)
    assert report.kept == {HOST: 1, SM_HOST: 1} and sm.asked == [[HOST, SM_HOST]]
    sm.listed = {SWITCH, SM_HOST}  # the SM swept and no longer finds HOST
    served, report = keeper.merge(subnet(switch()), now=2.0, sm_lists=sm)
    assert report.gone == report.gone_from_sm == [HOST] and report.kept == {SM_HOST: 2}
    assert set(served.nodes) == {SWITCH, SM_HOST}


def test_a_node_the_sm_never_listed_or_an_sa_that_does_not_answer_confirms_nothing() -> None:
    keeper = Keeper(confirm_after=3)
    keeper.merge(subnet(switch(), host()))
    silent, hidden = SmRecords(None), SmRecords({SWITCH})  # HOST in a partition the SA hides
    for now, sm in ((1.0, hidden), (2.0, silent)):
        served, report = keeper.merge(subnet(switch()), now=now, sm_lists=sm)
        assert HOST in served.nodes and not report.gone
    served, report = keeper.merge(subnet(switch()), now=3.0, sm_lists=hidden)
    assert report.gone == [HOST] and not report.gone_from_sm  # its sweeps confirmed it
    assert hidden.asked == [[HOST]]  # not asked about a node its count confirms


def test_the_sm_is_not_asked_when_every_node_answered() -> None:
    keeper = Keeper()
    keeper.merge(subnet(switch(), host()))
    sm = SmRecords(set())
    keeper.merge(subnet(switch(), host()), now=1.0, sm_lists=sm)
    assert sm.asked == []


def test_what_did_not_answer_of_a_node_keeps_its_last_reading() -> None:
    keeper = Keeper()
    keeper.merge(subnet(switch(), host()))
    partial = switch(described=False, lft=False)
    del partial.ports[2]  # its PortInfo timed out
    served, report = keeper.merge(subnet(partial, host()), now=1.0)
    node = served.nodes[SWITCH]
    assert node.description == "leaf" and 2 in node.ports
    assert node.lft == {1: 1, 2: 2} and node.lft_complete
    assert report.filled == [SWITCH] and not report.kept


def test_sminfo_is_kept_while_the_port_says_is_sm_and_one_master_is_served() -> None:
    keeper = Keeper()
    keeper.merge(subnet(switch(), host(sm_state=SM_STATE_MASTER), host(SM_HOST, sm_state=2)))
    # A lossy sweep: the master's SMInfo timed out, its port still says IsSM.
    served, report = keeper.merge(subnet(switch(), host(sm_port=True), host(SM_HOST, sm_state=2)), now=1.0)
    assert served.nodes[HOST].tables[1].sm_info is not None and not report.stale_masters
    # A failover: the standby says MASTER now, the old master answers no SMInfo.
    served, report = keeper.merge(subnet(switch(), host(sm_port=True),
                                         host(SM_HOST, sm_state=SM_STATE_MASTER)), now=2.0)
    assert served.nodes[HOST].tables[1].sm_info is None and report.stale_masters == [(HOST, 1)]
    # An SM that stopped clears IsSM: nothing of it is kept.
    keeper.merge(subnet(switch(), host(sm_state=SM_STATE_MASTER), host(SM_HOST, sm_state=2)), now=3.0)
    served, _ = keeper.merge(subnet(switch(), host(), host(SM_HOST, sm_state=SM_STATE_MASTER)), now=4.0)
    assert served.nodes[HOST].tables[1].sm_info is None

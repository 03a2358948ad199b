"""Several served subtrees: where an OID falls, and GETNEXT merged with pysnmp's tree."""

from __future__ import annotations

from typing import Any

import pytest
from pysnmp.proto import rfc1902, rfc1905
from pysnmp.smi.builder import DirMibSource
from tests.support.agent_support import LOCAL_GUID, FakeMib, agent_settings, make_backend

from ibsnmp.agent.engine import build_engine
from ibsnmp.agent.instrum import ContextView
from ibsnmp.agent.read_view import SECRET_SUBTREES
from ibsnmp.mib.api import INFINIBAND_MIB, Oid
from ibsnmp.mib_compiler.paths import COMPILED_MIB_DIR
from ibsnmp.mib.subtrees import IF_MIB_IFMIB, IF_MIB_INTERFACES, SERVED_SUBTREES, Subtrees

SYSTEM = (1, 3, 6, 1, 2, 1, 1)
SNMP_GROUP = (1, 3, 6, 1, 2, 1, 11)
IF_NUMBER = IF_MIB_INTERFACES + (1, 0)
IF_NAME = IF_MIB_IFMIB + (1, 1, 1, 1)


def test_where_an_oid_falls() -> None:
    served = SERVED_SUBTREES
    assert served.roots == (IF_MIB_INTERFACES, IF_MIB_IFMIB, INFINIBAND_MIB)
    assert served.end_of(IF_NUMBER) == (1, 3, 6, 1, 2, 1, 3)
    assert served.end_of(IF_MIB_INTERFACES) == (1, 3, 6, 1, 2, 1, 3)
    assert served.end_of((1, 3, 6, 1, 2, 1)) is None
    assert served.end_of((1, 3, 6, 1, 2, 1, 3)) is None
    assert served.end_of((1, 3, 6, 1, 2, 1, 30, 9)) is None
    assert served.end_of(INFINIBAND_MIB + (3, 1)) == (1, 3, 6, 1, 3, 118)
    assert served.next_root(SYSTEM + (1, 0)) == IF_MIB_INTERFACES
    assert served.next_root(IF_NUMBER) == IF_MIB_IFMIB
    assert served.next_root(SNMP_GROUP) == IF_MIB_IFMIB
    assert served.next_root(INFINIBAND_MIB) is None
    with pytest.raises(ValueError):
        Subtrees(((1, 3, 6), (1, 3, 6, 1)))


class TwoSubtreeMib(FakeMib):
    """The fake fabric, and a few IF-MIB instances for every node."""

    subtrees = Subtrees((IF_MIB_INTERFACES, IF_MIB_IFMIB, INFINIBAND_MIB))

    def __init__(self) -> None:
        super().__init__()
        for keys, values in self._tables.values():
            values[IF_NUMBER] = rfc1902.Integer32(2)
            for port in (1, 2):
                values[IF_NAME + (port,)] = rfc1902.OctetString(f"port/{port}")
            keys[:] = sorted(values)


@pytest.fixture(scope="module")
def view() -> ContextView:
    resolver, _ = make_backend()
    mib = TwoSubtreeMib()
    engine = build_engine(agent_settings(), resolver, mib, fabric_summary="unit")
    base = engine.engine.message_dispatcher.mib_instrum_controller
    return ContextView(base, mib, resolver(LOCAL_GUID.encode()))


def allow_all(view_type: str, varbind: Any, **context: Any) -> bool:
    name = tuple(varbind[0])
    return any(name[: len(p)] == p for p in SECRET_SUBTREES)


def walk(view: ContextView, start: Oid) -> list[Oid]:
    out: list[Oid] = []
    oid = start
    while True:
        ((name, value),) = view.read_next_variables((oid, None), acFun=allow_all)
        if isinstance(value, rfc1905.EndOfMibView):
            return out
        assert tuple(name) > oid, (name, oid)
        oid = tuple(name)
        out.append(oid)


def test_a_walk_crosses_every_subtree_in_order(view: ContextView) -> None:
    oids = walk(view, (1, 3, 6, 1))
    assert oids == sorted(oids)
    order: list[str] = []
    for oid in oids:
        for label, root in (("system", SYSTEM), ("interfaces", IF_MIB_INTERFACES),
                            ("snmp", SNMP_GROUP), ("ifMIB", IF_MIB_IFMIB),
                            ("infiniband", INFINIBAND_MIB), ("snmpModules", (1, 3, 6, 1, 6, 3))):
            if oid[: len(root)] == root and (not order or order[-1] != label):
                order.append(label)
    assert order == ["system", "interfaces", "snmp", "ifMIB", "infiniband", "snmpModules"]
    assert IF_NUMBER in oids and IF_NAME + (2,) in oids


def test_getnext_at_a_subtree_end_takes_the_base_tree_first(view: ContextView) -> None:
    # After ifNumber (the end of the interfaces subtree) comes the snmp group,
    # not ifMIB's first instance.
    ((name, _),) = view.read_next_variables((IF_NUMBER, None), acFun=allow_all)
    assert tuple(name)[: len(SNMP_GROUP)] == SNMP_GROUP
    # After the snmp group's last instance: ifMIB's first.
    ((name, _),) = view.read_next_variables((SNMP_GROUP + (99,), None), acFun=allow_all)
    assert tuple(name) == IF_NAME + (1,)


def test_pysnmp_s_tree_has_nothing_inside_the_served_subtrees() -> None:
    # The engine loads no module with instances there (RFC1213-MIB would
    # put its own interfaces group there): its next instance after each
    # root lies past the subtree.
    resolver, mib = make_backend()
    engine = build_engine(agent_settings(), resolver, mib, fabric_summary="unit")
    base = engine.engine.message_dispatcher.mib_instrum_controller
    builder = engine.engine.get_mib_builder()
    assert "RFC1213-MIB" not in builder.mibSymbols
    # Even with IF-MIB loaded (notifications import it): objects, no instances.
    builder.add_mib_sources(DirMibSource(str(COMPILED_MIB_DIR)))
    builder.load_modules("IF-MIB")
    for root in SERVED_SUBTREES.roots:
        ((name, value),) = base.read_next_variables((root, None), acFun=allow_all,
                                                     snmpEngine=engine.engine)
        assert not SERVED_SUBTREES.holds(tuple(name)), (root, name)


class CountingBase:
    """pysnmp's controller, counting the GETNEXTs it is asked."""

    def __init__(self, base: Any) -> None:
        self._base = base
        self.nexts = 0

    def read_next_variables(self, *varbinds: Any, **context: Any) -> Any:
        self.nexts += 1
        return self._base.read_next_variables(*varbinds, **context)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)


def test_a_walk_inside_a_subtree_asks_pysnmp_nothing(view: ContextView) -> None:
    counting = CountingBase(view._base)
    inside = ContextView(counting, view._mib, view._target)
    ((name, _),) = inside.read_next_variables((IF_MIB_IFMIB, None), acFun=allow_all)
    ((name, _),) = inside.read_next_variables((tuple(name), None), acFun=allow_all)
    assert tuple(name) == IF_NAME + (2,) and counting.nexts == 0
    inside.read_next_variables((tuple(name), None), acFun=allow_all)  # leaves ifMIB
    assert counting.nexts == 1

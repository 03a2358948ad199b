"""ContextView without the network: merge order, access checks, errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from pysnmp.proto import rfc1902, rfc1905
from pysnmp.smi import error as smi_error
from tests.support.agent_support import (
    LOCAL_GUID,
    NODE_DESC,
    NODE_NUMBER,
    PORT_STATE,
    PORT_XMIT,
    agent_settings,
    make_backend,
)

from ibsnmp.agent.context_hooks import ContextDirectory, is_node_context_name
from ibsnmp.agent.engine import build_engine
from ibsnmp.agent.instrum import ContextView
from ibsnmp.agent.read_view import SECRET_SUBTREES
from ibsnmp.mib.api import INFINIBAND_MIB, NO_SUCH_OBJECT, ContextTarget
from ibsnmp.mib.subtrees import Subtrees

SYS_DESCR = (1, 3, 6, 1, 2, 1, 1, 1, 0)
SNMP_SET_SERIAL_NO = (1, 3, 6, 1, 6, 3, 1, 1, 6, 1, 0)  # first base OID after 1.3.6.1.3


@pytest.fixture(scope="module")
def backend() -> tuple[Any, Any]:
    return make_backend()


@pytest.fixture(scope="module")
def base(backend: tuple[Any, Any]) -> Any:
    """pysnmp's own controller of a configured engine (system group loaded)."""
    agent_engine = build_engine(agent_settings(), *backend, fabric_summary="unit")
    return agent_engine.engine.message_dispatcher.mib_instrum_controller


def view(base: Any, backend: tuple[Any, Any], context: bytes = b"") -> ContextView:
    resolver, mib = backend
    return ContextView(base, mib, resolver(context))


def hide(*prefixes: tuple[int, ...]) -> Callable[..., bool]:
    """An acFun with these subtrees not in view (answers True, as verify_access does)."""
    def ac_fun(view_type: str, varbind: Any, **context: Any) -> bool:
        name = tuple(varbind[0])
        return any(name[: len(p)] == p for p in prefixes + SECRET_SUBTREES)
    return ac_fun


allow_all = hide()  # the agent's read view: everything but its secrets


def v1_getnext(view_type: str, varbind: Any, **context: Any) -> bool:
    """verify_access for SNMPv1 GETNEXT: Counter64 raises NoAccessError."""
    value = varbind[1]
    if isinstance(value, rfc1902.Counter64):
        raise smi_error.NoAccessError(name=varbind[0], idx=context.get("idx"))
    return allow_all(view_type, varbind, **context)


def names(varbinds: list[tuple[Any, Any]]) -> list[tuple[int, ...]]:
    return [tuple(name) for name, _ in varbinds]


def test_get_mixes_base_and_virtual(base: Any, backend: Any) -> None:
    out = view(base, backend).read_variables(
        (SYS_DESCR, None), (NODE_DESC, None), (INFINIBAND_MIB + (9, 0), None),
        (PORT_STATE + (7,), None), (SYS_DESCR[:-1], None), acFun=allow_all)
    assert names(out) == [SYS_DESCR, NODE_DESC, INFINIBAND_MIB + (9, 0), PORT_STATE + (7,),
                          SYS_DESCR[:-1]]
    assert str(out[0][1]) == "ibsnmp 0.1.0 InfiniBand SNMP agent (unit)"
    assert str(out[1][1]) == "node-1"
    assert isinstance(out[2][1], rfc1905.NoSuchObject)
    assert isinstance(out[3][1], rfc1905.NoSuchInstance)
    # sysDescr without .0 names an object type, not an instance (RFC 3416 4.2.1).
    assert isinstance(out[4][1], rfc1905.NoSuchInstance)


def test_get_not_in_view_is_no_such_object(base: Any, backend: Any) -> None:
    out = view(base, backend).read_variables((NODE_DESC, None), (SYS_DESCR, None),
                                             acFun=hide(NODE_DESC, SYS_DESCR[:7]))
    assert [type(value) for _, value in out] == [rfc1905.NoSuchObject, rfc1905.NoSuchObject]


def test_getnext_merges_the_two_trees(base: Any, backend: Any) -> None:
    v = view(base, backend, LOCAL_GUID.encode())
    out = v.read_next_variables(
        ((1, 3, 6, 1, 2, 2), None),      # before the subtree -> its first instance
        (INFINIBAND_MIB, None),           # at its root
        (NODE_DESC, None),                # inside
        (PORT_STATE + (2,), None),        # its last instance -> the base tree again
        ((1, 3, 6, 1, 9), None),          # after everything
        acFun=allow_all)
    assert names(out)[:4] == [NODE_DESC, NODE_DESC, NODE_NUMBER, SNMP_SET_SERIAL_NO]
    assert names(out)[4] == (1, 3, 6, 1, 9)
    assert isinstance(out[4][1], rfc1905.EndOfMibView)


def test_getnext_before_the_subtree_prefers_the_base_tree(base: Any, backend: Any) -> None:
    out = view(base, backend).read_next_variables((SYS_DESCR, None), acFun=allow_all)
    assert names(out) == [(1, 3, 6, 1, 2, 1, 1, 2, 0)]


def test_getnext_skips_what_is_not_in_view(base: Any, backend: Any) -> None:
    out = view(base, backend).read_next_variables(
        ((1, 3, 6, 1, 2, 2), None), acFun=hide(NODE_DESC, PORT_XMIT))
    assert names(out) == [NODE_NUMBER]
    out = view(base, backend).read_next_variables(
        (NODE_NUMBER, None), acFun=hide(PORT_XMIT))
    assert names(out) == [PORT_STATE + (1,)]


def test_getnext_skips_counter64_for_snmpv1(base: Any, backend: Any) -> None:
    out = view(base, backend).read_next_variables((NODE_NUMBER, None), acFun=v1_getnext)
    assert names(out) == [PORT_STATE + (1,)]


def test_getnext_in_a_hidden_subtree_leaves_it(base: Any, backend: Any) -> None:
    out = view(base, backend).read_next_variables((NODE_DESC, None),
                                                  acFun=hide(INFINIBAND_MIB))
    assert names(out) == [SNMP_SET_SERIAL_NO]


def test_the_base_tree_holds_secrets_the_view_must_hide(base: Any, backend: Any) -> None:
    # pysnmp keeps USM pass phrases readable in PYSNMP-USM-MIB: the read view
    # excludes them (and the community table), see read_view.SECRET_SUBTREES.
    nothing_hidden = lambda *args, **kwargs: False  # noqa: E731
    out = view(base, backend).read_next_variables((PORT_STATE + (2,), None), acFun=nothing_hidden)
    assert names(out)[0][:9] == (1, 3, 6, 1, 4, 1, 20408, 3, 1)


def test_set_on_the_subtree_is_not_writable(base: Any, backend: Any) -> None:
    with pytest.raises(smi_error.NotWritableError) as caught:
        view(base, backend).write_variables(
            (SYS_DESCR, rfc1902.OctetString("x")), (NODE_DESC, rfc1902.OctetString("x")),
            acFun=allow_all)
    assert caught.value["idx"] == 1
    with pytest.raises(smi_error.NoAccessError):
        view(base, backend).write_variables((NODE_DESC, rfc1902.OctetString("x")),
                                            acFun=hide(INFINIBAND_MIB))


class BrokenMib:
    subtrees = Subtrees((INFINIBAND_MIB,))

    def get(self, target: ContextTarget, oid: tuple[int, ...]) -> Any:
        raise RuntimeError("binding bug")

    def get_next(self, target: ContextTarget, oid: tuple[int, ...]) -> Any:
        raise RuntimeError("binding bug")


def test_a_failing_virtual_mib_is_a_gen_err(base: Any, backend: Any) -> None:
    resolver, _ = backend
    broken = ContextView(base, BrokenMib(), resolver(b""))  # type: ignore[arg-type]  # a fake MIB
    with pytest.raises(smi_error.GenError) as caught:
        broken.read_variables((SYS_DESCR, None), (NODE_DESC, None), acFun=allow_all)
    assert caught.value["idx"] == 1
    with pytest.raises(smi_error.GenError):
        broken.read_next_variables((NODE_DESC, None), acFun=allow_all)


def test_virtual_mib_missing_maps_to_no_such_object(base: Any, backend: Any) -> None:
    resolver, mib = backend
    assert mib.get(resolver(b""), INFINIBAND_MIB + (1, 0)) is NO_SUCH_OBJECT
    out = view(base, backend).read_variables((INFINIBAND_MIB + (1, 0), None), acFun=allow_all)
    assert isinstance(out[0][1], rfc1905.NoSuchObject)


@pytest.mark.parametrize("name,ok", [
    (b"0002c90300a1b2c3", True), (b"0002C90300A1B2C3", False), (b"0002c90300a1b2c", False),
    (b"0002c90300a1b2c3x", False), (b"", False), (b"0002c90300a1b2cg", False),
])
def test_node_context_names(name: bytes, ok: bool) -> None:
    assert is_node_context_name(name) is ok


def test_directory_guards_the_resolver() -> None:
    calls: list[bytes] = []

    def resolver(name: bytes) -> Any:
        calls.append(name)
        if name == b"ffffffffffffffff":
            raise RuntimeError("resolver bug")
        return None

    directory = ContextDirectory(resolver)
    assert directory.resolve(b"not-a-guid") is None
    assert calls == []  # malformed names never reach the resolver
    assert directory.resolve(b"ffffffffffffffff") is None  # logged once, not raised
    assert directory.is_known_node(b"ffffffffffffffff") is False
    assert calls == [b"ffffffffffffffff"] * 2  # an unknown name is asked again


def test_a_node_that_joins_is_known_at_once_and_a_known_one_is_not_asked_again() -> None:
    joined: set[bytes] = set()
    calls: list[bytes] = []

    def resolver(name: bytes) -> Any:
        calls.append(name)
        return object() if name in joined else None

    directory = ContextDirectory(resolver)
    name = b"0002c903000a1b2c"
    assert directory.is_known_node(name) is False
    assert directory.is_known_node(name) is False
    joined.add(name)  # an MQTT publisher's node arrives
    assert directory.is_known_node(name) is True
    asked = len(calls)
    assert directory.is_known_node(name) is True  # the request's VACM check: remembered
    assert len(calls) == asked

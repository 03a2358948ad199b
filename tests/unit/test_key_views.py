"""IBA key columns in the agent's views, without the network."""

from __future__ import annotations

from bisect import bisect_right
from typing import Any

from pysnmp.proto import rfc1902
from tests.support.agent_support import agent_settings, make_backend

from ibsnmp.agent.engine import build_engine
from ibsnmp.agent.instrum import ContextView
from ibsnmp.agent.views import key_subtrees, past_key_subtree
from ibsnmp.mib.api import INFINIBAND_MIB
from ibsnmp.mib.loader import definitions
from ibsnmp.mib.subtrees import Subtrees

PORT_M_KEY = definitions().objects["ibSmPortInfoMKey"].oid
NEXT_COLUMN = PORT_M_KEY[:-1] + (PORT_M_KEY[-1] + 1,)


class CountingMib:
    """A big hidden key column, then one visible value; counts get_next calls."""

    subtrees = Subtrees((INFINIBAND_MIB,))

    def __init__(self, rows: int) -> None:
        self.keys = [PORT_M_KEY + (row,) for row in range(1, rows + 1)] + [NEXT_COLUMN + (1,)]
        self.calls = 0

    def get(self, target: Any, oid: tuple[int, ...]) -> Any:
        raise AssertionError("not used")

    def get_next(self, target: Any, oid: tuple[int, ...]) -> tuple[tuple[int, ...], Any] | None:
        self.calls += 1
        i = bisect_right(self.keys, oid)
        return (self.keys[i], rfc1902.OctetString(b"\x00" * 8)) if i < len(self.keys) else None


def hide_keys(view_type: str, varbind: Any, **context: Any) -> bool:
    name = tuple(varbind[0])
    return any(name[: len(s)] == s for s in key_subtrees())


def test_a_walk_leaves_a_hidden_key_column_in_one_step() -> None:
    resolver, fake_mib = make_backend()
    engine = build_engine(agent_settings(), resolver, fake_mib)
    base = engine.engine.message_dispatcher.mib_instrum_controller
    mib = CountingMib(rows=100_000)
    view = ContextView(base, mib, resolver(b""))  # type: ignore[arg-type]  # a fake MIB
    ((name, _),) = view.read_next_variables((PORT_M_KEY, None), acFun=hide_keys)
    assert tuple(name) == NEXT_COLUMN + (1,)
    assert mib.calls == 2  # the first refused row, then past the column


def test_past_key_subtree() -> None:
    scalar = definitions().objects["ibSmaPortMKey"].oid
    assert past_key_subtree(scalar + (0,)) == scalar[:-1] + (scalar[-1] + 1,)
    assert past_key_subtree(PORT_M_KEY + (5, 1)) == NEXT_COLUMN
    assert past_key_subtree(NEXT_COLUMN + (1,)) == NEXT_COLUMN + (1,)

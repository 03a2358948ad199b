"""The served MIB modules (the five InfiniBand ones and IF-MIB), bound into one virtual tree."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from .ca import IB_CA_MIB
from .conn import IBCONNECTION_MIB
from .ifmib import InterfaceEvents, if_mib_binding, link_traps_on
from .pma import PMA_MIB
from .sm import IB_SM_MIB, ib_sm_binding
from .sm_write import sm_writers
from .sma import SMA_MIB
from .system_write import system_objects
from .virtual import InfinibandMib

MODULE_BINDINGS = (SMA_MIB, IB_CA_MIB, PMA_MIB, IB_SM_MIB, IBCONNECTION_MIB)


def build_mib(state: Any = None, read_only_system: Iterable[str] = (), *,
              interfaces: InterfaceEvents | None = None,
              link_traps: Callable[[], bool] = link_traps_on) -> InfinibandMib:
    """The agent's MIB. With `state` (an ibsnmp.state.store.AgentState) IB-SM-MIB
    serves its request sessions and configuration and accepts SETs, and so
    do sysContact, sysName and sysLocation except those in
    `read_only_system` (set by the configuration file); without, every
    object is read-only. IF-MIB's change times come from `interfaces`
    (the agent's InterfaceHistory; 0 without), its ifLinkUpDownTrapEnable
    shows `link_traps()` (`[traps] if_mib`)."""
    if_mib = if_mib_binding(interfaces, link_traps)
    if state is None:
        return InfinibandMib(MODULE_BINDINGS + (if_mib,))
    modules = (SMA_MIB, IB_CA_MIB, PMA_MIB, ib_sm_binding(state, sm_writers(state)), IBCONNECTION_MIB,
               if_mib)
    return InfinibandMib(modules, store=state, outside=system_objects(read_only_system))

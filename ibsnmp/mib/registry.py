"""The five served MIB modules, bound into one virtual tree."""

from __future__ import annotations

from .ca import IB_CA_MIB
from .conn import IBCONNECTION_MIB
from .pma import PMA_MIB
from .sm import IB_SM_MIB
from .sma import SMA_MIB
from .virtual import InfinibandMib

MODULE_BINDINGS = (SMA_MIB, IB_CA_MIB, PMA_MIB, IB_SM_MIB, IBCONNECTION_MIB)


def build_mib() -> InfinibandMib:
    return InfinibandMib(MODULE_BINDINGS)

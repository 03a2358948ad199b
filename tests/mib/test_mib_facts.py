"""MIB facts the bindings read from the compiled modules instead of retyping."""

from __future__ import annotations

from typing import Any, get_type_hints

import pytest

from ibsnmp.fabric import traffic
from ibsnmp.fabric.iba import SmState
from ibsnmp.mib import facts, sm, sma, write
from ibsnmp.mib.api import ContextTarget
from ibsnmp.mib.pma import PMA_MIB


def test_enumeration_labels_come_from_the_compiled_module() -> None:
    # SMA-MIB: ibSmaPKeyMembership INTEGER { none(1), limited(2), full(3) }
    assert [facts.named_value("ibSmaPKeyMembership", label)
            for label in ("none", "limited", "full")] == [1, 2, 3]
    assert facts.named_value("ibSmaSmState", "master") == 5
    with pytest.raises(KeyError):
        facts.named_value("ibSmaPKeyMembership", "partial")


def test_textual_conventions_come_from_snmpv2_tc() -> None:
    assert (facts.TRUE, facts.FALSE) == (1, 2)
    assert facts.truth(object()) == facts.TRUE and facts.truth(0) == facts.FALSE
    assert (write.ACTIVE, write.NOT_IN_SERVICE, write.CREATE_AND_GO, write.DESTROY) == (1, 2, 4, 6)


def test_clamps_bound_both_ends_of_the_mib_range() -> None:
    # ibSmaNodePartitionTableNum Integer32 (1..65535)
    assert facts.value_range("ibSmaNodePartitionTableNum") == (1, 65535)
    clamp = facts.clamp_to("ibSmaNodePartitionTableNum")
    assert [clamp(v) for v in (0, 1, 300, 65535, 1 << 20)] == [1, 1, 300, 65535, 65535]
    assert facts.highest("ibSmaPortVendorDiagCode") == 2047
    with pytest.raises(ValueError, match="no range"):
        facts.value_range("ibSmaNodeString")


def test_bindings_hold_the_mib_numbers() -> None:
    assert sma._SM_STATE[SmState.NOT_ACTIVE] == 2 and sma._SM_STATE_UNKNOWN == 1
    assert (sma._LED_UNKNOWN, sma._LED_ON, sma._LED_OFF) == (1, 2, 3)
    assert (sm._LOW_PRIORITY, sm._HIGH_PRIORITY) == (1, 2)
    # ActCount wraps by masking with the top of its Integer32: all ones.
    assert sm._ACT_COUNT_MASK == 2**31 - 1


class _Recorder:
    """A stand-in attribute value that remembers which field a getter read."""

    def __init__(self, method: str) -> None:
        self.method = method
        self.field: str | None = None

    def __getattr__(self, name: str) -> Any:
        if name == "per_vl":
            self.field = "per_vl"
            return [0] * 16
        self.field = name
        return 0


class _RecordingRow:
    """A PMA row whose every attribute read goes to a _Recorder."""

    def __init__(self) -> None:
        self.last: _Recorder | None = None

    def read(self, method: str, t: float, opcode: int = -1) -> _Recorder:
        self.last = _Recorder(method)
        return self.last

    def __getitem__(self, at: int) -> Any:  # per-opcode rows are (row, opcode)
        return self if at == 0 else 0


def iba_width(method: str, field: str) -> int:
    attribute = get_type_hints(getattr(traffic.TrafficProfile, method))["return"]
    bits = attribute.BITS
    return bits if isinstance(bits, int) else bits[field]


def test_iba_counter_widths_are_the_pma_mib_ranges() -> None:
    """Every PMA-MIB counter column saturates at its IBA field width, which
    is the top of the MIB's range (the per-VL flow control update errors,
    2 bits in IBA, sit inside the draft's 0..255)."""
    wider_in_the_mib = []
    checked = 0
    for table in PMA_MIB.tables:
        for column, getter in table.columns.items():
            row = _RecordingRow()
            getter(row, ContextTarget(fabric=None, node=None, serves_sm=False))
            if row.last is None or row.last.field is None:
                continue  # an index column
            top = (1 << iba_width(row.last.method, row.last.field)) - 1
            assert top <= facts.highest(column), column
            if top < facts.highest(column):
                wider_in_the_mib.append(column)
            checked += 1
    assert checked > 100
    assert wider_in_the_mib == [f"ibPmaPortVlXmitFCUpErr{vl}" for vl in range(16)]

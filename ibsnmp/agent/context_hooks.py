"""SNMP contexts for every fabric node, without per-node registration.

The default context ("") is the designated local node; every node answers under the context
named by its node GUID in 16 lower-case hex digits (the SNMPv3 contextName, or
`<community>@<guid>` for SNMPv1/v2c, which the prefilter resolves). Registering thousands of
contexts the stock way is slow and big, so two pysnmp hooks are overridden instead: the
context's `get_mib_instrum` (`NodeSnmpContext`) and VACM's `is_access_allowed`
(`NodeContextVacm`).
"""

from __future__ import annotations

import logging
from typing import Any

from pyasn1.type import univ
from pysnmp.entity.engine import SnmpEngine
from pysnmp.entity.rfc3413.context import SnmpContext
from pysnmp.proto import errind, error
from pysnmp.proto.acmod import rfc3415

from ibsnmp.mib.api import ContextResolver, ContextTarget, VirtualMib

from .instrum import ContextView

log = logging.getLogger(__name__)

NODE_CONTEXT_LENGTH = 16
_HEX = frozenset(b"0123456789abcdef")


def is_node_context_name(name: bytes) -> bool:
    """True for a well-formed node context name: 16 lower-case hex digits."""
    return len(name) == NODE_CONTEXT_LENGTH and _HEX.issuperset(name)


def _octets(value: Any) -> bytes:
    if isinstance(value, bytes):
        return value
    octets: bytes = (value if isinstance(value, univ.OctetString)
                     else univ.OctetString(value)).asOctets()
    return octets


class ContextDirectory:
    """Which context names exist: a guarded front of the ContextResolver.

    `resolve` is called once per request (by get_mib_instrum) and remembers
    its last answer, so the per-varbind VACM check of the same request does
    not call the resolver again (which may build a ContextTarget each time).
    """

    __slots__ = ("_resolver", "_failed_once", "_last_name", "_last_known")

    def __init__(self, resolver: ContextResolver) -> None:
        self._resolver = resolver
        self._failed_once = False
        self._last_name: bytes | None = None
        self._last_known = False

    def resolve(self, name: bytes) -> ContextTarget | None:
        target = None
        if not name or is_node_context_name(name):
            try:
                target = self._resolver(name)
            except Exception:
                # A resolver bug must not kill request handling; say it once.
                if not self._failed_once:
                    self._failed_once = True
                    log.exception("context resolver failed; treating the context as unknown")
        self._last_name, self._last_known = name, target is not None
        return target

    def is_known_node(self, name: bytes) -> bool:
        if not name:
            return False
        if name == self._last_name and self._last_known:
            return True
        # An unknown name is asked again: its node may have joined since
        # (an MQTT aggregator's), and nothing else would refresh the memory.
        return self.resolve(name) is not None


class NodeSnmpContext(SnmpContext):
    """One SnmpContext for all contexts: a per-request view, nothing stored.

    `get_mib_instrum(contextName)` (public) returns a small per-request
    ContextView for the resolved node."""

    def __init__(self, snmpEngine: SnmpEngine, directory: ContextDirectory,
                 mib: VirtualMib) -> None:
        super().__init__(snmpEngine)
        self._directory = directory
        self._mib = mib
        self._base = snmpEngine.message_dispatcher.mib_instrum_controller

    def get_mib_instrum(self, contextName: Any = b"") -> Any:
        target = self._directory.resolve(_octets(contextName))
        return ContextView(self._base, self._mib, target)


class NodeContextVacm(rfc3415.Vacm):
    """VACM with node contexts mapped to "" and two fixes over pysnmp 7.1.

    `is_access_allowed` (the access control model's entry) applies the policy
    of the context "" to every known node context; unknown ones still fail as
    noSuchContext (the responders then ask for the snmpUnknownContexts Report,
    which agent.fast_v3 sends).

    Fixes: (1) a view name with no view-tree entries made pysnmp *return*
    (not raise) notInView, which granted access; (2) pysnmp's fuzzy access
    lookup ignores the minimum security level, so a user configured for
    authPriv could read with authNoPriv; `min_levels` enforces it.
    """

    def __init__(self, directory: ContextDirectory,
                 min_levels: dict[tuple[int, bytes], int] | None = None) -> None:
        super().__init__()
        self._directory = directory
        self.min_levels = min_levels if min_levels is not None else {}

    def is_access_allowed(self, snmpEngine: Any, securityModel: Any, securityName: Any,
                          securityLevel: Any, viewType: Any, contextName: Any,
                          variableName: Any) -> None:
        if contextName:
            name = _octets(contextName)
            if name and self._directory.is_known_node(name):
                contextName = b""
        required = self.min_levels.get((int(securityModel), _octets(securityName)))
        if required is not None and int(securityLevel) < required:
            raise error.StatusInformation(errorIndication=errind.noAccessEntry)
        result = super().is_access_allowed(snmpEngine, securityModel, securityName,
                                           securityLevel, viewType, contextName, variableName)
        if isinstance(result, error.StatusInformation):  # pysnmp returns some refusals
            raise result


def install_context_hooks(engine: SnmpEngine, directory: ContextDirectory) -> NodeContextVacm:
    """Swap the engine's VACM for the one that knows node contexts."""
    vacm = NodeContextVacm(directory)
    engine.access_control_model[NodeContextVacm.ACCESS_MODEL_ID] = vacm
    return vacm

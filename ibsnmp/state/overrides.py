"""What managers configure through IB-SM-MIB, and how it changes a snapshot.

`ConfigState` holds only what was written (overrides of the provider's values), so it applies
to whatever snapshot the provider swaps in next: `apply_config(fabric, state)` returns a new
snapshot with the SM settings, partition edits, SL-to-VL tables and VL arbitration weights in
it, so every MIB (IB-SM-MIB, and SMA-MIB for the nodes concerned) reads them. Edits that name
a node or port the fabric does not have are skipped. `to_json` / `from_json` give the state
file's document (see store.py). A ConfigState is never changed in place: writers make a new
one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, TypeVar

from ibsnmp import documents
from ibsnmp.documents import JSON, DocumentError
from ibsnmp.fabric.iba import SmState
from ibsnmp.fabric.lineage import Aspect
from ibsnmp.fabric.succession import derived_successor
from ibsnmp.fabric.model import Fabric, Node, Partition, PartitionMember, Port, PortRef, SmInfo, VlArbEntry

T = TypeVar("T")
_Value = TypeVar("_Value", bound=int | bytes)  # what a MIB object serves

FORMAT = "ibsnmp-state"
VERSION = 1

_INT32_MAX = 2**31 - 1
# ibSmConfigTable columns (without the ibSmConfig prefix) -> (SmConfig
# field, lowest, highest): the IBA widths of fields the MIB leaves unbounded.
SM_CONFIG_COLUMNS = {
    "SweepInterval": ("sweep_interval_s", 0, _INT32_MAX),
    "ResponseTimeout": ("transaction_timeout_ms", 1, _INT32_MAX),
    "PortAgingTime": ("port_aging_time_s", 0, _INT32_MAX),
    "MinUnicastLID": ("min_unicast_lid", 1, 49151),
    "MaxUnicastLID": ("max_unicast_lid", 1, 49151),
    "DefaultLMC": ("lmc", 0, 7),
    "MasterPollInterval": ("master_poll_interval_s", 1, _INT32_MAX),
    "MasterPollRetries": ("master_poll_retries", 0, _INT32_MAX),
    "MKeyLeasePeriod": ("m_key_lease_period_s", 0, 65535),  # IBA M_KeyLeasePeriod: 16 bits
}
SM_CONFIG_FIELDS = tuple(name for name, _, _ in SM_CONFIG_COLUMNS.values())
# The writable SNMPv2-MIB system objects a SET may change (kept with the rest).
SYSTEM_OBJECTS = ("sysContact", "sysName", "sysLocation")
# The writable SNMPv2-MIB snmp group objects (INTEGERs): kept the same way.
SNMP_OBJECTS = ("snmpEnableAuthenTraps",)

REMOVED, FULL, LIMITED = 0, 1, 2  # partition membership edits
LOW, HIGH = 1, 2  # VL arbitration priorities, as ibSmVLArbitrationPriority numbers them
_MEMBERSHIP_NAMES = {REMOVED: "removed", FULL: "full", LIMITED: "limited"}
_PRIORITY_NAMES = {LOW: "low", HIGH: "high"}


@dataclass(frozen=True, slots=True)
class SmOverride:
    """What was written about one SM (None: the provider's value)."""

    priority: int | None = None
    sm_key: int | None = None
    disabled: bool | None = None


@dataclass(frozen=True, slots=True)
class PartitionEdit:
    """Edits of one partition (by 15-bit P_Key). `fresh`: created here, so
    the provider's members do not count (a re-created partition starts
    empty); `deleted`: gone; `members`: (node GUID, port) -> FULL, LIMITED
    or REMOVED."""

    name: str = ""
    fresh: bool = False
    deleted: bool = False
    members: Mapping[tuple[int, int], int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PartitionBuffer:
    """The ibSmPartitionConfig scalars: operands written for the next
    action (None: not written, or used up by an action), and the last
    action performed (none(1), its DEFVAL, before any)."""

    prefix: bytes | None = None
    key: bytes | None = None
    guid: bytes | None = None
    port: int | None = None
    member_type: int | None = None
    last_action: int = 1

    def operands(self, subnet_prefix: bytes) -> PartitionOperands:
        """What the scalars read and the next action uses: each operand as
        written, else its initial value. The draft gives none but the
        action's; these name nothing an action could change by mistake:
        the subnet prefix is the fabric's (the SM manages that subnet);
        the key 0x0000, the invalid P_Key (IBA 10.9.1.2), names no
        partition; the GUID 0 no node; port 0 is a switch's only member
        port and, on a CA (whose ports start at 1), every port of the CA;
        the type is limitedMembership(2), the least a P_Key grants (its
        membership bit 0, as in the key 0x0000)."""
        return PartitionOperands(
            prefix=self.prefix if self.prefix is not None else subnet_prefix,
            key=self.key if self.key is not None else b"\x00\x00",
            guid=self.guid if self.guid is not None else bytes(8),
            port=self.port if self.port is not None else 0,
            member_type=self.member_type if self.member_type is not None else LIMITED,
        )


@dataclass(frozen=True, slots=True)
class PartitionOperands:
    """The operands of the next partition action, none missing."""

    prefix: bytes
    key: bytes
    guid: bytes
    port: int
    member_type: int  # fullMembership(1) or limitedMembership(2): FULL / LIMITED


@dataclass(frozen=True, slots=True)
class ConfigState:
    sm: Mapping[int, SmOverride] = field(default_factory=dict)
    sm_config: Mapping[str, int] = field(default_factory=dict)
    partitions: Mapping[int, PartitionEdit] = field(default_factory=dict)
    service_assoc: Mapping[tuple[bytes, bytes], int] = field(default_factory=dict)
    sl2vl: Mapping[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)
    vl_arb: Mapping[tuple[int, int, int], int] = field(default_factory=dict)
    partition_buffer: PartitionBuffer = PartitionBuffer()
    system: Mapping[str, bytes] = field(default_factory=dict)  # SYSTEM_OBJECTS descriptor -> value
    snmp: Mapping[str, int] = field(default_factory=dict)  # SNMP_OBJECTS descriptor -> value

    @property
    def empty(self) -> bool:
        return self == ConfigState()


def with_entry(mapping: Mapping[Any, Any], key: Any, value: Any) -> dict[Any, Any]:
    """A copy of `mapping` with `key` set (value None: removed)."""
    out = dict(mapping)
    if value is None:
        out.pop(key, None)
    else:
        out[key] = value
    return out


# -- applying the state to a snapshot ---------------------------------------------------

def apply_config(fabric: Fabric, state: ConfigState) -> Fabric:
    """`fabric` with the written configuration in it (the same object when
    there is nothing to apply)."""
    if state.empty:
        return fabric
    ports: dict[PortRef, Port] = {}

    def port(ref: PortRef) -> Port | None:
        return ports.get(ref) or fabric.port(ref.guid, ref.port)

    for (guid, num), table in state.sl2vl.items():
        current = port(PortRef(guid, num))
        if current is not None and current.sl2vl and tuple(current.sl2vl) != table:
            # A written table is the output port's for every input port read.
            inputs = current.sl2vl_inputs
            ports[current.ref] = dataclasses.replace(
                current, sl2vl=table,
                sl2vl_inputs=None if inputs is None else tuple((into, table) for into, _ in inputs))
    for (guid, num, priority), weight in state.vl_arb.items():
        current = port(PortRef(guid, num))
        if current is None:
            continue
        entries = current.vl_arb_high if priority == HIGH else current.vl_arb_low
        if entries and entries[0].weight != weight:
            weighted = (VlArbEntry(entries[0].vl, weight),) + tuple(entries[1:])
            ports[current.ref] = (dataclasses.replace(current, vl_arb_high=weighted) if priority == HIGH
                                  else dataclasses.replace(current, vl_arb_low=weighted))
    partitions = fabric.partitions
    if state.partitions:
        partitions, pkey_changes = _partitions(fabric, state.partitions)
        for ref, (base, membership) in pkey_changes:
            current = port(ref)
            if current is not None:
                ports[ref] = dataclasses.replace(
                    current, pkeys=_with_pkey(current.pkeys, base, membership))
    nodes = fabric.nodes
    if ports:
        nodes = _replace_ports(fabric, ports)
    sms = _sms(fabric.sms, state.sm) if state.sm else fabric.sms
    sm_config = fabric.sm_config
    if state.sm_config and sm_config is not None:
        written: dict[str, Any] = dict(state.sm_config)  # SmConfig field -> value
        sm_config = dataclasses.replace(sm_config, **written)
    # What the edits touch; the rest of what the provider's snapshot
    # derived (routing, counters, sorted keys ...) is kept.
    changed = ((Aspect.NODES if ports else Aspect(0))
               | (Aspect.SA if partitions is not fabric.partitions else Aspect(0))
               | (Aspect.SMS if sms is not fabric.sms else Aspect(0))
               | (Aspect.SM_CONFIG if sm_config is not fabric.sm_config else Aspect(0)))
    overlaid = dataclasses.replace(fabric, nodes=nodes, partitions=partitions, sms=sms, sm_config=sm_config)
    return derived_successor(fabric, overlaid, changed, {ref.guid for ref in ports})


def _replace_ports(fabric: Fabric, ports: Mapping[PortRef, Port]) -> Mapping[int, Node]:
    nodes = dict(fabric.nodes)
    by_node: dict[int, dict[int, Port]] = {}
    for ref, new in ports.items():
        by_node.setdefault(ref.guid, {})[ref.port] = new
    for guid, changed in by_node.items():
        node = nodes[guid]
        nodes[guid] = dataclasses.replace(
            node, ports=tuple(changed.get(p.num, p) for p in node.ports))
    return MappingProxyType(nodes)


def _pkey_port(fabric: Fabric, guid: int, num: int) -> PortRef | None:
    """The port whose P_Key table holds a member's key: a switch's port 0."""
    node = fabric.nodes.get(guid)
    if node is None:
        return None
    if node.is_switch:
        return node.management_port.ref
    return PortRef(guid, num) if node.port(num) is not None else None


def _partitions(fabric: Fabric, edits: Mapping[int, PartitionEdit]) -> tuple[
        tuple[Partition, ...], list[tuple[PortRef, tuple[int, int]]]]:
    """The edited partition list, and the P_Key table changes it implies:
    (port, (15-bit key, FULL / LIMITED / REMOVED))."""
    result: list[Partition] = []
    changes: list[tuple[PortRef, tuple[int, int]]] = []
    provider = {p.pkey: p for p in fabric.partitions}
    for pkey in sorted(set(provider) | set(edits)):
        old = provider.get(pkey)
        edit = edits.get(pkey)
        before = {(m.guid, m.port): FULL if m.full else LIMITED for m in old.members} if old else {}
        if edit is None:
            assert old is not None
            result.append(old)
            continue
        after: dict[tuple[int, int], int] = {} if (edit.fresh or edit.deleted) else dict(before)
        if not edit.deleted:
            for member, kind in edit.members.items():
                if kind == REMOVED:
                    after.pop(member, None)
                else:
                    after[member] = kind
        for member in set(before) | set(after):
            if before.get(member) != after.get(member):
                ref = _pkey_port(fabric, *member)
                if ref is not None:
                    changes.append((ref, (pkey, after.get(member, REMOVED))))
        if edit.deleted:
            continue
        members = tuple(sorted(
            PartitionMember(guid, num, kind == FULL) for (guid, num), kind in after.items()
            if guid in fabric.nodes))
        if old is not None:
            result.append(dataclasses.replace(old, members=members,
                                              name=edit.name or old.name))
        else:
            result.append(Partition(pkey, edit.name, members))
    return tuple(result), changes


def _with_pkey(pkeys: tuple[int, ...], base: int, membership: int) -> tuple[int, ...]:
    """A P_Key table with the entry for partition `base` set or removed (in
    place of the old entry, else appended)."""
    entry = None if membership == REMOVED else (base | 0x8000 if membership == FULL else base)
    out = []
    placed = False
    for key in pkeys:
        if key & 0x7FFF == base and key & 0x7FFF:
            if entry is not None and not placed:
                out.append(entry)
                placed = True
            continue
        out.append(key)
    if entry is not None and not placed:
        out.append(entry)
    return tuple(out)


def _sms(sms: tuple[SmInfo, ...], overrides: Mapping[int, SmOverride]) -> tuple[SmInfo, ...]:
    """SMs with written priorities and keys; a disabled SM is NOTACTIVE
    (IBA 14.4.1), an enabled one that was NOTACTIVE comes up STANDBY, and
    when no enabled SM is MASTER the best one (highest priority, then lowest
    GUID, IBA 14.4.1.1) takes over."""
    out = []
    for sm in sms:
        o = overrides.get(sm.guid)
        if o is None:
            out.append(sm)
            continue
        changes: dict[str, Any] = {}
        if o.priority is not None:
            changes["priority"] = o.priority
        if o.sm_key is not None:
            changes["sm_key"] = o.sm_key
        if o.disabled is True:
            changes["state"] = SmState.NOT_ACTIVE
        elif o.disabled is False and sm.state is SmState.NOT_ACTIVE:
            changes["state"] = SmState.STANDBY
        out.append(dataclasses.replace(sm, **changes) if changes else sm)
    enabled = [i for i, sm in enumerate(out) if sm.state is not SmState.NOT_ACTIVE]
    if enabled and not any(out[i].state is SmState.MASTER for i in enabled):
        best = min(enabled, key=lambda i: (-out[i].priority, out[i].guid))
        out[best] = dataclasses.replace(out[best], state=SmState.MASTER)
    return tuple(out)


# -- the state file's document ---------------------------------------------------------------


def _hex(value: int, digits: int) -> str:
    return f"0x{value:0{digits}x}"


def to_json(state: ConfigState) -> dict[str, Any]:
    """A JSON-ready document; keys in a stable order so files diff well."""
    buffer = state.partition_buffer
    return {
        "format": FORMAT,
        "version": VERSION,
        "sm": [
            {"guid": _hex(guid, 16),
             **({"priority": o.priority} if o.priority is not None else {}),
             **({"sm_key": _hex(o.sm_key, 16)} if o.sm_key is not None else {}),
             **({"admin": "disable" if o.disabled else "enable"} if o.disabled is not None else {})}
            for guid, o in sorted(state.sm.items())
        ],
        "sm_config": dict(sorted(state.sm_config.items())),
        "partitions": [
            {"pkey": _hex(pkey, 4), "name": edit.name, "created": edit.fresh,
             "deleted": edit.deleted,
             "members": [{"guid": _hex(guid, 16), "port": num,
                          "membership": _MEMBERSHIP_NAMES[kind]}
                         for (guid, num), kind in sorted(edit.members.items())]}
            for pkey, edit in sorted(state.partitions.items())
        ],
        "service_associations": [
            {"key": key.hex(), "name": name.decode("ascii"), "status": status}
            for (key, name), status in sorted(state.service_assoc.items())
        ],
        "sl2vl": [
            {"guid": _hex(guid, 16), "port": num, "map": list(table)}
            for (guid, num), table in sorted(state.sl2vl.items())
        ],
        "vl_arbitration": [
            {"guid": _hex(guid, 16), "port": num, "priority": _PRIORITY_NAMES[priority],
             "weight": weight}
            for (guid, num, priority), weight in sorted(state.vl_arb.items())
        ],
        "partition_config": {
            "subnet_prefix": buffer.prefix.hex() if buffer.prefix is not None else None,
            "key": buffer.key.hex() if buffer.key is not None else None,
            "member_guid": buffer.guid.hex() if buffer.guid is not None else None,
            "member_port": buffer.port,
            "member_type": buffer.member_type,
            "last_action": buffer.last_action,
        },
        # DisplayStrings are NVT ASCII (checked when set), so text is exact.
        "system": {name: state.system[name].decode("ascii")
                   for name in SYSTEM_OBJECTS if name in state.system},
        "snmp": {name: state.snmp[name] for name in SNMP_OBJECTS if name in state.snmp},
    }


class StateFormatError(DocumentError):
    """The state file's document is not one to_json wrote; the message
    names the key."""


# The state file's keys, at every level, in the order to_json writes them:
# anything else is refused.
_TOP_KEYS = ("format", "version", "sm", "sm_config", "partitions", "service_associations", "sl2vl",
             "vl_arbitration", "partition_config", "system", "snmp")
_ENTRY_KEYS = {
    "sm": ("guid", "priority", "sm_key", "admin"),
    "partitions": ("pkey", "name", "created", "deleted", "members"),
    "members": ("guid", "port", "membership"),
    "service_associations": ("key", "name", "status"),
    "sl2vl": ("guid", "port", "map"),
    "vl_arbitration": ("guid", "port", "priority", "weight"),
    "partition_config": ("subnet_prefix", "key", "member_guid", "member_port", "member_type",
                         "last_action"),
    "system": SYSTEM_OBJECTS,
    "snmp": SNMP_OBJECTS,
}
# Why a value cannot be served as the named MIB object (a served module's
# object or a writable SNMPv2-MIB system or snmp group object), None if it can: the MIB
# layer's check (ibsnmp.mib.write.state_value_problem), handed in by whoever loads.
ValueProblem = Callable[[str, int | bytes], str | None]

_SM_CONFIG_COLUMN_OF = {name: column for column, (name, _, _) in SM_CONFIG_COLUMNS.items()}
_ADMIN_DISABLED = {"enable": False, "disable": True}  # an SM's admin state -> SmOverride.disabled
MAX_NAME_LENGTH = 255  # a partition name (no MIB object serves it)


def from_json(doc: Any, mib_problem: ValueProblem) -> ConfigState:
    """The state a to_json document describes; StateFormatError naming the
    key if invalid. Every value is checked against the syntax of the MIB
    object that serves it (`mib_problem`), so what loads can be read, and
    against the IBA width the writers enforce."""
    read = _StateReader(doc, mib_problem)
    read.header()
    return ConfigState(sm=read.sm(), sm_config=read.sm_config(), partitions=read.partitions(),
                       service_assoc=read.service_associations(), sl2vl=read.sl2vl(),
                       vl_arb=read.vl_arbitration(), partition_buffer=read.partition_buffer(),
                       system=read.system(), snmp=read.snmp())


class _StateReader:
    """The sections of a to_json document, each read and checked on its own
    (StateFormatError naming the key)."""

    def __init__(self, doc: Any, mib_problem: ValueProblem) -> None:
        self._doc = doc
        self._mib_problem = mib_problem

    # -- checked values ---------------------------------------------------------

    def _expect(self, value: Any, kind: type[T], key: str) -> T:
        return documents.expect(value, kind, key, StateFormatError.at, syntax=JSON)

    def _keys(self, entry: Any, allowed: tuple[str, ...], key: str) -> dict[str, Any]:
        table = self._expect(entry, dict, key)
        documents.check_keys(table, allowed, "" if key == "document" else key,
                             StateFormatError.at)
        return table

    def _served(self, value: _Value, key: str, descriptor: str) -> _Value:
        problem = self._mib_problem(descriptor, value)
        if problem is not None:
            raise StateFormatError.at(key, f"not a value of {descriptor}: {problem}")
        return value

    def _number(self, value: Any, key: str, descriptor: str,
                field: tuple[int, int] | None = None) -> int:
        """An integer `descriptor` can serve, within `field` (the IBA width
        where the MIB leaves the INTEGER unbounded) when given."""
        low, high = field if field is not None else (None, None)
        return self._served(documents.integer(value, key, StateFormatError.at, low=low,
                                              high=high, syntax=JSON), key, descriptor)

    def _hexint(self, value: Any, key: str, bits: int) -> int:
        return documents.hex_number(value, key, bits, StateFormatError.at, syntax=JSON)

    def _octets(self, value: Any, key: str, descriptor: str) -> bytes | None:
        if value is None:
            return None
        try:
            data = bytes.fromhex(self._expect(value, str, key))
        except ValueError:
            raise StateFormatError.at(key, "expected hexadecimal octets") from None
        return self._served(data, key, descriptor)

    def _text(self, value: Any, key: str, descriptor: str) -> bytes:
        data = self._expect(value, str, key)
        if not data.isascii():
            raise StateFormatError.at(key, f"not a value of {descriptor}: not NVT ASCII text")
        return self._served(data.encode("ascii"), key, descriptor)

    def _entries(self, name: str) -> list[tuple[str, dict[str, Any]]]:
        listed = self._expect(self._doc.get(name, []), list, name)
        return [(f"{name}[{i}]", self._keys(e, _ENTRY_KEYS[name], f"{name}[{i}]"))
                for i, e in enumerate(listed)]

    def _flag(self, value: Any, key: str) -> bool:
        return documents.boolean(value, key, StateFormatError.at, syntax=JSON)

    # -- the sections -------------------------------------------------------------

    def header(self) -> None:
        doc = self._keys(self._doc, _TOP_KEYS, "document")
        if doc.get("format") != FORMAT:
            raise StateFormatError.at("format", f"expected {FORMAT!r}")
        if doc.get("version") != VERSION:
            raise StateFormatError.at("version",
                                      f"expected {VERSION} (this ibsnmp cannot read another)")

    def sm(self) -> dict[int, SmOverride]:
        sm: dict[int, SmOverride] = {}
        for at, entry in self._entries("sm"):
            disabled = documents.lookup(entry["admin"], f"{at}.admin", _ADMIN_DISABLED,
                                        StateFormatError.at) if "admin" in entry else None
            sm_key = self._hexint(entry["sm_key"], f"{at}.sm_key", 64) \
                if "sm_key" in entry else None
            if sm_key is not None:
                self._served(sm_key.to_bytes(8, "big"), f"{at}.sm_key", "ibSmConfigSMKey")
            sm[self._hexint(entry.get("guid"), f"{at}.guid", 64)] = SmOverride(
                # SMInfo Priority is a 4-bit field.
                priority=self._number(entry["priority"], f"{at}.priority", "ibSmConfigPriority",
                                      (0, 15)) if "priority" in entry else None,
                sm_key=sm_key,
                disabled=disabled,
            )
        return sm

    def sm_config(self) -> dict[str, int]:
        sm_config = {}
        for name, value in self._keys(self._doc.get("sm_config", {}), SM_CONFIG_FIELDS,
                                      "sm_config").items():
            column = _SM_CONFIG_COLUMN_OF[name]
            _, low, high = SM_CONFIG_COLUMNS[column]
            sm_config[name] = self._number(value, f"sm_config.{name}", f"ibSmConfig{column}",
                                           (low, high))
        low_lid, high_lid = sm_config.get("min_unicast_lid"), sm_config.get("max_unicast_lid")
        if low_lid is not None and high_lid is not None and not low_lid < high_lid:
            raise StateFormatError.at("sm_config.max_unicast_lid",
                                      "must be more than min_unicast_lid")
        return sm_config

    def partitions(self) -> dict[int, PartitionEdit]:
        partitions: dict[int, PartitionEdit] = {}
        kinds = {v: k for k, v in _MEMBERSHIP_NAMES.items()}
        for at, entry in self._entries("partitions"):
            members: dict[tuple[int, int], int] = {}
            for j, member in enumerate(self._expect(entry.get("members", []), list,
                                                    f"{at}.members")):
                mat = f"{at}.members[{j}]"
                self._keys(member, _ENTRY_KEYS["members"], mat)
                kind = documents.lookup(member.get("membership"), f"{mat}.membership", kinds,
                                        StateFormatError.at)
                members[(self._hexint(member.get("guid"), f"{mat}.guid", 64),
                         self._number(member.get("port"), f"{mat}.port",
                                      "ibSmPartitionConfigMemberPortNum"))] = kind
            pkey = self._hexint(entry.get("pkey"), f"{at}.pkey", 15)
            self._served(pkey.to_bytes(2, "big"), f"{at}.pkey", "ibSmPartitionKey")
            name = self._expect(entry.get("name", ""), str, f"{at}.name")
            if len(name) > MAX_NAME_LENGTH or not name.isprintable():
                raise StateFormatError.at(
                    f"{at}.name", f"expected at most {MAX_NAME_LENGTH} printable characters")
            partitions[pkey] = PartitionEdit(
                name=name,
                fresh=self._flag(entry.get("created", False), f"{at}.created"),
                deleted=self._flag(entry.get("deleted", False), f"{at}.deleted"),
                members=members,
            )
        return partitions

    def service_associations(self) -> dict[tuple[bytes, bytes], int]:
        assoc: dict[tuple[bytes, bytes], int] = {}
        for at, entry in self._entries("service_associations"):
            key = self._octets(entry.get("key"), f"{at}.key", "ibSmServiceAssocKey")
            if key is None:
                raise StateFormatError.at(f"{at}.key", "missing")
            name_octets = self._text(entry.get("name"), f"{at}.name", "ibSmServiceAssocName")
            # Stored rows are active(1) or notInService(2).
            assoc[(key, name_octets)] = self._number(entry.get("status"), f"{at}.status",
                                                     "ibSmServiceAssocRowStatus", (1, 2))
        return assoc

    def sl2vl(self) -> dict[tuple[int, int], tuple[int, ...]]:
        sl2vl: dict[tuple[int, int], tuple[int, ...]] = {}
        for at, entry in self._entries("sl2vl"):
            table = self._expect(entry.get("map"), list, f"{at}.map")
            if len(table) != 16:
                raise StateFormatError.at(f"{at}.map", "expected 16 VLs")
            sl2vl[(self._hexint(entry.get("guid"), f"{at}.guid", 64),
                   self._number(entry.get("port"), f"{at}.port",
                                "ibSmVLArbitrationPortNum"))] = tuple(
                self._number(v, f"{at}.map[{j}]", f"ibSmSwSLtoVLMapSL{j}toVL")
                for j, v in enumerate(table))
        return sl2vl

    def vl_arbitration(self) -> dict[tuple[int, int, int], int]:
        vl_arb: dict[tuple[int, int, int], int] = {}
        priorities = {v: k for k, v in _PRIORITY_NAMES.items()}
        for at, entry in self._entries("vl_arbitration"):
            priority = documents.lookup(entry.get("priority"), f"{at}.priority", priorities,
                                        StateFormatError.at)
            vl_arb[(self._hexint(entry.get("guid"), f"{at}.guid", 64),
                    self._number(entry.get("port"), f"{at}.port", "ibSmVLArbitrationPortNum"),
                    priority)] = self._number(
                # VLArbitrationTable weights are 8-bit.
                entry.get("weight"), f"{at}.weight", "ibSmVLArbitrationWeight", (0, 255))
        return vl_arb

    def partition_buffer(self) -> PartitionBuffer:
        at = "partition_config"
        raw = self._keys(self._doc.get(at, {}), _ENTRY_KEYS[at], at)
        member_port = raw.get("member_port")
        member_type = raw.get("member_type")
        return PartitionBuffer(
            prefix=self._octets(raw.get("subnet_prefix"), f"{at}.subnet_prefix",
                                "ibSmPartitionConfigSubnetPrefix"),
            key=self._octets(raw.get("key"), f"{at}.key", "ibSmPartitionConfigKey"),
            guid=self._octets(raw.get("member_guid"), f"{at}.member_guid",
                              "ibSmPartitionConfigMemberNodeGUID"),
            port=None if member_port is None else self._number(
                member_port, f"{at}.member_port", "ibSmPartitionConfigMemberPortNum"),
            member_type=None if member_type is None else self._number(
                member_type, f"{at}.member_type", "ibSmPartitionConfigMemberType"),
            last_action=self._number(raw.get("last_action", 1), f"{at}.last_action",
                                     "ibSmPartitionConfigAction"),
        )

    def system(self) -> dict[str, bytes]:
        return {name: self._text(value, f"system.{name}", name) for name, value in
                self._keys(self._doc.get("system", {}), _ENTRY_KEYS["system"], "system").items()}

    def snmp(self) -> dict[str, int]:
        # Absent from the files written before it was kept.
        return {name: self._number(value, f"snmp.{name}", name) for name, value in
                self._keys(self._doc.get("snmp", {}), _ENTRY_KEYS["snmp"], "snmp").items()}


def referenced_nodes(state: ConfigState) -> Iterable[int]:
    """Node GUIDs the state names (to warn about ones a fabric lacks)."""
    yield from (guid for guid, _ in state.sl2vl)
    yield from (guid for guid, _, _ in state.vl_arb)
    for edit in state.partitions.values():
        yield from (guid for guid, _ in edit.members)

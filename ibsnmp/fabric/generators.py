"""Simulated fabrics: `generate(spec, seed)` builds a complete `Fabric`.

The same spec and seed always give the same fabric (GUIDs, LIDs, faults,
traffic rates).  The subnet is described first as plain cabling
(`_Plan`), then turned into immutable model objects in one pass, so a
large fat-tree builds quickly.
"""

from __future__ import annotations

import random
from collections import deque
from dataclasses import dataclass, field
from types import MappingProxyType

from .detrand import mix, unit
from .devices import ALL_SPEEDS, GENERATIONS, DeviceModel, Generation
from .iba import (
    DEFAULT_PKEY,
    DEFAULT_SUBNET_PREFIX,
    MAX_UNICAST_LID,
    MULTICAST_LID_BASE,
    CapabilityMask,
    DiagCode,
    JoinState,
    LinkDownDefaultState,
    LinkSpeed,
    LinkSpeedExt,
    LinkWidth,
    MKeyProtect,
    Mtu,
    PhysicalInterface,
    PortPhysState,
    PortState,
    Rate,
    SmState,
    VLCap,
    fastest,
    make_gid,
    parse_gid,
)
from .model import (
    Fabric,
    Link,
    McMember,
    MulticastGroup,
    Node,
    Partition,
    PartitionMember,
    Port,
    PortInfo,
    PortRef,
    ServiceRecord,
    SmConfig,
    SmInfo,
    SwitchInfo,
    VlArbEntry,
)
from .routing import assign_lids
from .sim_connections import SimulatedConnections
from .spec import FabricSpec, FatTree3Spec, FatTreeSpec, SingleSpec, SpecError, parse_spec

__all__ = ["generate", "build_fabric"]


def build_fabric(spec: str | FabricSpec, seed: int = 0) -> Fabric:
    """Parse (if needed) and generate; the one call most callers want."""
    return generate(parse_spec(spec) if isinstance(spec, str) else spec, seed)


def generate(spec: FabricSpec, seed: int = 0) -> Fabric:
    if isinstance(spec, SingleSpec):
        plan = _plan_single(spec, seed)
    elif isinstance(spec, FatTreeSpec):
        plan = _plan_fat_tree(spec, seed)
    else:
        plan = _plan_fat_tree3(spec, seed)
    return _Builder(plan).build()


# -- the plan: nodes and cables before they become model objects ------------------


@dataclass(slots=True)
class _Cable:
    """A cable between two ports and how the link trained."""

    a: tuple[int, int]  # (node index, port)
    b: tuple[int, int]
    up: bool = True
    width: LinkWidth = LinkWidth.X4
    speed_ext: LinkSpeedExt = LinkSpeedExt.EDR
    speed: LinkSpeed = LinkSpeed.QDR
    fault: str = ""  # "" healthy; else a _FAULT_TEXT key (the ports report it)
    interface: PhysicalInterface = PhysicalInterface.CABLE

    def other(self, end: tuple[int, int]) -> tuple[int, int]:
        return self.b if end == self.a else self.a


@dataclass(slots=True)
class _Planned:
    guid: int
    model: DeviceModel
    description: str
    num_ports: int
    role: str  # "host", "leaf", "spine", "core"
    cables: dict[int, _Cable] = field(default_factory=dict)
    disabled: frozenset[int] = frozenset()


@dataclass(slots=True)
class _Plan:
    spec: FabricSpec
    seed: int
    generation: Generation
    nodes: list[_Planned]
    hosts: list[int]  # node indexes of hosts, in name order
    lmc: int


class _GuidPool:
    """Real-looking GUIDs: OUI, 0x03, then a random serial; blocks of four
    serials per device so port and system-image GUIDs never collide."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._used: set[tuple[int, int]] = set()

    def take(self, oui: int) -> int:
        while True:
            serial = self._rng.getrandbits(22) << 2
            if (oui, serial) not in self._used:
                self._used.add((oui, serial))
                return (oui << 40) | (0x03 << 32) | serial


def _name_width(count: int, minimum: int) -> int:
    return max(minimum, len(str(count)))


def _link_speed(generation: Generation, slower: bool = False) -> tuple[LinkSpeed, LinkSpeedExt]:
    ext = generation.speed
    if slower:
        ext = LinkSpeedExt(int(ext) >> 1)  # one generation down; FDR -> QDR
    return LinkSpeed.QDR, ext


def _plan_single(spec: SingleSpec, seed: int) -> _Plan:
    rng = random.Random(seed)
    generation = GENERATIONS[spec.speed]
    model = generation.hcas[-1]  # the dual-port adapter
    host = _Planned(_GuidPool(rng).take(rng.choice(model.ouis)), model, "host001 HCA-1", model.num_ports, "host")
    # Port 1 is cabled to equipment outside the simulated subnet; port 2 is empty.
    speed, ext = _link_speed(generation)
    host.cables[1] = _Cable((0, 1), (-1, 0), speed=speed, speed_ext=ext)
    return _Plan(spec, seed, generation, [host], [0], spec.lmc)


def _plan_fat_tree(spec: FatTreeSpec, seed: int) -> _Plan:
    rng = random.Random(seed)
    pool = _GuidPool(rng)
    generation = GENERATIONS[spec.speed]
    nodes: list[_Planned] = []
    width = _name_width(max(spec.spines, spec.leaves), 2)
    spine_oui = rng.choice(generation.spine.ouis)
    for s in range(spec.spines):
        ports = max(generation.spine.num_ports, spec.leaves)
        nodes.append(_Planned(pool.take(spine_oui), generation.spine, f"spine{s + 1:0{width}d}", ports, "spine"))
    for leaf in range(spec.leaves):
        ports = max(generation.leaf.num_ports, spec.leaf_ports_needed)
        nodes.append(_Planned(pool.take(spine_oui), generation.leaf, f"leaf{leaf + 1:0{width}d}", ports, "leaf"))

    host_width = _name_width(spec.host_count, 3)
    single, dual = generation.hcas[0], generation.hcas[-1]
    hosts: list[int] = []
    speed, ext = _link_speed(generation)
    for leaf in range(spec.leaves):
        leaf_index = spec.spines + leaf
        batch_oui = rng.choice(single.ouis)  # adapters come in batches per rack
        for h in range(spec.hosts):
            number = leaf * spec.hosts + h + 1
            model = dual if spec.ports == 2 or rng.random() < 0.3 else single
            oui = batch_oui if batch_oui in model.ouis else model.ouis[0]
            host = _Planned(pool.take(oui), model, f"host{number:0{host_width}d} HCA-1", model.num_ports, "host")
            index = len(nodes)
            nodes.append(host)
            hosts.append(index)
            for p in range(1, spec.ports + 1):
                leaf_port = h * spec.ports + p
                _cable(nodes, _Cable((index, p), (leaf_index, leaf_port), speed=speed, speed_ext=ext))
        for s in range(spec.spines):
            uplink = _Cable((leaf_index, spec.hosts * spec.ports + s + 1), (s, leaf + 1), speed=speed,
                            speed_ext=ext, interface=PhysicalInterface.FIBER)
            _cable(nodes, uplink)
    plan = _Plan(spec, seed, generation, nodes, hosts, spec.lmc)
    _inject_faults(plan, rng, spec)
    return plan


def _cable(nodes: list[_Planned], cable: _Cable) -> None:
    nodes[cable.a[0]].cables[cable.a[1]] = cable
    nodes[cable.b[0]].cables[cable.b[1]] = cable


def _inject_faults(plan: _Plan, rng: random.Random, spec: FatTreeSpec) -> None:
    """A few links degraded (1x, a slower speed, or bit errors) or down, so
    that tables are not all alike.  The two SM hosts stay healthy."""
    host_links = spec.host_count * spec.ports
    count = spec.faults if spec.faults is not None else min(40, max(1, host_links // 150))
    if count == 0 or host_links == 0:
        return
    nodes = plan.nodes
    if spec.spines >= 2 and spec.leaves >= 2 and count >= 2:
        leaf = spec.spines + rng.randrange(spec.leaves)
        uplink = nodes[leaf].cables[spec.hosts * spec.ports + 1 + rng.randrange(spec.spines)]
        uplink.up, uplink.fault = False, "uplink down"
        count -= 1
    _host_faults(plan, rng, count, spec.ports)
    # One spare leaf port administratively disabled, where spares exist.
    first_leaf = nodes[spec.spines]
    spare = spec.leaf_ports_needed + 1
    if spare <= first_leaf.num_ports:
        first_leaf.disabled = frozenset({spare})


def _host_faults(plan: _Plan, rng: random.Random, count: int, ports: int) -> None:
    """`count` host links (the two SM hosts' apart) made slower, narrower,
    erring, or (with two ports a host) down, in turn."""
    nodes = plan.nodes
    kinds = ["width", "speed", "errors"] + (["down"] if ports == 2 else [])
    candidates = [(i, p) for i in plan.hosts[2:] for p in range(1, ports + 1)]
    for n, (index, port) in enumerate(rng.sample(candidates, min(count, len(candidates)))):
        cable = nodes[index].cables[port]
        kind = kinds[n % len(kinds)]
        cable.fault = kind
        if kind == "down":
            cable.up = False
        elif kind == "width":
            cable.width = LinkWidth.X1
        elif kind == "speed":
            cable.speed, cable.speed_ext = _link_speed(plan.generation, slower=True)


def _plan_fat_tree3(spec: FatTree3Spec, seed: int) -> _Plan:
    """The folded Clos: cores, then per pod its spines and leaves, then the
    hosts leaf by leaf. Leaf port h (1..K/2) takes host h and port K/2+s
    spine s of its pod; spine port l takes leaf l and port K/2+c core c of
    its group (spine s of every pod reaches cores s*K/2 .. s*K/2+K/2-1);
    core port p takes pod p. Names number each kind across the fabric."""
    rng = random.Random(seed)
    pool = _GuidPool(rng)
    generation = GENERATIONS[spec.speed]
    half, radix = spec.half, spec.radix
    nodes: list[_Planned] = []
    switch_width = _name_width(max(spec.cores, spec.leaves), 2)
    switch_oui = rng.choice(generation.spine.ouis)
    ports = max(generation.spine.num_ports, radix)
    for c in range(spec.cores):
        nodes.append(_Planned(pool.take(switch_oui), generation.spine, f"core{c + 1:0{switch_width}d}",
                              ports, "core"))
    spine_at = len(nodes)
    for s in range(spec.spines):
        nodes.append(_Planned(pool.take(switch_oui), generation.spine,
                              f"spine{s + 1:0{switch_width}d}", ports, "spine"))
    leaf_at = len(nodes)
    for leaf in range(spec.leaves):
        nodes.append(_Planned(pool.take(switch_oui), generation.leaf, f"leaf{leaf + 1:0{switch_width}d}",
                              max(generation.leaf.num_ports, radix), "leaf"))
    speed, ext = _link_speed(generation)
    for pod in range(spec.pods):
        for s in range(half):
            spine = spine_at + pod * half + s
            for c in range(half):
                _cable(nodes, _Cable((spine, half + c + 1), (s * half + c, pod + 1), speed=speed,
                                     speed_ext=ext, interface=PhysicalInterface.FIBER))
            for leaf in range(half):
                _cable(nodes, _Cable((leaf_at + pod * half + leaf, half + s + 1), (spine, leaf + 1),
                                     speed=speed, speed_ext=ext, interface=PhysicalInterface.FIBER))
    host_width = _name_width(spec.host_count, 3)
    single, dual = generation.hcas[0], generation.hcas[-1]
    hosts: list[int] = []
    for leaf in range(spec.leaves):
        batch_oui = rng.choice(single.ouis)  # adapters come in batches per rack
        for h in range(half):
            model = dual if rng.random() < 0.3 else single
            oui = batch_oui if batch_oui in model.ouis else model.ouis[0]
            host = _Planned(pool.take(oui), model, f"host{leaf * half + h + 1:0{host_width}d} HCA-1",
                            model.num_ports, "host")
            index = len(nodes)
            nodes.append(host)
            hosts.append(index)
            _cable(nodes, _Cable((index, 1), (leaf_at + leaf, h + 1), speed=speed, speed_ext=ext))
    plan = _Plan(spec, seed, generation, nodes, hosts, spec.lmc)
    count = spec.faults if spec.faults is not None else min(40, max(1, spec.host_count // 150))
    if count >= 2 and spec.pods >= 1 and half >= 2:
        leaf = leaf_at + rng.randrange(spec.leaves)
        uplink = nodes[leaf].cables[half + 1 + rng.randrange(half)]
        uplink.up, uplink.fault = False, "uplink down"
        count -= 1
    _host_faults(plan, rng, count, 1)
    return plan


# -- turning the plan into model objects ---------------------------------------------


class _Builder:
    def __init__(self, plan: _Plan) -> None:
        self.plan = plan
        self.rng = random.Random(mix(plan.seed, 0x5EED))
        self.prefix = DEFAULT_SUBNET_PREFIX
        self.guids = [n.guid for n in plan.nodes]
        self.sm_host = plan.hosts[0]
        self.standby_host = plan.hosts[1] if len(plan.hosts) > 1 else None
        self.config = self._sm_config()
        self.index_of = {guid: i for i, guid in enumerate(self.guids)}
        # One host blinks its identify LED (LedInfo), as if being located.
        self.beacon = plan.hosts[int(unit(plan.seed, 0x1ED) * len(plan.hosts))] if plan.hosts else -1
        self.switch_info: dict[int, SwitchInfo] = {}  # keyed by id(): models hash slowly
        self.templates: dict[tuple[int, bool], _InfoTemplate] = {}
        # Filled in by build(), in order.
        self.lids: dict[tuple[int, int], int] = {}
        self.master_lid = self.top = self.mcast_top = 0
        self.pkeys_of: dict[tuple[int, int], tuple[int, ...]] = {}

    def build(self) -> Fabric:
        plan = self.plan
        order, local_ports = self._discover()
        self.lids = self._assign_lids()
        self.master_lid = self.lids.get((self.sm_host, 1), 0)
        self.top = max(lid + (1 << self.plan.lmc if plan.nodes[i].role == "host" else 1) - 1
                       for (i, _), lid in self.lids.items())
        partitions, self.pkeys_of = self._partitions()
        groups = self._multicast_groups(partitions)
        self.mcast_top = max((g.mlid for g in groups), default=MULTICAST_LID_BASE - 1)
        nodes = {self.guids[index]: self._node(index, local_ports[index]) for index in order}
        links = tuple(sorted(
            (Link.between(PortRef(self.guids[c.a[0]], c.a[1]), PortRef(self.guids[c.b[0]], c.b[1]))
             for c in self._cables() if c.up and c.b[0] >= 0),
            key=lambda link: (link.a, link.b),
        ))
        lid_map = {lid: PortRef(self.guids[i], p) for (i, p), lid in self.lids.items()}
        host_guids = [self.guids[i] for i in plan.hosts]
        return Fabric(
            subnet_prefix=self.prefix,
            nodes=MappingProxyType(nodes),
            links=links,
            lid_map=MappingProxyType(lid_map),
            sms=self._sms(len(nodes)),
            sm_config=self.config,
            partitions=partitions,
            multicast_groups=groups,
            services=self._services(partitions),
            connections=SimulatedConnections(plan.seed, nodes, host_guids),
            local_node_guid=self.guids[self.sm_host],
            seed=plan.seed,
            spec=plan.spec.text,
        )

    # -- topology ---------------------------------------------------------------

    def _cables(self) -> list[_Cable]:
        seen: dict[int, _Cable] = {}
        for planned in self.plan.nodes:
            for cable in planned.cables.values():
                seen.setdefault(id(cable), cable)
        return list(seen.values())

    def _discover(self) -> tuple[list[int], dict[int, int]]:
        """Breadth-first from the SM's port, as the SM and ibnetdiscover
        walk: node order and the port each node is first reached on."""
        nodes = self.plan.nodes
        local_ports = {self.sm_host: 1}
        order = [self.sm_host]
        queue = deque([self.sm_host])
        while queue:
            here = queue.popleft()
            for port in sorted(nodes[here].cables):
                cable = nodes[here].cables[port]
                there, there_port = cable.other((here, port))
                if cable.up and there >= 0 and there not in local_ports:
                    local_ports[there] = there_port
                    order.append(there)
                    queue.append(there)
        for index, planned in enumerate(nodes):  # unreachable: keep, port 1
            if index not in local_ports:
                local_ports[index] = 1 if planned.role == "host" else 0
                order.append(index)
        return order, local_ports

    def _assign_lids(self) -> dict[tuple[int, int], int]:
        """OpenSM style: the SM's own port first, then ports in GUID order;
        CA ports get 2**LMC LIDs, switches one LID for port 0."""
        nodes, lmc = self.plan.nodes, self.plan.lmc
        endports: list[tuple[int, tuple[int, int], int]] = []
        for index, planned in enumerate(nodes):
            if planned.role != "host":
                endports.append((planned.guid, (index, 0), 0))
                continue
            for port, cable in planned.cables.items():
                if cable.up:
                    endports.append((self._port_guid(index, port), (index, port), lmc))
        endports.sort(key=lambda e: (e[1] != (self.sm_host, 1), e[0]))
        try:
            return assign_lids(((key, n) for _, key, n in endports), last_lid=MAX_UNICAST_LID)
        except ValueError as exc:
            raise SpecError(f"{self.plan.spec.text}: {exc}") from None

    def _port_guid(self, index: int, port: int) -> int:
        planned = self.plan.nodes[index]
        if planned.role != "host":
            return planned.guid
        return planned.guid + planned.model.port_guid_offset + port - 1

    # -- subnet manager ---------------------------------------------------------------

    def _sm_config(self) -> SmConfig:
        return SmConfig.opensm_defaults(
            self.plan.lmc, m_key=self.rng.getrandbits(64), m_key_lease_period_s=60,
            m_key_protect_bits=MKeyProtect.LEVEL1,
        )

    def _sms(self, node_count: int) -> tuple[SmInfo, ...]:
        sm_key = self.rng.getrandbits(64)
        # SMPs: a heavy sweep touches every node a few times, then a light
        # sweep per interval checks each switch.
        master = SmInfo(
            guid=self._port_guid(self.sm_host, 1),
            sm_key=sm_key,
            act_count=node_count * 12 + 7,
            priority=14,
            state=SmState.MASTER,
            node_guid=self.guids[self.sm_host],
            port_num=1,
            act_rate=max(1.0, node_count / self.config.sweep_interval_s),
        )
        sms = [master]
        if self.standby_host is not None:
            sms.append(SmInfo(
                guid=self._port_guid(self.standby_host, 1),
                sm_key=sm_key,
                act_count=node_count * 12 + 3,
                priority=13,
                state=SmState.STANDBY,
                node_guid=self.guids[self.standby_host],
                port_num=1,
                act_rate=1.0 / self.config.master_poll_interval_s,
            ))
        return tuple(sms)

    # -- partitions, multicast, services ------------------------------------------------------

    def _partitions(self) -> tuple[tuple[Partition, ...], dict[tuple[int, int], tuple[int, ...]]]:
        """Default (everyone full), compute (first half of the hosts) and
        storage (servers full, clients limited)."""
        hosts = self.plan.hosts
        ca_ports = [(i, p) for i in hosts for p in sorted(self.plan.nodes[i].cables) if (i, p) in self.lids]
        servers = set(hosts[-max(1, len(hosts) // 16):])
        compute = set(hosts[: len(hosts) // 2]) if len(hosts) >= 4 else set()

        def members(rows: list[tuple[int, int, bool]]) -> tuple[PartitionMember, ...]:
            return tuple(sorted(PartitionMember(self.guids[i], p, full) for i, p, full in rows))

        switches = [(i, 0, True) for i, n in enumerate(self.plan.nodes) if n.role != "host"]
        default = Partition(DEFAULT_PKEY, "Default", members([(i, p, True) for i, p in ca_ports] + switches), True)
        partitions = [default]
        if compute:
            rows = [(i, p, True) for i, p in ca_ports if i in compute]
            partitions.append(Partition(0x0001, "compute", members(rows), True))
        rows = [(i, p, i in servers) for i, p in ca_ports]
        partitions.append(Partition(0x0002, "storage", members(rows), True))

        # Each CA port's P_Key table: default first, then its partitions.
        interned: dict[tuple[int, ...], tuple[int, ...]] = {}
        pkeys_of: dict[tuple[int, int], tuple[int, ...]] = {}
        for i, p in ca_ports:
            keys = [0xFFFF]
            if i in compute:
                keys.append(0x8001)
            keys.append(0x8002 if i in servers else 0x0002)
            table = tuple(keys)
            pkeys_of[(i, p)] = interned.setdefault(table, table)
        return tuple(partitions), pkeys_of

    def _multicast_groups(self, partitions: tuple[Partition, ...]) -> tuple[MulticastGroup, ...]:
        """The groups IPoIB joins: broadcast, all-hosts and all-nodes in the
        default partition, and broadcast in the other IPoIB partitions."""
        mlid = MULTICAST_LID_BASE
        groups = []
        cas = {ref.guid for ref in partitions[0].members if ref.port != 0}

        def group(mgid: str, pkey: int, members: tuple[McMember, ...], name: str) -> None:
            nonlocal mlid
            groups.append(MulticastGroup(
                mgid=parse_gid(mgid), mlid=mlid, q_key=0x0B1B, mtu=Mtu.MTU_2048, rate=Rate.GBPS_10, sl=0,
                pkey=pkey, members=members, packet_life_time=self.config.packet_life_time, name=name,
            ))
            mlid += 1

        for partition in partitions:
            if not partition.ipoib:
                continue
            joined = tuple(McMember(m.guid, m.port, JoinState.FULL_MEMBER)
                           for m in partition.members if m.guid in cas)
            key = partition.full_pkey
            group(f"ff12:401b:{key:04x}::ffff:ffff", key, joined, f"IPoIB broadcast {partition.name}")
            if partition.pkey == DEFAULT_PKEY:
                group(f"ff12:401b:{key:04x}::1", key, joined, "IPv4 all-hosts")
                group(f"ff12:601b:{key:04x}::1", key, joined, "IPv6 all-nodes")
        return tuple(groups)

    def _services(self, partitions: tuple[Partition, ...]) -> tuple[ServiceRecord, ...]:
        """Services the storage servers registered with the SA (rdma_cm
        service IDs: port space 0x0106 for TCP, then the port number)."""
        storage = partitions[-1]
        servers = [m for m in storage.members if m.full] or list(storage.members[:1])
        offers = [("NFS/RDMA", 20049, 0xFFFFFFFF), ("iSER", 3260, 0xFFFFFFFF), ("Lustre LNet o2ib", 987, 3600)]
        records = []
        for n, (name, tcp_port, lease) in enumerate(offers):
            member = servers[n % len(servers)] if servers else None
            if member is None:
                break
            guid = self._port_guid(self.index_of[member.guid], member.port)
            records.append(ServiceRecord(
                service_id=0x0000_0000_0106_0000 | tcp_port,
                gid=make_gid(self.prefix, guid),
                pkey=storage.full_pkey,
                lease=lease,
                key=self.rng.getrandbits(128).to_bytes(16, "big"),
                name=name,
                data=tcp_port.to_bytes(2, "big") + bytes(62),
            ))
        return tuple(records)

    # -- nodes and ports -----------------------------------------------------------------------

    def _node(self, index: int, local_port: int) -> Node:
        planned = self.plan.nodes[index]
        model = planned.model
        is_switch = planned.role != "host"
        first = 0 if is_switch else 1
        template = self._template(model, is_switch)
        ports = tuple(self._port(index, num, template) for num in range(first, planned.num_ports + 1))
        return Node(
            guid=planned.guid,
            node_type=model.node_type,
            description=planned.description,
            system_image_guid=planned.guid + model.system_image_offset,
            base_version=1,
            class_version=1,
            vendor_id=model.vendor_id,
            device_id=model.device_id,
            revision=model.revision,
            num_ports=planned.num_ports,
            partition_cap=model.partition_cap,
            local_port_num=local_port,
            ports=ports,
            switch=self._switch_info(model) if is_switch else None,
            ca=model.ca,
            model_name=model.name,
        )

    def _switch_info(self, model: DeviceModel) -> SwitchInfo:
        info = self.switch_info.get(id(model))
        if info is None:
            info = self.switch_info[id(model)] = SwitchInfo(
                linear_fdb_cap=model.linear_fdb_cap,
                random_fdb_cap=model.random_fdb_cap,
                multicast_fdb_cap=model.multicast_fdb_cap,
                linear_fdb_top=self.top,
                default_port=0,
                default_multicast_primary_port=0xFF,
                default_multicast_not_primary_port=0xFF,
                life_time_value=self.config.packet_life_time,
                port_state_change=False,
                optimized_sl_to_vl_mapping_programming=False,
                lids_per_port=0,
                partition_enforcement_cap=model.partition_enforcement_cap,
                inbound_enforcement_cap=True,
                outbound_enforcement_cap=True,
                filter_raw_inbound_cap=True,
                filter_raw_outbound_cap=True,
                enhanced_port0=True,
                multicast_fdb_top=self.mcast_top,
            )
        return info

    def _port(self, index: int, num: int, template: _InfoTemplate) -> Port:
        planned = self.plan.nodes[index]
        model = planned.model
        is_switch = planned.role != "host"
        cable = planned.cables.get(num)
        up = num == 0 or (cable is not None and cable.up)
        there = cable.other((index, num)) if cable is not None and cable.up else (-1, 0)
        faces_host = is_switch and there[0] >= 0 and self.plan.nodes[there[0]].role == "host"
        if is_switch:
            guid, lid = planned.guid, self.lids[(index, 0)]
        else:
            guid, lid = self._port_guid(index, num), self.lids.get((index, num), 0)
        if num == 0:  # the management port reports the switch's best
            width, (speed, ext) = LinkWidth(fastest(model.width_supported)), _link_speed(self.plan.generation)
        elif cable is None or not cable.up:
            width, speed, ext = LinkWidth.X4, LinkSpeed.SDR, _NO_EXT_SPEED
        else:
            width, speed, ext = cable.width, cable.speed, cable.speed_ext
        if up:
            phys = PortPhysState.LINK_UP
        else:
            phys = PortPhysState.DISABLED if num in planned.disabled else PortPhysState.POLLING
        fault = cable.fault if cable is not None else ""
        caps = model.capability_mask
        if (index, num) in ((self.sm_host, 1), (self.standby_host, 1)):
            caps |= CapabilityMask.IS_SM
        # A few CA ports saw packets with bad keys (PortInfo violation counters).
        violations = 0
        if not is_switch and up and self.rng.random() < 0.02:
            violations = self.rng.randint(1, 200)
        config = self.config
        hoq = 31  # CA ports: IBA leaves HOQLife to switches
        if is_switch:
            hoq = config.leaf_head_of_queue_lifetime if faces_host else config.head_of_queue_lifetime
        info = template.make(
            lid=lid,
            master_sm_lid=self.master_lid if lid else 0,
            capability_mask=int(caps),
            diag_code=(_FAULT_DIAG[fault] << 4 | DiagCode.SOFT_ERROR) if fault in _FAULT_DIAG else 0,
            local_port_num=num,
            width=width,
            speed=speed,
            speed_ext=ext,
            up=up,
            phys=phys,
            lmc=self.plan.lmc if lid and not is_switch else 0,
            hoq_life=hoq,
            enforce=faces_host,
            violations=violations,
            subnet_timeout=config.subnet_timeout if lid else 0,
        )
        if not is_switch:
            pkeys = self.pkeys_of.get((index, num), _DEFAULT_PKEYS)
        elif num == 0:
            pkeys = _DEFAULT_PKEYS
        else:
            pkeys = self.pkeys_of.get(there, ()) if faces_host else ()
        return Port(
            node_guid=planned.guid,
            num=num,
            guid=guid,
            info=info,
            pkeys=pkeys,
            sl2vl=_sl2vl(_generated(info.operational_vls).data_vls),
            vl_arb_high=_vl_arb(model.vl_arb_high_cap, high=True),
            vl_arb_low=_vl_arb(model.vl_arb_low_cap, high=False),
            guids=(guid,) if (not is_switch or num == 0) else (),
            remote=PortRef(self.guids[there[0]], there[1]) if there[0] >= 0 else None,
            physical_interface=cable.interface if cable is not None else (
                PhysicalInterface.BACKPLANE if num == 0 else PhysicalInterface.CABLE),
            led_on=index == self.beacon,
            degraded=bool(fault),
            vendor_diag=_FAULT_TEXT.get(fault, b""),
        )

    def _template(self, model: DeviceModel, is_switch: bool) -> _InfoTemplate:
        key = (id(model), is_switch)
        template = self.templates.get(key)
        if template is None:
            template = self.templates[key] = _InfoTemplate(model, is_switch, self.config, self.prefix)
        return template


class _InfoTemplate:
    """PortInfo values shared by every port of one device model; `make`
    fills in the per-port ones.  Building from a list is several times
    cheaper than 47 keyword arguments, which matters at 25,000 ports."""

    _INDEX = {name: i for i, name in enumerate(PortInfo._fields)}

    def __init__(self, model: DeviceModel, is_switch: bool, config: SmConfig, prefix: int) -> None:
        values = dict(
            m_key=config.m_key,
            gid_prefix=prefix,
            m_key_lease_period=config.m_key_lease_period_s,
            link_width_enabled=model.width_supported,
            link_width_supported=model.width_supported,
            link_speed_supported=ALL_SPEEDS,
            link_down_default_state=LinkDownDefaultState.POLLING,
            m_key_protect_bits=config.m_key_protect_bits,
            link_speed_enabled=ALL_SPEEDS,
            neighbor_mtu=model.mtu_cap,  # every simulated device does 4096
            master_sm_sl=0,
            vl_cap=model.vl_cap,
            init_type=0,
            vl_high_limit=0,
            vl_arb_high_cap=model.vl_arb_high_cap,
            vl_arb_low_cap=model.vl_arb_low_cap,
            init_type_reply=0,
            mtu_cap=model.mtu_cap,
            vl_stall_count=config.vl_stall_count if is_switch else 0,
            m_key_violations=0,
            guid_cap=model.guid_cap,
            client_reregister=False,
            resp_time_value=model.resp_time_value,
            local_phy_errors_threshold=config.local_phy_errors_threshold,
            overrun_errors_threshold=config.overrun_errors_threshold,
            link_speed_ext_supported=model.speed_ext_supported,
            link_speed_ext_enabled=model.speed_ext_supported,
        )
        self.values: list[object] = [values.get(name) for name in PortInfo._fields]
        self.vl_cap = model.vl_cap

    def make(self, *, lid: int, master_sm_lid: int, capability_mask: int, diag_code: int, local_port_num: int,
             width: LinkWidth, speed: LinkSpeed, speed_ext: LinkSpeedExt, up: bool, phys: PortPhysState,
             lmc: int, hoq_life: int, enforce: bool, violations: int, subnet_timeout: int) -> PortInfo:
        v, i = self.values.copy(), self._INDEX
        v[i["lid"]] = lid
        v[i["master_sm_lid"]] = master_sm_lid
        v[i["capability_mask"]] = capability_mask
        v[i["diag_code"]] = diag_code
        v[i["local_port_num"]] = local_port_num
        v[i["link_width_active"]] = width
        v[i["link_speed_active"]] = speed
        v[i["link_speed_ext_active"]] = speed_ext
        v[i["port_state"]] = PortState.ACTIVE if up else PortState.DOWN
        v[i["phys_state"]] = phys
        v[i["lmc"]] = lmc
        v[i["hoq_life"]] = hoq_life
        v[i["operational_vls"]] = self.vl_cap if up else VLCap.VL0
        for name in ("partition_enforcement_inbound", "partition_enforcement_outbound",
                     "filter_raw_inbound", "filter_raw_outbound"):
            v[i[name]] = enforce
        v[i["p_key_violations"]] = violations
        v[i["q_key_violations"]] = violations // 3
        v[i["subnet_timeout"]] = subnet_timeout
        return PortInfo._make(v)


_DEFAULT_PKEYS = (0xFFFF,)
_NO_EXT_SPEED = LinkSpeedExt(0)
# Vendor part of DiagCode and the VendorDiag text a troubled link reports.
_FAULT_DIAG = {"width": 0x21, "speed": 0x22, "errors": 0x23}
_FAULT_TEXT = {
    "width": b"link trained at 1x of 4x lanes",
    "speed": b"link trained below the supported speed",
    "errors": b"symbol errors above threshold on lane 2",
    "down": b"no signal: cable removed",
    "uplink down": b"no signal: cable removed",
}
_SL2VL: dict[int, tuple[int, ...]] = {}
_VL_ARB: dict[tuple[int, bool], tuple[VlArbEntry, ...]] = {}


def _generated(vls: VLCap | None) -> VLCap:
    """The operational VLs of a port made here: PortTemplate.make always sets them."""
    assert vls is not None
    return vls


def _sl2vl(data_vls: int) -> tuple[int, ...]:
    """OpenSM without QoS: SL n uses VL n modulo the operational data VLs."""
    table = _SL2VL.get(data_vls)
    if table is None:
        table = _SL2VL.setdefault(data_vls, tuple(sl % data_vls for sl in range(16)))
    return table


def _vl_arb(capacity: int, high: bool) -> tuple[VlArbEntry, ...]:
    """OpenSM's default arbitration: VL0 weight 4 in the high table, the
    other VLs weight 4 in the low table."""
    table = _VL_ARB.get((capacity, high))
    if table is None:
        entries = tuple(VlArbEntry(vl, 4 if (vl == 0) == high else 0) for vl in range(capacity))
        table = _VL_ARB.setdefault((capacity, high), entries)
    return table

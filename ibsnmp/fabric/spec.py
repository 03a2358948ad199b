"""Parse simulated-fabric specifications.

    single                                  one host, one 2-port HCA, no switch
    fat-tree:spines=S,leaves=L,hosts=H      two-level fat-tree, H hosts per leaf
    fat-tree3:radix=K[,pods=P]              three-level fat-tree of K-port switches

Options: speed=fdr|edr|hdr|ndr (default edr), lmc=0..7; fat-tree: ports=1|2; both fat-trees:
faults=N. A spec whose nodes need more than one subnet's 49,151 unicast LIDs is refused
(fat-tree3:radix=64 with every pod). Reference: docs/providers.md, 'The simulated fabric'.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import overload

from .iba import MAX_PHYS_PORTS, MAX_UNICAST_LID

SPEEDS = ("fdr", "edr", "hdr", "ndr")
_COMMON_KEYS = ("speed", "lmc")
_FAT_TREE_KEYS = ("spines", "leaves", "hosts", "ports", "faults") + _COMMON_KEYS
_FAT_TREE3_KEYS = ("radix", "pods", "faults") + _COMMON_KEYS


class SpecError(ValueError):
    """A fabric specification that cannot be built; the message names the bad part."""


@dataclass(frozen=True, slots=True)
class SingleSpec:
    speed: str = "edr"
    lmc: int = 0

    @property
    def text(self) -> str:
        return "single" + _options(self.speed, self.lmc)


@dataclass(frozen=True, slots=True)
class FatTreeSpec:
    # ports: HCA ports cabled per host; faults: degraded or down links to
    # inject (None: a number that grows with the fabric; 0: pristine).
    spines: int
    leaves: int
    hosts: int
    ports: int = 1
    speed: str = "edr"
    lmc: int = 0
    faults: int | None = None

    @property
    def text(self) -> str:
        text = f"fat-tree:spines={self.spines},leaves={self.leaves},hosts={self.hosts}"
        if self.ports != 1:
            text += f",ports={self.ports}"
        if self.faults is not None:
            text += f",faults={self.faults}"
        return text + _options(self.speed, self.lmc, sep=",")

    @property
    def host_count(self) -> int:
        return self.leaves * self.hosts

    @property
    def leaf_ports_needed(self) -> int:
        return self.hosts * self.ports + self.spines


@dataclass(frozen=True, slots=True)
class FatTree3Spec:
    """A three-level fat-tree (folded Clos) of `radix`-port switches, its
    first `pods` pods built; names and GUIDs follow the two-level tree's.
    Each pod has K/2 leaves with K/2 hosts apiece and K/2 spines, every
    spine cabled to K/2 of the (K/2)^2 core switches.  radix=64 with every
    pod is 65,536 hosts and 5,120 switches, more LIDs than a subnet has;
    pods=44 is the largest that fits."""

    radix: int
    pods: int
    speed: str = "edr"
    lmc: int = 0
    faults: int | None = None

    @property
    def text(self) -> str:
        text = f"fat-tree3:radix={self.radix}"
        if self.pods != self.radix:
            text += f",pods={self.pods}"
        if self.faults is not None:
            text += f",faults={self.faults}"
        return text + _options(self.speed, self.lmc, sep=",")

    @property
    def half(self) -> int:
        return self.radix // 2

    @property
    def cores(self) -> int:
        return self.half * self.half

    @property
    def leaves(self) -> int:
        return self.pods * self.half

    @property
    def spines(self) -> int:
        return self.pods * self.half

    @property
    def host_count(self) -> int:
        return self.leaves * self.half

    @property
    def switch_count(self) -> int:
        return self.cores + self.leaves + self.spines


FabricSpec = SingleSpec | FatTreeSpec | FatTree3Spec


def _options(speed: str, lmc: int, sep: str = ":") -> str:
    parts = [f"speed={speed}"] if speed != "edr" else []
    if lmc:
        parts.append(f"lmc={lmc}")
    return (sep + ",".join(parts)) if parts else ""


def parse_spec(text: str) -> FabricSpec:
    """Parse a specification; raise SpecError naming the offending part."""
    if not isinstance(text, str) or not text.strip():
        raise SpecError("empty fabric spec: expected 'single', 'fat-tree:spines=S,leaves=L,hosts=H' "
                        "or 'fat-tree3:radix=K'")
    kind, _, rest = text.strip().partition(":")
    kind = kind.strip().lower()
    if kind == "single":
        values = _parse_pairs(kind, rest, _COMMON_KEYS)
        spec: FabricSpec = SingleSpec(
            speed=_speed(kind, values), lmc=_int(kind, values, "lmc", 0, 7, default=0)
        )
        return spec
    if kind in ("fat-tree", "fattree"):
        values = _parse_pairs("fat-tree", rest, _FAT_TREE_KEYS)
        for key in ("spines", "leaves", "hosts"):
            if key not in values:
                raise SpecError(f"fat-tree spec: missing '{key}=N' (spec {text!r})")
        tree = FatTreeSpec(
            spines=_int("fat-tree", values, "spines", 1, MAX_PHYS_PORTS),
            leaves=_int("fat-tree", values, "leaves", 1, MAX_PHYS_PORTS),
            hosts=_int("fat-tree", values, "hosts", 1, MAX_UNICAST_LID),
            ports=_int("fat-tree", values, "ports", 1, 2, default=1),
            speed=_speed("fat-tree", values),
            lmc=_int("fat-tree", values, "lmc", 0, 7, default=0),
            faults=_int("fat-tree", values, "faults", 0, 1_000_000, default=None),
        )
        _check_fat_tree(tree)
        return tree
    if kind in ("fat-tree3", "fattree3"):
        values = _parse_pairs("fat-tree3", rest, _FAT_TREE3_KEYS)
        if "radix" not in values:
            raise SpecError(f"fat-tree3 spec: missing 'radix=K' (spec {text!r})")
        radix = _int("fat-tree3", values, "radix", 4, MAX_PHYS_PORTS)
        if radix % 2:
            raise SpecError(f"fat-tree3 spec: 'radix={radix}' must be even (half down, half up)")
        tree3 = FatTree3Spec(
            radix=radix,
            pods=_int("fat-tree3", values, "pods", 1, radix, default=radix),
            speed=_speed("fat-tree3", values),
            lmc=_int("fat-tree3", values, "lmc", 0, 7, default=0),
            faults=_int("fat-tree3", values, "faults", 0, 1_000_000, default=None),
        )
        lids = tree3.host_count * (1 << tree3.lmc) + tree3.switch_count
        if lids > MAX_UNICAST_LID:
            raise SpecError(
                f"fat-tree3 spec: {tree3.host_count + tree3.switch_count:,} nodes need {lids:,} "
                f"unicast LIDs (lmc={tree3.lmc}) but one subnet has {MAX_UNICAST_LID:,}; build "
                f"fewer pods (pods={_most_pods(tree3)} fits)")
        return tree3
    raise SpecError(f"unknown fabric kind {kind!r} in {text!r}: expected 'single', 'fat-tree' "
                    "or 'fat-tree3'")


def _most_pods(tree: FatTree3Spec) -> int:
    """The most pods of `tree`'s radix whose LIDs fit one subnet."""
    per_pod = tree.half * tree.half * (1 << tree.lmc) + tree.radix
    return max(0, (MAX_UNICAST_LID - tree.cores) // per_pod)


def _parse_pairs(kind: str, rest: str, allowed: tuple[str, ...]) -> dict[str, str]:
    values: dict[str, str] = {}
    if not rest.strip():
        return values
    for part in rest.split(","):
        part = part.strip()
        key, eq, value = part.partition("=")
        key, value = key.strip().lower(), value.strip()
        if not eq or not key or not value:
            raise SpecError(f"{kind} spec: {part!r} is not key=value")
        if key not in allowed:
            raise SpecError(f"{kind} spec: unknown key {key!r} (expected one of {', '.join(allowed)})")
        if key in values:
            raise SpecError(f"{kind} spec: {key!r} given twice")
        values[key] = value
    return values


@overload
def _int(kind: str, values: dict[str, str], key: str, low: int, high: int,
         default: int = 0) -> int: ...
@overload
def _int(kind: str, values: dict[str, str], key: str, low: int, high: int,
         default: None) -> int | None: ...
def _int(kind: str, values: dict[str, str], key: str, low: int, high: int,
         default: int | None = 0) -> int | None:
    if key not in values:
        return default
    raw = values[key]
    try:
        number = int(raw, 10)
    except ValueError:
        raise SpecError(f"{kind} spec: '{key}={raw}' is not a whole number") from None
    if not low <= number <= high:
        raise SpecError(f"{kind} spec: '{key}={raw}' is out of range {low}..{high}")
    return number


def _speed(kind: str, values: dict[str, str]) -> str:
    speed = values.get("speed", "edr").lower()
    if speed not in SPEEDS:
        raise SpecError(f"{kind} spec: 'speed={values['speed']}' is not one of {', '.join(SPEEDS)}")
    return speed


def _check_fat_tree(tree: FatTreeSpec) -> None:
    needed = tree.leaf_ports_needed
    if needed > MAX_PHYS_PORTS:
        raise SpecError(
            f"fat-tree spec: each leaf needs {needed} ports (hosts={tree.hosts} x ports={tree.ports}"
            f" + spines={tree.spines}) but an InfiniBand switch has at most {MAX_PHYS_PORTS};"
            " use more leaves with fewer hosts each"
        )
    lids = tree.host_count * tree.ports * (1 << tree.lmc) + tree.spines + tree.leaves
    if lids > MAX_UNICAST_LID:
        raise SpecError(
            f"fat-tree spec: {lids} unicast LIDs needed (lmc={tree.lmc}) but only {MAX_UNICAST_LID} exist;"
            " lower lmc or the host count"
        )

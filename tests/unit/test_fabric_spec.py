"""Fabric specifications: what parses, and clear errors for what does not."""

from __future__ import annotations

import pytest

from ibsnmp.fabric import FatTreeSpec, SingleSpec, SpecError, parse_spec
from ibsnmp.fabric.spec import FatTree3Spec


def test_single() -> None:
    assert parse_spec("single") == SingleSpec()
    assert parse_spec(" SINGLE:speed=hdr,lmc=1 ") == SingleSpec(speed="hdr", lmc=1)


def test_fat_tree_with_defaults_and_options() -> None:
    spec = parse_spec("fat-tree:spines=2,leaves=4,hosts=8")
    assert spec == FatTreeSpec(spines=2, leaves=4, hosts=8)
    assert spec.host_count == 32
    full = parse_spec("fat-tree:spines=2,leaves=4,hosts=8,ports=2,lmc=2,speed=ndr,faults=0")
    assert full == FatTreeSpec(2, 4, 8, ports=2, speed="ndr", lmc=2, faults=0)
    assert parse_spec(full.text) == full  # the canonical text parses back


def test_spec_is_a_value_error() -> None:
    assert issubclass(SpecError, ValueError)


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("", "empty"),
        ("mesh:nodes=4", "'mesh'"),
        ("fat-tree:spines=2,leaves=4", "'hosts=N'"),
        ("fat-tree:spines=2,leaves=4,hosts=abc", "'hosts=abc'"),
        ("fat-tree:spines=0,leaves=4,hosts=2", "'spines=0'"),
        ("fat-tree:spines=2,leaves=4,hosts=2,spine=3", "'spine'"),
        ("fat-tree:spines=2,leaves=4,hosts=2,hosts=3", "'hosts' given twice"),
        ("fat-tree:spines=2,leaves=4,hosts=2,lmc=8", "'lmc=8'"),
        ("fat-tree:spines=2,leaves=4,hosts=2,ports=3", "'ports=3'"),
        ("fat-tree:spines=2,leaves=4,hosts=2,speed=xdr", "'speed=xdr'"),
        ("fat-tree:spines=2,leaves=4,hosts", "'hosts' is not key=value"),
        ("single:hosts=2", "'hosts'"),
        ("fat-tree3:pods=2", "'radix=K'"),
        ("fat-tree3:radix=7", "'radix=7' must be even"),
        ("fat-tree3:radix=8,pods=9", "'pods=9'"),
        ("fat-tree3:radix=8,hosts=2", "'hosts'"),
    ],
)
def test_bad_specs_name_the_bad_part(text: str, names: str) -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(text)
    assert names in str(caught.value)


def test_leaf_port_limit_is_explained() -> None:
    # 275 hosts + 18 uplinks would need a 293-port leaf; IBA stops at 254.
    with pytest.raises(SpecError, match=r"293 ports .* at most 254"):
        parse_spec("fat-tree:spines=18,leaves=36,hosts=275")


def test_lid_space_limit_is_explained() -> None:
    with pytest.raises(SpecError, match="lmc=7"):
        parse_spec("fat-tree:spines=4,leaves=100,hosts=100,lmc=7")


def test_three_level_fat_tree() -> None:
    spec = parse_spec("fat-tree3:radix=64,pods=44")
    assert spec == FatTree3Spec(radix=64, pods=44)
    # 44 pods of 32 leaves with 32 hosts each and 32 spines; 32 x 32 cores.
    assert (spec.host_count, spec.leaves, spec.spines, spec.cores) == (45_056, 1_408, 1_408, 1_024)
    full = parse_spec("fat-tree3:radix=8,pods=3,faults=2,lmc=1,speed=hdr")
    assert full == FatTree3Spec(8, 3, speed="hdr", lmc=1, faults=2)
    assert parse_spec(full.text) == full
    assert parse_spec("fat-tree3:radix=8").text == "fat-tree3:radix=8"


def test_a_three_level_tree_over_one_subnets_lids_is_explained() -> None:
    # radix 64, every pod: 65,536 hosts and 5,120 switches; LIDs end at 49,151.
    with pytest.raises(SpecError, match=r"70,656 nodes need 70,656 unicast LIDs .*\(pods=44 fits\)"):
        parse_spec("fat-tree3:radix=64")

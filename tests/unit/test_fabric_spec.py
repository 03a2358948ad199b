"""Fabric specifications: what parses, and clear errors for what does not."""

from __future__ import annotations

import pytest

from ibsnmp.fabric import FatTreeSpec, SingleSpec, SpecError, parse_spec


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

"""The SA client against OpenSM on an ibsim fabric, compared with `saquery`.

ibsim carries no RMPP (its preload forwards the first 256 octets of a MAD),
so these queries are those whose answer fits one MAD; reassembly of longer
answers is tested with built segments in test_sa_mads.py.
"""

from __future__ import annotations

import ipaddress
import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.ibsim import NET_DIR, Fabric, ibsim_fabric, opensm_running
from tests.support.infiniband_diags import run_diag, saquery_records, smpquery_node_info
from tests.support.paths import SUPPORT_DIR

PROBE = SUPPORT_DIR / "sa_probe.py"
MAD_PROBE = SUPPORT_DIR / "mad_probe.py"
PORT_ACTIVE = 4
SUBNET_UP_TIMEOUT = 60.0
OPENSM_SM_KEY = "1"  # OpenSM's default sm_key: P_KeyTableRecords are for trusted requesters


def probe(fabric: Fabric, *args: str | int, host: str | None = None) -> object:
    done = fabric.run([sys.executable, str(PROBE), *map(str, args)], host=host)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def wait_for_subnet(fabric: Fabric) -> None:
    # The subnet is up once the farthest HCA's port is active.
    deadline = time.monotonic() + SUBNET_UP_TIMEOUT
    while True:
        done = fabric.run([sys.executable, str(MAD_PROBE), "PORT_INFO", "0,1,8,1", "1"])
        if done.returncode == 0 and json.loads(done.stdout)["attribute"]["PortState"] == PORT_ACTIVE:
            return
        if time.monotonic() > deadline:
            pytest.fail(f"OpenSM did not bring the subnet up in {SUBNET_UP_TIMEOUT} s")
        time.sleep(0.5)


@pytest.fixture(scope="module")
def fabric_with_sa(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fabric]:
    with ibsim_fabric(NET_DIR / "ring.net", tmp_path_factory.mktemp("ibsim-sa"),
                      console=True) as fabric:
        with opensm_running(fabric):
            wait_for_subnet(fabric)
            yield fabric


def gid_text(gid_hex: str) -> str:
    """A GID as saquery prints it (inet_ntop's IPv6 text)."""
    return str(ipaddress.IPv6Address(bytes.fromhex(gid_hex)))


@pytest.mark.parametrize("dlid", [2, 3, 4, 5, 6, 7])
def test_path_record_matches_saquery(fabric_with_sa: Fabric, dlid: int) -> None:
    ours = probe(fabric_with_sa, "path", 1, dlid)
    assert isinstance(ours, dict) and ours["complete"]
    (record,) = ours["records"]
    (theirs,) = saquery_records(run_diag(fabric_with_sa, "saquery", "--src-to-dst", f"1:{dlid}"))
    assert (record["SLID"], record["DLID"]) == (int(theirs["slid"]), int(theirs["dlid"]))
    assert gid_text(record["SGID"]) == theirs["sgid"] and gid_text(record["DGID"]) == theirs["dgid"]
    assert record["PKey"] == int(theirs["pkey"], 16)
    assert record["MTUSelector"] << 6 | record["MTU"] == int(theirs["mtu"], 16)
    assert record["RateSelector"] << 6 | record["Rate"] == int(theirs["rate"], 16)
    assert (record["PacketLifeTimeSelector"] << 6 | record["PacketLifeTime"]
            == int(theirs["pkt_life"], 16))
    assert record["Reversible"] << 7 | record["NumbPath"] == int(theirs["num_path_revers"], 16)


def test_multipath_record_gives_the_path_saquery_gives(fabric_with_sa: Fabric) -> None:
    (path,) = saquery_records(run_diag(fabric_with_sa, "saquery", "--src-to-dst", "1:7"))
    sgid, dgid = (f"{int(ipaddress.IPv6Address(path[k])):032x}" for k in ("sgid", "dgid"))
    ours = probe(fabric_with_sa, "multipath", sgid, dgid)
    assert isinstance(ours, dict) and ours["complete"], ours
    (record,) = ours["records"]
    assert (record["SGID"], record["DGID"]) == (sgid, dgid)
    assert (record["SLID"], record["DLID"]) == (int(path["slid"]), int(path["dlid"]))
    assert record["MTUSelector"] << 6 | record["MTU"] == int(path["mtu"], 16)


def test_pkey_table_record_matches_saquery(fabric_with_sa: Fabric) -> None:
    ours = probe(fabric_with_sa, "pkeys", OPENSM_SM_KEY, 1, 1)
    assert isinstance(ours, dict)
    output = run_diag(fabric_with_sa, "saquery", "--smkey", OPENSM_SM_KEY, "PKTR", "1/1")
    blocks = output.split("PKeyTableRecord dump:")[1:]
    first = blocks[0]
    keys = [int(k, 16) for k in re.findall(r"0x[0-9a-f]{4}", first.split("PKey Table:")[1])]
    record = ours["records"][0]
    assert (record["LID"], record["PortNum"], record["BlockNum"]) == (1, 1, 0)
    assert record["P_KeyTable"] == keys and keys[0] == 0xFFFF


def test_subscriptions_to_security_traps_need_the_sm_key(fabric_with_sa: Fabric) -> None:
    port_traps = [128, 129, 130, 131, 144, 145]
    key_traps = [256, 257, 258, 259]
    untrusted = probe(fabric_with_sa, "subscribe", "0", *port_traps, *key_traps)
    assert untrusted == {**{str(t): None for t in port_traps},
                         **{str(t): "SA InformInfo: ERR_REQ_INVALID" for t in key_traps}}
    trusted = probe(fabric_with_sa, "subscribe", OPENSM_SM_KEY, *key_traps)
    assert trusted == {str(t): None for t in key_traps}


BACKEND_PROBE = SUPPORT_DIR / "sa_backend_probe.py"


def test_the_backend_serves_what_saquery_reads(fabric_with_sa: Fabric) -> None:
    done = fabric_with_sa.run([sys.executable, str(BACKEND_PROBE), OPENSM_SM_KEY, "1", "2", "7"])
    assert done.returncode == 0, done.stderr
    ours = json.loads(done.stdout)
    # Paths: the SA's own answer, as saquery gets it.
    for dlid in (2, 7):
        (path,) = ours["paths"][str(dlid)]
        (theirs,) = saquery_records(run_diag(fabric_with_sa, "saquery", "--src-to-dst",
                                             f"1:{dlid}"))
        assert path[:2] == [int(theirs["slid"]), int(theirs["dlid"])]
        assert [gid_text(path[2]), gid_text(path[3])] == [theirs["sgid"], theirs["dgid"]]
        assert path[4:8] == [int(theirs["pkey"], 16), int(theirs["mtu"], 16) & 0x3F,
                             int(theirs["rate"], 16) & 0x3F, int(theirs["pkt_life"], 16) & 0x3F]
        assert path[8] == int(theirs["num_path_revers"], 16) & 0x7F == 0  # NumbPath as answered
    # Partitions: OpenSM's default partition, every end port a full member of
    # 0x7fff (saquery PKTR shows 0xffff first in its block 0); IPoIB runs on it.
    ((pkey, ipoib, members),) = ours["partitions"]
    assert pkey == 0x7FFF and ipoib and all(full for _, _, full in members)
    lids = {(guid, port): lid for guid, port, lid in ours["lid_ports"]}
    assert len(members) == 7  # 4 HCA ports and 3 switch management ports
    for guid, port, _ in members:
        pktr = run_diag(fabric_with_sa, "saquery", "--smkey", OPENSM_SM_KEY, "PKTR",
                        f"{lids[(guid, port)]}/{port}/0")
        assert re.findall(r"0x[0-9a-f]{4}", pktr.split("PKey Table:")[1])[0] == "0xffff"
    # Multicast: the IPoIB broadcast group with the port the probe joined.
    (mcmr,) = saquery_records(run_diag(fabric_with_sa, "saquery", "--smkey", OPENSM_SM_KEY,
                                       "-m"))
    ((mgid, mlid, qkey, mtu, group_pkey, group_members),) = ours["groups"]
    assert gid_text(mgid) == mcmr["MGID"] and mlid == int(mcmr["Mlid"], 16)
    assert gid_text(ours["local_gid"]) == mcmr["PortGid"]
    h1 = smpquery_node_info(fabric_with_sa, "0")["NodeGUID"]
    assert group_members == [[h1, 1, 1]] and (qkey, group_pkey) == (0x0B1B, 0xFFFF)
    # Services: the one the probe registered.
    (service,) = saquery_records(run_diag(fabric_with_sa, "saquery", "-S"))
    assert ours["services"] == [[int(service["ServiceID"], 16), ours["local_gid"],
                                 int(service["ServiceP_Key"], 16),
                                 int(service["ServiceLease"], 16), service["ServiceName"]]]


MIB_PROBE = SUPPORT_DIR / "sa_mib_probe.py"


def path_row(path: dict[str, str]) -> dict[str, object]:
    """The result row (as sa_mib_probe prints it) of a PathRecord saquery printed."""
    return {"SrcLID": int(path["slid"]), "DstLID": int(path["dlid"]),
            "MTU": (int(path["mtu"], 16) & 0x3F) - 1,  # IB-SM-MIB: mtu256(0) is IBA 1
            "Rate": int(path["rate"], 16) & 0x3F, "PKey": path["pkey"][2:].lower(),
            "PktLifeTime": int(path["pkt_life"], 16) & 0x3F,
            "NumbPath": int(path["num_path_revers"], 16) & 0x7F,  # as the SA answered
            "SL": int(path["sl"], 16)}


def test_path_request_rows_hold_the_sas_answer(fabric_with_sa: Fabric) -> None:
    (path,) = saquery_records(run_diag(fabric_with_sa, "saquery", "--src-to-dst", "1:7"))
    sgid, dgid = (f"{int(ipaddress.IPv6Address(path[k])):032x}" for k in ("sgid", "dgid"))
    done = fabric_with_sa.run([sys.executable, str(MIB_PROBE), "1", "7", sgid, dgid])
    assert done.returncode == 0, done.stderr
    ours = json.loads(done.stdout)
    # The SET made the row active before the SA answered; the answer landed after.
    assert ours["status_before"] == 1 and ours["rows_before"] == []
    expected = path_row(path)
    assert ours["path"] == [expected]
    assert ours["multipath"] == [expected]


def test_a_link_going_down_arrives_as_a_report_of_trap_128(fabric_with_sa: Fabric) -> None:
    # H-2 hangs off S-1; the link unplugged is S-3's port 1 (to H-4): S-3 traps.
    reader = subprocess.Popen([sys.executable, str(PROBE), "reports", "30", "128"],
                              env=fabric_with_sa.environment("H-2"), cwd=fabric_with_sa.workdir,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert reader.stdout is not None
        assert json.loads(reader.stdout.readline()) == {"128": None}
        subscribers = saquery_records(run_diag(fabric_with_sa, "saquery", "-I"))
        assert [r["trap_num"] for r in subscribers if "trap_num" in r] == ["128"]
        fabric_with_sa.command('Unlink "S-3"[1]')
        out, err = reader.communicate(timeout=60)
    finally:
        if reader.poll() is None:
            reader.kill()
            reader.wait()
    assert reader.returncode == 0, err
    # Stopping unsubscribed: the SA keeps no InformInfo of ours.
    assert "InformInfoRecord" not in run_diag(fabric_with_sa, "saquery", "-I")
    events = [e for e in json.loads(out) if e and e["trap"] == 128]
    assert events, out
    event = events[0]
    switch = smpquery_node_info(fabric_with_sa, str(event["lid"]), directed=False)
    assert event["node_guid"] == switch["NodeGUID"]
    description = run_diag(fabric_with_sa, "smpquery", "nodedesc", str(event["lid"]))
    assert "S-3" in description

"""SNMPv3 through the fast path, with net-snmp's tools, against the same agent with it off.

One `ibsnmp run` on a topology fabric (no value changes with time), with a
USM user for every auth/priv pair net-snmp speaks; [limits] fast_path is
switched by a reload (SIGHUP). The fast path is recognized by what only it
does: a GETBULK of 100 repetitions gets 100 varbinds (pysnmp stops at 64).
Failures (wrong keys, unknown users, levels without keys) must get the
same Reports and count the same USM statistics as with the path off.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from tests.support.e2e import ibsnmp_agent
from tests.support.agent_support import needs_net_snmp
from tests.e2e.test_fast_reads_netsnmp import SM_PORT_GUID, TOPOLOGY, WALK_LINES_AT_LEAST, Toggle, _contexts

from ibsnmp.providers.topology import TopologyProvider

pytestmark = needs_net_snmp

INFINIBAND = ".1.3.6.1.3.117"
NET_SNMP_AUTH = {"MD5": "MD5", "SHA": "SHA", "SHA224": "SHA-224", "SHA256": "SHA-256",
                 "SHA384": "SHA-384", "SHA512": "SHA-512"}
NET_SNMP_PRIV = {None: None, "AES": "AES", "AES192": "AES-192", "AES256": "AES-256"}
PAIRS = [(auth, priv) for auth in NET_SNMP_AUTH for priv in NET_SNMP_PRIV]
USM_STATS = ".1.3.6.1.6.3.15.1.1"


def user_name(auth: str, priv: str | None) -> str:
    return f"u{auth.lower()}{(priv or 'none').lower()}"


def _config(fast: bool) -> str:
    lines = ['[[community]]', 'name = "public"', '[limits]', f'fast_path = {str(fast).lower()}',
             'getbulk_fill_ms = 0']  # whole answers: the two paths are compared
    for auth, priv in PAIRS:
        lines += ['[[user]]', f'name = "{user_name(auth, priv)}"', f'auth = "{auth}"',
                  f'auth_key = "auth-{auth}-key"']
        if priv:
            lines += [f'priv = "{priv}"', f'priv_key = "priv-{priv}-key"']
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Toggle]:
    config = tmp_path_factory.mktemp("fastv3") / "ibsnmp.toml"
    config.write_text(_config(True))
    with ibsnmp_agent("--config", str(config), "--provider", "topology", "--topology",
                      str(TOPOLOGY), "--sm-guid", SM_PORT_GUID) as running:
        toggle = Toggle(running, config, _config)
        yield toggle
        toggle.set_fast(True)


def v3(agent: Toggle, tool: str, auth: str, priv: str | None, *args: str,
       auth_key: str | None = None, priv_key: str | None = None, level: str | None = None,
       user: str | None = None) -> tuple[int, str, str]:
    options = ["-v3", "-r0", "-t3", "-l", level or ("authPriv" if priv else "authNoPriv"),
               "-u", user or user_name(auth, priv), "-a", NET_SNMP_AUTH[auth],
               "-A", auth_key or f"auth-{auth}-key"]
    if priv:
        protocol = NET_SNMP_PRIV[priv]
        assert protocol is not None  # None: no privacy
        options += ["-x", protocol, "-X", priv_key or f"priv-{priv}-key"]
    result = agent.agent.snmp(tool, *options, *args, timeout=300)
    return result.returncode, result.stdout, result.stderr


def bulk100(agent: Toggle, auth: str, priv: str | None) -> list[str]:
    code, out, err = v3(agent, "snmpbulkget", auth, priv, "-On", "-Cn0", "-Cr100", INFINIBAND)
    assert code == 0, err
    # One varbind a line that starts with its numeric OID (a long Hex-STRING wraps).
    return [line for line in out.splitlines() if line.startswith(".")]


def test_every_auth_priv_pair_reads_through_the_fast_path(agent: Toggle) -> None:
    fast = {pair: bulk100(agent, *pair) for pair in PAIRS}
    agent.set_fast(False)
    try:
        slow = {pair: bulk100(agent, *pair) for pair in PAIRS}
    finally:
        agent.set_fast(True)
    for pair in PAIRS:
        assert len(fast[pair]) == 100, pair  # only the fast path goes past 64
        assert len(slow[pair]) == 64, pair
        assert fast[pair][:64] == slow[pair], pair


def test_auth_priv_walks_of_every_context_are_equal_byte_for_byte(agent: Toggle) -> None:
    fabric = TopologyProvider(TOPOLOGY, sm_guid=int(SM_PORT_GUID, 16), sm_priority=14).snapshot
    for context in _contexts(fabric):
        walk = ("snmpbulkwalk", "SHA256", "AES256", "-Cr50", "-n", context, INFINIBAND)
        code, fast, err = v3(agent, *walk)
        assert code == 0 and fast.count("\n") > WALK_LINES_AT_LEAST, err
        agent.set_fast(False)
        try:
            code, slow, err = v3(agent, *walk)
        finally:
            agent.set_fast(True)
        assert code == 0, err
        assert fast == slow, context


FAILURES: dict[str, dict[str, Any]] = {
    "wrong auth key": dict(auth="SHA512", priv="AES", auth_key="not-the-auth-key"),
    "wrong priv key": dict(auth="SHA224", priv="AES192", priv_key="not-the-priv-key"),
    "unknown user": dict(auth="SHA", priv=None, user="nobody"),
    "authPriv without a priv key": dict(auth="SHA384", priv="AES", user=user_name("SHA384", None)),
}


def usm_stats(agent: Toggle) -> list[str]:
    result = agent.agent.snmp("snmpwalk", "-v2c", "-c", "public", "-On", USM_STATS)
    assert result.returncode == 0, result.stderr
    return result.stdout.splitlines()


@pytest.mark.parametrize("case", sorted(FAILURES))
def test_failures_get_the_same_reports_and_counts_either_way(agent: Toggle, case: str) -> None:
    arguments = dict(FAILURES[case])
    auth, priv = arguments.pop("auth"), arguments.pop("priv")
    outcomes = []
    for fast in (True, False):
        agent.set_fast(fast)
        before = usm_stats(agent)
        code, out, err = v3(agent, "snmpget", auth, priv, ".1.3.6.1.2.1.1.5.0", **arguments)
        after = usm_stats(agent)
        changed = [(old, new) for old, new in zip(before, after) if old != new]
        outcomes.append((code, out, err, len(changed)))
    agent.set_fast(True)
    assert outcomes[0] == outcomes[1]
    code, _, err, counters_changed = outcomes[0]
    if case == "wrong priv key":
        # The digest is right, the plaintext noise: a parse error, dropped unanswered
        # (RFC 3412 7.2 step 8), as snmpd does; only discovery counted in usmStats.
        assert code != 0 and "Timeout" in err and counters_changed == 1
        return
    # snmpget's discovery counts usmStatsUnknownEngineIDs, the failure its own counter once.
    assert code != 0 and counters_changed == 2


SNMP_GROUP = ".1.3.6.1.2.1.11"


def snmp_counters(agent: Toggle) -> dict[str, int]:
    result = agent.agent.snmp("snmpwalk", "-v2c", "-c", "public", "-On", "-Oqe", SNMP_GROUP)
    assert result.returncode == 0, result.stderr
    return {line.split()[0]: int(line.split()[1]) for line in result.stdout.splitlines()}


def test_the_snmp_group_counts_v3_reads_alike_on_both_paths(agent: Toggle) -> None:
    deltas = []
    for fast in (True, False):
        agent.set_fast(fast)
        before = snmp_counters(agent)
        for tool, oid in (("snmpget", ".1.3.6.1.2.1.1.5.0"), ("snmpgetnext", INFINIBAND),
                          ("snmpget", ".1.3.6.1.2.1.1.99.0")):
            code, _, err = v3(agent, tool, "SHA256", "AES", oid)
            assert code == 0, err
        after = snmp_counters(agent)
        deltas.append({name: after[name] - before[name] for name in before})
    agent.set_fast(True)
    assert deltas[0] == deltas[1]
    assert deltas[0][".1.3.6.1.2.1.11.15.0"] >= 2  # snmpInGetRequests

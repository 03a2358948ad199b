"""Who may write, and SETs through the agent's ContextView: write
communities from flags, access before anything else, the InfiniBand part
and pysnmp's system group all or nothing, error indexes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pysnmp.smi import error as smi_error
from tests.support.set_support import Agent, i, instance, s
from tests.support.agent_support import agent_settings

from ibsnmp.agent.config import ConfigError, FileConfig, merge_settings
from ibsnmp.agent.engine import build_engine
from ibsnmp.agent.instrum import ContextView

SYS_CONTACT = (1, 3, 6, 1, 2, 1, 1, 4, 0)
SYS_DESCR = (1, 3, 6, 1, 2, 1, 1, 1, 0)
SPEC = "fat-tree:spines=2,leaves=2,hosts=2,faults=0"


def test_write_community_flag() -> None:
    settings = merge_settings(None, write_communities=["private"])
    assert [(c.name, c.access) for c in settings.communities] == [("public", "read"),
                                                                  ("private", "write")]
    settings = merge_settings(None, communities=["ro"], write_communities=["rw1", "rw2"])
    assert [(c.name, c.access) for c in settings.communities] == [
        ("ro", "read"), ("rw1", "write"), ("rw2", "write")]
    with pytest.raises(ConfigError, match="--write-community.*already configured"):
        merge_settings(None, communities=["x"], write_communities=["x"])
    with pytest.raises(ConfigError, match="--write-community"):
        merge_settings(FileConfig(), write_communities=["a@b"])


@pytest.fixture
def agent(tmp_path: Path) -> Agent:
    return Agent(SPEC, seed=1, path=tmp_path / "s.json")


@pytest.fixture
def base(agent: Agent) -> Any:
    engine = build_engine(agent_settings(), agent.contexts, agent.mib, fabric_summary="unit")
    return engine.engine.message_dispatcher.mib_instrum_controller


def allow(view_type: str, varbind: Any, **context: Any) -> bool:
    return False  # in every view


def deny_infiniband(view_type: str, varbind: Any, **context: Any) -> bool:
    return tuple(varbind[0])[:6] == (1, 3, 6, 1, 3, 117)


def contact(base: Any) -> str:
    ((_, value),) = base.read_variables((SYS_CONTACT, None), acFun=allow)
    return str(value)


def test_base_and_infiniband_varbinds_are_all_or_nothing(agent: Agent, base: Any) -> None:
    view = ContextView(base, agent.mib, agent.target())
    sweep = instance("ibSmConfigSweepInterval", agent.prefix)
    before = agent.get(sweep)
    # The InfiniBand part fails: pysnmp's part is never written.
    with pytest.raises(smi_error.WrongValueError) as caught:
        view.write_variables((SYS_CONTACT, s(b"noc@example.org")),
                             (instance("ibSmConfigPriority", agent.prefix), i(99)),
                             acFun=allow)
    assert caught.value["idx"] == 1
    assert contact(base) == "ops@example.org"
    # pysnmp's part fails (wrongType): the InfiniBand part is not committed,
    # and the error names the base varbind's position in the whole PDU.
    with pytest.raises(smi_error.WrongTypeError) as caught:
        view.write_variables((sweep, i(before + 1)), (SYS_CONTACT, i(5)), acFun=allow)
    assert caught.value["idx"] == 1
    assert agent.get(sweep) == before
    # pysnmp refuses its part while writing (sysDescr is read-only): still
    # nothing of the InfiniBand part, and the index is the PDU's.
    with pytest.raises(smi_error.MibOperationError) as caught:
        view.write_variables((sweep, i(before + 1)), (SYS_CONTACT, s(b"x")),
                             (SYS_DESCR, s(b"x")), acFun=allow)
    assert caught.value["idx"] == 2
    assert agent.get(sweep) == before and contact(base) == "ops@example.org"
    out = view.write_variables((sweep, i(before + 2)), (SYS_CONTACT, s(b"noc@example.org")),
                               acFun=allow)
    assert [tuple(name) for name, _ in out] == [sweep, SYS_CONTACT]
    assert agent.get(sweep) == before + 2 and contact(base) == "noc@example.org"


def test_access_is_checked_before_anything(agent: Agent, base: Any) -> None:
    view = ContextView(base, agent.mib, agent.target())
    with pytest.raises(smi_error.NoAccessError) as caught:
        view.write_variables((instance("ibSmConfigPriority", agent.prefix), i(99)),
                             acFun=deny_infiniband)
    assert caught.value["idx"] == 0


def test_node_contexts_without_an_sm_have_nothing_writable(agent: Agent, base: Any) -> None:
    host = next(n for n in agent.fabric.nodes.values()
                if n.is_ca and n.guid not in {sm.node_guid for sm in agent.fabric.sms})
    view = ContextView(base, agent.mib, agent.target(f"{host.guid:016x}".encode()))
    with pytest.raises(smi_error.NotWritableError):
        view.write_variables((instance("ibSmConfigPriority", agent.prefix), i(3)), acFun=allow)

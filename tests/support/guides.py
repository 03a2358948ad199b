"""The NMS guides of docs/ run as an operator runs them.

A guide's code blocks are read from its page: a block whose first line is
`# /some/path` is that file, the `sh` blocks are commands. The page's agent,
`ib-agent.example.org` on port 161, becomes a test agent on 127.0.0.1 (the
simulated fabric the guides' GUIDs come from), `/opt/ibsnmp/bin/ibsnmp` this
checkout's, and /etc, /var, /tmp, /run and ~ folders of the test. `apt-get
install` and `systemctl` lines are not run: the packages must be installed
(`make test` installs them), and a test stands in for the service.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.support.e2e import RunningAgent, ibsnmp_agent
from tests.support.paths import PROJECT_ROOT

# `make run`'s fabric, and `ibsnmp run --provider simulated`'s: the guides' GUIDs are its nodes'.
FABRIC = "fat-tree:spines=2,leaves=4,hosts=4"
LEAF01 = "7cfe900300cd613c"
SPINE01 = "7cfe90030091b758"
EXAMPLE_AGENT = "ib-agent.example.org"
VENV_BIN = Path(sys.executable).parent
# What every test agent serves besides a page's own [[user]] tables: the
# community public, and examples/ibsnmp.toml's user monitor with the keys the
# guides give it.
MONITOR = ("monitor", "monitor-auth-key", "monitor-priv-key")
AGENT_CONFIG = f"""
[[community]]
name = "public"

[[user]]
name = "{MONITOR[0]}"
auth = "SHA256"
auth_key = "{MONITOR[1]}"
priv = "AES"
priv_key = "{MONITOR[2]}"
"""
NOT_RUN = ("apt-get install ", "systemctl ")


@dataclass(frozen=True)
class Block:
    language: str
    text: str

    @property
    def path(self) -> str | None:
        """The file a block is, named by its first line (`# /etc/collectd/...`)."""
        found = re.fullmatch(r"# ((?:~|)/[^\s,]+).*", self.text.split("\n", 1)[0])
        return found[1] if found else None


class Guide:
    def __init__(self, name: str) -> None:
        self.page = PROJECT_ROOT / "docs" / name
        self.text = self.page.read_text()
        self.blocks = [Block(language, text) for language, text in
                       re.findall(r"^```(\w*)\n(.*?)^```", self.text, flags=re.S | re.M)]

    def files(self) -> dict[str, str]:
        return {block.path: block.text for block in self.blocks if block.path}

    def scripts(self) -> list[str]:
        """The shell blocks that are commands, without the lines that are not run."""
        return ["\n".join(line for line in block.text.splitlines() if not line.startswith(NOT_RUN))
                for block in self.blocks if block.language == "sh" and not block.path]

    def script(self, first: str) -> str:
        """The one command block that begins with `first`."""
        (found,) = [script for script in self.scripts() if script.startswith(first)]
        return found

    def commands(self, first: str) -> list[str]:
        """The commands of the block that begins with `first`, one a line (continuations joined)."""
        return [line for line in self.script(first).replace("\\\n", "").splitlines() if line]

    def packages(self) -> set[str]:
        return {package for block in self.blocks for line in block.text.splitlines()
                if line.startswith("apt-get install ") for package in line.split()[2:]}

    def agent_config(self) -> str:
        """The test agent's configuration: AGENT_CONFIG and the page's TOML blocks."""
        return AGENT_CONFIG + "".join("\n" + block.text for block in self.blocks if block.language == "toml")


def makefile_packages() -> set[str]:
    """The Makefile's DEBIAN_PACKAGES: what `make test` installs."""
    text = (PROJECT_ROOT / "Makefile").read_text().replace("\\\n", " ")
    (line,) = [line for line in text.splitlines() if line.startswith("DEBIAN_PACKAGES :=")]
    return set(line.split(":=", 1)[1].split())


def for_test(text: str, agent: str, root: Path) -> str:
    """`text` of a page, for the agent at `agent` (127.0.0.1:PORT) and the system under `root`."""
    host, port = agent.rsplit(":", 1)
    text = text.replace(f"-H {EXAMPLE_AGENT}", f"-H {host} -p {port}")
    text = text.replace(f"{EXAMPLE_AGENT}:161", agent).replace(EXAMPLE_AGENT, agent)
    # The page's own paths first: the checkout's may lie under /tmp too.
    text = re.sub(r"(?<![\w.-])/(etc|var|tmp|run)/", lambda m: f"{root}/{m[1]}/", text)
    text = re.sub(r"(?<![\w.-])~/", f"{root}/home/", text)
    return text.replace("/opt/ibsnmp/bin/ibsnmp", str(VENV_BIN / "ibsnmp"))


def write_files(guide: Guide, agent: str, root: Path, changes: dict[str, str] | None = None) -> None:
    """The page's files under `root`, each line of `changes` (old: new) changed first."""
    for path, text in guide.files().items():
        for old, new in (changes or {}).items():
            text = text.replace(old, new)
        target = Path(for_test(path, agent, root))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(for_test(text, agent, root))


def _bash(script: str, agent: str, root: Path) -> list[str]:
    return ["bash", "-euo", "pipefail", "-c", for_test(script, agent, root)]


def _env(root: Path) -> dict[str, str]:
    return dict(os.environ, PATH=f"{VENV_BIN}:{os.environ['PATH']}", HOME=f"{root}/home")


def sh(script: str, agent: str, root: Path, timeout: float = 120,
       cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """A page's commands in bash (-euo pipefail), ibsnmp on the PATH, in `root` or `cwd`."""
    return subprocess.run(_bash(script, agent, root), cwd=cwd or root, env=_env(root), capture_output=True,
                          text=True, timeout=timeout, check=False)


@contextmanager
def started(command: str, agent: str, root: Path,
            stop: signal.Signals = signal.SIGTERM) -> Iterator[subprocess.Popen[str]]:
    """A page's long-running command (a daemon in the foreground), its output
    in `root`/output; stopped with `stop` when the block ends."""
    with (root / "output").open("w") as output:
        process = subprocess.Popen(_bash("exec " + command, agent, root), cwd=root, env=_env(root),
                                   stdout=output, stderr=subprocess.STDOUT, text=True)
        try:
            yield process
        finally:
            process.send_signal(stop)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def ran(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


@contextmanager
def guide_agent(guide: Guide, work: Path, more: str = "", seed: int = 1) -> Iterator[RunningAgent]:
    """An agent on the guides' fabric, configured as the page says (and with `more`)."""
    config = work / f"ibsnmp-{seed}.toml"
    config.write_text(guide.agent_config() + more)
    with ibsnmp_agent("--config", str(config), fabric=FABRIC, seed=seed) as agent:
        yield agent

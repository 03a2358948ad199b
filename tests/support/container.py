"""Support for container tests: podman as root with runc, a local base image.

No registry is reachable here, so the base image is made with debootstrap
(minbase + python3 + python3-venv) from the Debian mirror apt uses and
imported into podman's store once; later runs find it there. podman runs
with a containers.conf of the tests' own (runc; no default ulimits, which
runc cannot set in this sandbox).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

BASE_IMAGE = "localhost/ibsnmp-test-base:bookworm"
SUITE = "bookworm"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
CONTAINERS_CONF = """\
[containers]
default_ulimits = []

[engine]
runtime = "runc"
"""


def missing_prerequisite() -> str | None:
    """Why container tests cannot run here, or None."""
    if os.geteuid() != 0:
        return "podman tests run as root (runc, debootstrap)"
    for tool in ("podman", "runc", "debootstrap"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install podman runc debootstrap)"
    return None


def apt_mirror() -> str:
    """The first Debian archive URI apt is configured with."""
    pattern = re.compile(r"^(?:URIs:\s*|deb\s+(?:\[[^\]]*\]\s+)?)(\S+)", re.MULTILINE)
    sources = [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*"))]
    for source in sources:
        try:
            text = source.read_text()
        except OSError:
            continue
        uri: str
        for uri in pattern.findall(text):
            if "security" not in uri and uri.startswith(("http://", "https://")):
                return uri
    return DEFAULT_MIRROR


class Podman:
    """podman with the tests' containers.conf."""

    def __init__(self, conf_dir: Path) -> None:
        conf = conf_dir / "containers.conf"
        conf.write_text(CONTAINERS_CONF)
        self.env = dict(os.environ, CONTAINERS_CONF=str(conf))

    def __call__(self, *args: str, check: bool = True, timeout: float = 600,
                 stdin: bytes | None = None) -> subprocess.CompletedProcess[str]:
        result = subprocess.run(["podman", *args], env=self.env, capture_output=True,
                                timeout=timeout, check=False, input=stdin.decode() if stdin
                                else None, text=True)
        if check and result.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)} failed ({result.returncode}):\n"
                                 f"{result.stdout[-3000:]}\n{result.stderr[-3000:]}")
        return result

    def image_size(self, image: str) -> int:
        return int(self("image", "inspect", "--format", "{{.Size}}", image).stdout.strip())

    def ensure_base_image(self, work: Path) -> str:
        """The debootstrapped base image, made on first use."""
        if self("image", "exists", BASE_IMAGE, check=False).returncode == 0:
            return BASE_IMAGE
        rootfs = work / "rootfs"
        subprocess.run(["debootstrap", "--variant=minbase", "--include=python3,python3-venv",
                        SUITE, str(rootfs), apt_mirror()], check=True, capture_output=True,
                       timeout=900)
        tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
        imported = subprocess.run(["podman", "import", "-", BASE_IMAGE], stdin=tar.stdout,
                                  env=self.env, capture_output=True, timeout=600, check=False)
        tar.wait()
        shutil.rmtree(rootfs, ignore_errors=True)
        assert imported.returncode == 0, imported.stderr.decode()[-2000:]
        return BASE_IMAGE


def copy_build_context(project: Path, target: Path, extra_ignores: Sequence[str] = ()) -> Path:
    """The project's files without virtualenvs, caches or git data."""
    ignore = shutil.ignore_patterns(".git", ".venv", "__pycache__", "*.egg-info", "build",
                                    ".pytest_cache", "wheelhouse", *extra_ignores)
    shutil.copytree(project, target, ignore=ignore, symlinks=True)
    return target

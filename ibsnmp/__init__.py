"""ibsnmp: an SNMP agent for InfiniBand fabrics."""

import sys

__version__ = "0.1.0"


def _pysnmp_without_a_run_time_mib_compiler() -> None:
    """pysnmp imports pysmi's whole MIB compiler (and an HTTP client) where it
    can, to compile missing MIBs at run time; ibsnmp ships its MIBs compiled
    and never does. Its compiler module imported with pysmi out of sight
    (a None in sys.modules makes the import fail) saves a fifth of a second
    of every command's start; `ibsnmp mibs` imports pysmi itself later."""
    if "pysnmp.smi.compiler" in sys.modules or "pysmi" in sys.modules:
        return
    sys.modules["pysmi"] = None  # type: ignore[assignment]  # makes `import pysmi` fail
    try:
        import pysnmp.smi.compiler  # noqa: F401
    finally:
        del sys.modules["pysmi"]


_pysnmp_without_a_run_time_mib_compiler()

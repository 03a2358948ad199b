"""systemd's notification protocol: readiness and state for `Type=notify` units.

A unit with `Type=notify` passes `$NOTIFY_SOCKET`, a Unix datagram socket (a path, or an
abstract name written with a leading `@`); the service sends newline-separated `KEY=VALUE`
fields: `READY=1` once it serves (so `systemctl start` returns when the agent answers),
`RELOADING=1` then `READY=1` around a reload, `STOPPING=1` when it stops, `STATUS=...` for
`systemctl status`. Without the variable every call does nothing, and a socket that refuses
the datagram costs one DEBUG line: a notification is never a reason to fail.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import Mapping

log = logging.getLogger("ibsnmp.sd_notify")


def notify(*fields: str, environ: Mapping[str, str] | None = None) -> bool:
    """Send `fields` ("READY=1", "STATUS=...") to systemd; True if sent."""
    address = (os.environ if environ is None else environ).get("NOTIFY_SOCKET", "")
    if not address or not fields:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]  # an abstract socket name
    elif not address.startswith("/"):
        log.debug("NOTIFY_SOCKET is neither a path nor an abstract name; not notifying")
        return False
    message = "\n".join(field.replace("\n", " ") for field in fields).encode("utf-8")
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.sendto(message, address)
    except OSError as exc:
        log.debug("cannot notify systemd at %s: %s", address.lstrip("\0"), exc)
        return False
    return True

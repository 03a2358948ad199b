"""The topic tree, version 1:

    ibsnmp/v1/<fabric-id>/node/<node guid>/state     retained, QoS 1: the node's record
    ibsnmp/v1/<fabric-id>/node/<node guid>/events    QoS 1: its trap events, numbered
    ibsnmp/v1/<fabric-id>/node/<node guid>/status    retained: online / offline
    ibsnmp/v1/<fabric-id>/publisher/<client id>/status
        retained: online, or offline (the connection's last will)
    ibsnmp/v1/<fabric-id>/publisher/<client id>/counters
        QoS 0: counter values of some of its nodes since their states
        (codec.CountersRecord, up to codec.COUNTER_BATCH nodes a message)

A node GUID is 16 lower-case hex digits, as in SNMP context names.  One
publisher may serve many nodes on one connection and MQTT gives a
connection one last will, so the will is the publisher's status; each
state record names its publisher.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["PREFIX", "ONLINE", "OFFLINE", "Topic", "check_fabric_id", "node_topic", "publisher_topic",
           "subscription", "parse"]

PREFIX = "ibsnmp/v1"
ONLINE = b"online"
OFFLINE = b"offline"
NODE_KINDS = ("state", "events", "status")
PUBLISHER_KINDS = ("status", "counters")
_GUID = re.compile(r"[0-9a-f]{16}")
_NAME = re.compile(r"[^/+#\x00]{1,128}")


class Topic(NamedTuple):
    """A topic of the tree: `kind` is state/events/status of a node `guid`,
    or status/counters of a publisher (guid None, client id `publisher`)."""

    kind: str
    guid: int | None
    publisher: str | None


def check_fabric_id(fabric_id: str) -> str:
    if _NAME.fullmatch(fabric_id) is None:
        raise ValueError(f"--fabric-id: 1 to 128 characters without '/', '+' or '#', got {fabric_id!r}")
    return fabric_id


def node_topic(fabric_id: str, guid: int, kind: str) -> str:
    return f"{PREFIX}/{fabric_id}/node/{guid:016x}/{kind}"


def publisher_topic(fabric_id: str, client_id: str, kind: str = "status") -> str:
    return f"{PREFIX}/{fabric_id}/publisher/{client_id}/{kind}"


def subscription(fabric_id: str) -> str:
    return f"{PREFIX}/{fabric_id}/#"


def parse(fabric_id: str, topic: str) -> Topic | None:
    """The topic's meaning, or None if it is not one of the tree's."""
    head = f"{PREFIX}/{fabric_id}/"
    if not topic.startswith(head):
        return None
    parts = topic[len(head):].split("/")
    if len(parts) != 3:
        return None
    group, name, kind = parts
    if group == "node" and kind in NODE_KINDS and _GUID.fullmatch(name):
        return Topic(kind, int(name, 16), None)
    if group == "publisher" and kind in PUBLISHER_KINDS and name:
        return Topic(kind, None, name)
    return None

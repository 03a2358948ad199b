"""The topic tree, version 2: every message under the publisher that sent it.

    ibsnmp/v2/<fabric-id>/<owner>/<client id>/{status,counters,node/<guid>/{state,events,status}}

MQTT tells a subscriber nothing of who published a message: the topic is the sender's
identity, and the broker's ACL decides who may write it. `<owner>` is the publisher's broker
user, `<client id>` its MQTT client id; the pair is a `Publisher`, to which the aggregator
ties every node its topic announced. A GUID is 16 lower-case hex digits, the other levels 1
to 128 characters without '/', '+', '#' or NUL. Reference: docs/providers.md, 'Topic tree'.
"""

from __future__ import annotations

import re
from typing import NamedTuple

__all__ = ["PREFIX", "ONLINE", "OFFLINE", "ANONYMOUS", "Publisher", "Topic", "check_fabric_id",
           "check_name", "subscription", "parse"]

PREFIX = "ibsnmp/v2"
ONLINE = b"online"
OFFLINE = b"offline"
# The owner of a publisher that connects without a user name.
ANONYMOUS = "anonymous"
NODE_KINDS = ("state", "events", "status")
PUBLISHER_KINDS = ("status", "counters")
_GUID = re.compile(r"[0-9a-f]{16}")
_NAME = re.compile(r"[^/+#\x00]{1,128}")


def check_name(name: str, what: str) -> str:
    """`name` if it can be one level of the tree; ValueError naming `what` if not."""
    if _NAME.fullmatch(name) is None:
        raise ValueError(f"{what}: 1 to 128 characters without '/', '+', '#' or NUL, got {name!r}")
    return name


def check_fabric_id(fabric_id: str) -> str:
    return check_name(fabric_id, "--fabric-id")


class Publisher(NamedTuple):
    """A publisher as the tree names it: its broker user and its client id.
    The ACL ties the owner level to the user (mosquitto: `pattern write
    ibsnmp/v2/+/%u/#`, see examples/mosquitto/); the client id level gives
    each of one user's publishers (two HCAs of a host published apart) a
    status topic for its own last will."""

    owner: str
    client_id: str

    def __str__(self) -> str:
        return f"{self.owner}/{self.client_id}"


class Topic(NamedTuple):
    """A topic of the tree: `kind` is state/events/status of a node `guid`, or
    status/counters of the publisher itself (guid None)."""

    publisher: Publisher
    kind: str
    guid: int | None


class PublisherTopics:
    """The topics one publisher writes (`fabric_id`, `publisher`), checked once."""

    def __init__(self, fabric_id: str, publisher: Publisher) -> None:
        check_fabric_id(fabric_id)
        check_name(publisher.owner, "the publisher's owner (its broker user)")
        check_name(publisher.client_id, "--client-id")
        self.base = f"{PREFIX}/{fabric_id}/{publisher.owner}/{publisher.client_id}"
        self.status = f"{self.base}/status"
        self.counters = f"{self.base}/counters"

    def node(self, guid: int, kind: str) -> str:
        return f"{self.base}/node/{guid:016x}/{kind}"


def subscription(fabric_id: str) -> str:
    return f"{PREFIX}/{fabric_id}/#"


def parse(fabric_id: str, topic: str) -> Topic | None:
    """The topic's meaning, or None if it is not one of the tree's."""
    head = f"{PREFIX}/{fabric_id}/"
    if not topic.startswith(head):
        return None
    parts = topic[len(head):].split("/")
    if len(parts) < 3 or not parts[0] or not parts[1]:
        return None
    publisher = Publisher(parts[0], parts[1])
    if len(parts) == 3 and parts[2] in PUBLISHER_KINDS:
        return Topic(publisher, parts[2], None)
    if len(parts) == 5 and parts[2] == "node" and parts[4] in NODE_KINDS and _GUID.fullmatch(parts[3]):
        return Topic(publisher, parts[4], int(parts[3], 16))
    return None

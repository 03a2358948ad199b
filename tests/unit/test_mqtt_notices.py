"""What remote MQTT clients cause is said at most once per key a minute, in
bounded memory; a client id used twice is told from a flaky network."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

import pytest

from ibsnmp.mqtt.broker import settings_from_args
from ibsnmp.mqtt.notices import Notices
from ibsnmp.mqtt.takeover import Takeovers


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_one_line_per_key_a_minute_then_the_count(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    clock = Clock()
    notices = Notices(logging.getLogger("test.notices"), clock=clock)
    assert notices.say("a", logging.WARNING, "bad %s", "one")
    for _ in range(4999):
        assert not notices.say("a", logging.WARNING, "bad %s", "one")
    assert notices.say("b", logging.WARNING, "other")  # another key is not held back
    clock.now += 60
    assert notices.say("a", logging.WARNING, "bad %s", "again")
    assert [r.getMessage() for r in caplog.records] == [
        "bad one", "other", "bad again (4999 more like it since the last such line)"]


def test_memory_is_bounded_whatever_the_keys() -> None:
    notices = Notices(logging.getLogger("test.notices"), max_keys=8)
    for key in range(10_000):
        notices.say(key, logging.DEBUG, "x")
    assert len(notices._open) == 8


def test_connections_that_end_at_once_three_times_are_a_takeover() -> None:
    clock = Clock()
    takeovers = Takeovers(clock=clock)
    said = []
    for _ in range(5):
        takeovers.connected()
        clock.now += 1
        said.append(takeovers.lost())
        clock.now += 2
    assert said == [False, False, True, False, False]  # said once
    takeovers.connected()
    clock.now += 60  # a connection that lasted: whatever it was is over
    assert not takeovers.lost()


def test_a_broker_out_of_reach_is_no_takeover() -> None:
    clock = Clock()
    takeovers = Takeovers(clock=clock)
    assert not any(takeovers.lost() for _ in range(10))  # never connected
    for _ in range(3):  # short connections, but far apart
        takeovers.connected()
        clock.now += 1
        assert not takeovers.lost()
        clock.now += 400


def test_publishers_of_one_host_get_client_ids_of_their_own() -> None:
    args = argparse.Namespace(broker="mqtt://host17@broker", broker_password_file=None, broker_ca=None,
                              broker_cert=None, broker_key=None, keepalive=30, client_id=None,
                              fabric_id="f")
    first = settings_from_args(args, "publisher", client_suffix="0c42a1030017c078")
    second = settings_from_args(args, "publisher", client_suffix="0c42a1030017d000")
    assert first.client_id != second.client_id and first.client_id.endswith("-0c42a1030017c078")
    assert first.owner == "host17"  # the broker user the ACL ties its topics to
    anonymous = settings_from_args(argparse.Namespace(**{**vars(args), "broker": "mqtt://broker"}),
                                   "publisher")
    assert anonymous.owner == "anonymous"


def test_a_client_certificate_names_the_owner(tmp_path: Path) -> None:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "host42")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
                   .serial_number(1).not_valid_before(now).not_valid_after(now + datetime.timedelta(days=1))
                   .sign(key, hashes.SHA256()))
    cert = tmp_path / "host42.pem"
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    ca = tmp_path / "ca.pem"
    ca.write_bytes(cert.read_bytes())
    args = argparse.Namespace(broker="mqtts://broker", broker_password_file=None, broker_ca=str(ca),
                              broker_cert=str(cert), broker_key=None, keepalive=30, client_id=None,
                              fabric_id="f")
    assert settings_from_args(args, "publisher").owner == "host42"

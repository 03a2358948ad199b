"""USM keys, digests, AES privacy and v3 messages of ibsnmp/wire, against RFC vectors and pysnmp.

pysnmp's own USM implementation (localkey, the auth and priv services,
the ASN.1 message classes) is the oracle: what the agent's pysnmp path
computes is what the fast path must compute.
"""

from __future__ import annotations

import hashlib
import hmac
import random
from typing import Any

import pytest
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms
try:  # as ibsnmp.wire.usm_crypto: newer cryptography files CFB with the legacy modes
    from cryptography.hazmat.decrepit.ciphers.modes import CFB
except ImportError:  # pragma: no cover - cryptography before the move
    from cryptography.hazmat.primitives.ciphers.modes import CFB
from pyasn1.codec.ber import decoder
from pysnmp.proto import rfc1902
from pysnmp.proto.mpmod.rfc3412 import SNMPv3Message
from pysnmp.proto.secmod.rfc3414.service import UsmSecurityParameters  # first: import cycle
from pysnmp.proto.secmod.eso.priv import aes192, aes256
from pysnmp.proto.secmod.rfc3414 import localkey
from pysnmp.proto.secmod.rfc3414.auth import hmacmd5, hmacsha
from pysnmp.proto.secmod.rfc3414.priv import des
from pysnmp.proto.secmod.rfc3826.priv import aes
from pysnmp.proto.secmod.rfc7860.auth import hmacsha2

from ibsnmp.wire.ber import HeaderError
from ibsnmp.wire.ber import element as encode_element
from ibsnmp.wire.header import V3Message, read_header, read_scoped_pdu
from ibsnmp.wire.usm_crypto import MacKey, PrivKey, SaltCounter, message_digest
from ibsnmp.wire.usm_inbound import (Accepted, Refusal, Sealer, UsmUser, accept,
                                     localize_users, seal_message)
from ibsnmp.wire.usm_keys import (AUTH_PROTOCOLS, PRIV_PROTOCOLS, auth_key, hash_passphrase,
                                  priv_key)
from ibsnmp.wire.request import encode_response_pdu
from ibsnmp.wire.usm_message import (FLAG_AUTH, FLAG_PRIV, FLAG_REPORTABLE, Outgoing,
                                     ReportWriter, encode_scoped_pdu, encode_scoped_response,
                                     encode_v3, overhead)
from tests.support.wire_v3 import Auth, v3_message

RFC_ENGINE_ID = bytes.fromhex("000000000000000000000002")
ENGINE_ID = bytes.fromhex("80004fb805aabbccddeeff0011")
PYSNMP_AUTH = {
    "MD5": hmacmd5.HmacMd5.SERVICE_ID,
    "SHA": hmacsha.HmacSha.SERVICE_ID,
    "SHA224": hmacsha2.HmacSha2.SHA224_SERVICE_ID,
    "SHA256": hmacsha2.HmacSha2.SHA256_SERVICE_ID,
    "SHA384": hmacsha2.HmacSha2.SAH384_SERVICE_ID,
    "SHA512": hmacsha2.HmacSha2.SHA512_SERVICE_ID,
}
PYSNMP_AUTH_SERVICE = {
    "MD5": hmacmd5.HmacMd5(),
    "SHA": hmacsha.HmacSha(),
    **{name: hmacsha2.HmacSha2(PYSNMP_AUTH[name])
       for name in ("SHA224", "SHA256", "SHA384", "SHA512")},
}
PYSNMP_PRIV = {
    "AES": aes.Aes(),
    "AES192": aes192.AesBlumenthal192(),
    "AES256": aes256.AesBlumenthal256(),
    "AES192C": aes192.Aes192(),
    "AES256C": aes256.Aes256(),
    "DES": des.Des(),
}
GET_PDU = bytes.fromhex("a01a02020d80020100020100300e300c06082b060102010105000500")


@pytest.mark.parametrize(("name", "ku", "kul"), [
    # RFC 3414 A.3.1 and A.3.2: "maplesyrup" localized to engine ID ...02.
    ("MD5", "9faf3283884e92834ebc9847d8edd963", "526f5eed9fcce26f8964c2930787d82b"),
    ("SHA", "9fb5cc0381497b3793528939ff788d5d79145211",
     "6695febc9288e36282235fc7151f128497b38f3f"),
])
def test_rfc3414_key_localization_vectors(name: str, ku: str, kul: str) -> None:
    auth = AUTH_PROTOCOLS[name]
    assert hash_passphrase(b"maplesyrup", auth).hex() == ku
    assert auth_key(b"maplesyrup", RFC_ENGINE_ID, auth).hex() == kul


@pytest.mark.parametrize("name", sorted(AUTH_PROTOCOLS))
@pytest.mark.parametrize("passphrase", [b"k", b"eight-ok", b"x" * 63, b"y" * 64, b"z" * 65,
                                        "pass phrase \u00e9".encode()])
def test_auth_keys_match_pysnmp(name: str, passphrase: bytes) -> None:
    hash_factory = getattr(hashlib, AUTH_PROTOCOLS[name].hash_name)
    expected = localkey.password_to_key(passphrase, rfc1902.OctetString(ENGINE_ID), hash_factory)
    assert auth_key(passphrase, ENGINE_ID, AUTH_PROTOCOLS[name]) == bytes(expected)


@pytest.mark.parametrize("auth_name", sorted(AUTH_PROTOCOLS))
@pytest.mark.parametrize("priv_name", sorted(PRIV_PROTOCOLS))
def test_priv_keys_match_pysnmp(auth_name: str, priv_name: str) -> None:
    service = PYSNMP_PRIV[priv_name]
    hashed = service.hash_passphrase(PYSNMP_AUTH[auth_name], b"privacy-pass")
    expected = service.localize_key(PYSNMP_AUTH[auth_name], hashed,
                                    rfc1902.OctetString(ENGINE_ID))
    ours = priv_key(b"privacy-pass", ENGINE_ID, AUTH_PROTOCOLS[auth_name],
                    PRIV_PROTOCOLS[priv_name])
    assert len(ours) == PRIV_PROTOCOLS[priv_name].key_size
    assert ours == bytes(expected)


def test_key_extensions_differ() -> None:
    """The Blumenthal and Reeder extensions agree on the first 20 octets only (SHA-1)."""
    sha = AUTH_PROTOCOLS["SHA"]
    blumenthal = priv_key(b"privacy-pass", ENGINE_ID, sha, PRIV_PROTOCOLS["AES256"])
    reeder = priv_key(b"privacy-pass", ENGINE_ID, sha, PRIV_PROTOCOLS["AES256C"])
    assert blumenthal[:20] == reeder[:20]
    assert blumenthal[20:] != reeder[20:]


@pytest.mark.parametrize("name", sorted(AUTH_PROTOCOLS))
def test_digest_is_the_truncated_hmac_pysnmp_computes(name: str) -> None:
    auth = AUTH_PROTOCOLS[name]
    key = auth_key(b"auth-pass-phrase", ENGINE_ID, auth)
    user = UsmUser(b"u", auth, MacKey(auth, key), None, None, "read", None)
    out = Outgoing(message_id=1, max_size=65507, flags=FLAG_AUTH, engine_id=ENGINE_ID,
                   boots=3, engine_time=77, user=b"u", mac_length=auth.mac_length,
                   priv_params=b"")
    scoped = encode_scoped_pdu(ENGINE_ID, b"", GET_PDU)
    sealed = seal_message(out, user, scoped)
    header = read_header(sealed)
    assert isinstance(header, V3Message)
    unsigned = header.without_mac(sealed)
    expected = PYSNMP_AUTH_SERVICE[name].authenticate_outgoing_message(
        rfc1902.OctetString(key), unsigned)
    assert bytes(expected) == sealed
    assert len(message_digest(auth, key, unsigned)) == auth.mac_length


@pytest.mark.parametrize("priv_name", sorted(PRIV_PROTOCOLS))
def test_privacy_round_trips_through_pysnmp(priv_name: str) -> None:
    key = priv_key(b"privacy-pass", ENGINE_ID, AUTH_PROTOCOLS["SHA256"], PRIV_PROTOCOLS[priv_name])
    ours = PrivKey(PRIV_PROTOCOLS[priv_name], key)
    salt = bytes.fromhex("0000000705060708")  # DES: boots 7 || a counter
    plaintext = encode_scoped_pdu(ENGINE_ID, b"ctx", GET_PDU)
    ciphertext = ours.encrypt(7, 123456, salt, plaintext)
    service = PYSNMP_PRIV[priv_name]
    recovered = service.decrypt_data(rfc1902.OctetString(key),
                                     (7, 123456, rfc1902.OctetString(salt)),
                                     rfc1902.OctetString(ciphertext))
    # DES pads to whole blocks: what follows the scoped PDU is padding.
    assert bytes(recovered)[:len(plaintext)] == plaintext
    theirs, their_salt = service.encrypt_data(rfc1902.OctetString(key), (7, 99, None), plaintext)
    assert ours.decrypt(7, 99, bytes(their_salt), bytes(theirs))[:len(plaintext)] == plaintext


@pytest.mark.parametrize("name", sorted(AUTH_PROTOCOLS))
def test_a_prepared_hmac_key_gives_each_message_its_own_digest(name: str) -> None:
    """The hash states after the padded key blocks, copied per message, give RFC 2104's
    HMAC (RFC 3414 6.3.1, RFC 7860 4.2.1) for every message in a row, whole or in parts."""
    auth = AUTH_PROTOCOLS[name]
    key = auth_key(b"auth-pass-phrase", ENGINE_ID, auth)
    mac = MacKey(auth, key)
    messages = [b"", b"first message", bytes(range(256)) * 11, b"second message"]
    for message in messages + messages[::-1]:
        expected = hmac.new(key, message, auth.hash_name).digest()[:auth.mac_length]
        assert mac.digest(message) == expected
        assert mac.digest(message[:7], message[7:]) == expected
        assert message_digest(auth, key, message) == expected


@pytest.mark.parametrize("name", sorted(AUTH_PROTOCOLS))
def test_a_received_mac_is_checked_in_place(name: str) -> None:
    auth = AUTH_PROTOCOLS[name]
    mac = MacKey(auth, auth_key(b"auth-pass-phrase", ENGINE_ID, auth))
    n = auth.mac_length
    for head, tail in ((b"h" * 40, b"t" * 300), (b"", b"t"), (b"h", b"")):
        unsigned = head + bytes(n) + tail
        signed = head + mac.digest(unsigned) + tail
        assert mac.signed(signed, len(head), len(head) + n)
        assert mac.matches(unsigned, signed[len(head):len(head) + n])
        forged = head + bytes(n) + tail
        assert not mac.signed(forged, len(head), len(head) + n)
        assert not mac.signed(signed, len(head), len(head) + n - 1)  # a MAC of another length


@pytest.mark.parametrize("priv_name", ["AES", "AES192", "AES256", "AES192C", "AES256C"])
def test_reused_aes_contexts_give_what_a_cipher_per_message_gives(priv_name: str) -> None:
    """The contexts made once and moved to each message's IV: every length around
    the block size, encryptions and decryptions interleaved, against a fresh
    context per message (RFC 3826 3.1.2.1's IV)."""
    key = priv_key(b"privacy-pass", ENGINE_ID, AUTH_PROTOCOLS["SHA256"], PRIV_PROTOCOLS[priv_name])
    ours = PrivKey(PRIV_PROTOCOLS[priv_name], key)
    rng = random.Random(priv_name)
    lengths = [0, 1, 15, 16, 17, 31, 32, 33, 100, 2500, 65000]
    for length in lengths + [rng.randrange(4000) for _ in range(300)]:
        boots, engine_time = rng.randrange(1 << 31), rng.randrange(1 << 31)
        salt, data = rng.randbytes(8), rng.randbytes(length)
        iv = boots.to_bytes(4, "big") + engine_time.to_bytes(4, "big") + salt
        encrypted = Cipher(algorithms.AES(key), CFB(iv)).encryptor().update(data)
        decrypted = Cipher(algorithms.AES(key), CFB(iv)).decryptor().update(data)
        if rng.random() < 0.5:
            assert ours.encrypt(boots, engine_time, salt, data) == encrypted
            assert ours.decrypt(boots, engine_time, salt, data) == decrypted
        else:
            assert ours.decrypt(boots, engine_time, salt, data) == decrypted
            assert ours.encrypt(boots, engine_time, salt, data) == encrypted


def test_reused_aes_contexts_survive_a_failed_message() -> None:
    key = bytes(range(16))
    ours = PrivKey(PRIV_PROTOCOLS["AES"], key)
    with pytest.raises(ValueError):
        ours.encrypt(1, 2, b"short", b"plaintext")  # refused before the contexts move
    with pytest.raises(TypeError):
        ours.encrypt(1, 2, bytes(8), "not octets")  # type: ignore[arg-type]  # str on purpose
    with pytest.raises(TypeError):
        ours.decrypt(1, 2, bytes(8), "not octets")  # type: ignore[arg-type]  # str on purpose
    iv = (1).to_bytes(4, "big") + (2).to_bytes(4, "big") + bytes(8)
    for data in (b"x" * 5, b"y" * 40):
        assert ours.encrypt(1, 2, bytes(8), data) == Cipher(
            algorithms.AES(key), CFB(iv)).encryptor().update(data)
        assert ours.decrypt(1, 2, bytes(8), data) == Cipher(
            algorithms.AES(key), CFB(iv)).decryptor().update(data)


@pytest.mark.parametrize("priv_name", sorted(PRIV_PROTOCOLS))
def test_a_salt_of_the_wrong_size_cannot_decrypt(priv_name: str) -> None:
    with pytest.raises(ValueError):
        PrivKey(PRIV_PROTOCOLS[priv_name], bytes(32)).decrypt(1, 1, b"short", bytes(16))


def test_des_ciphertext_must_be_whole_blocks() -> None:
    with pytest.raises(ValueError):
        PrivKey(PRIV_PROTOCOLS["DES"], bytes(16)).decrypt(1, 1, bytes(8), bytes(17))


def test_salts_do_not_repeat() -> None:
    counter = SaltCounter()
    salts = {counter.take() for _ in range(1000)}
    assert len(salts) == 1000 and all(len(salt) == 8 for salt in salts)


class FixedClock:
    def __init__(self, boots: int, engine_time: int) -> None:
        self._boots, self._time = boots, engine_time

    def boots(self) -> int:
        return self._boots

    def time(self) -> int:
        return self._time


class UserConfig:
    """An agent.config.User look-alike."""

    def __init__(self, name: str, auth: str, auth_key: str, priv: str | None = None,
                 priv_key: str | None = None) -> None:
        self.name, self.auth, self.auth_key = name, auth, auth_key
        self.priv, self.priv_key = priv, priv_key
        self.access, self.view = "read", None


USERS = localize_users([UserConfig("authonly", "SHA", "authonly-key"),
                        UserConfig("reader", "SHA256", "reader-auth-key", "AES256",
                                   "reader-priv-key"),
                        UserConfig("legacy", "MD5", "legacy-auth", "DES", "legacy-priv")],
                       ENGINE_ID)
CLOCK = FixedClock(5, 1000)


def pysnmp_request(**overrides: object) -> bytes:
    """An authNoPriv GET built with pysnmp's ASN.1 classes (tests/support/wire_v3)."""
    arguments: dict[str, Any] = dict(user=b"authonly", engine_id=ENGINE_ID, boots=5,
                                     engine_time=1000, auth=Auth("SHA", "authonly-key"))
    arguments.update(overrides)
    return v3_message("get", [(1, 3, 6, 1, 2, 1, 1, 5, 0)], **arguments)


def test_a_pysnmp_built_request_is_accepted() -> None:
    result = accept(pysnmp_request(), ENGINE_ID, USERS, CLOCK)
    assert isinstance(result, Accepted)
    assert result.request.message_id == 7001 and result.level == 2
    assert result.scoped.context_engine_id == ENGINE_ID and result.scoped.pdu.tag == 0xA0


@pytest.mark.parametrize(("overrides", "refusal"), [
    (dict(engine_id=bytes.fromhex("8000000001020304")), Refusal.UNKNOWN_ENGINE_ID),
    (dict(user=b"nobody"), Refusal.UNKNOWN_USER),
    (dict(user=b"legacy", auth=Auth("SHA", "legacy-auth")), Refusal.WRONG_DIGEST),
    (dict(auth=Auth("SHA", "wrong-key!")), Refusal.WRONG_DIGEST),
    (dict(boots=4), Refusal.NOT_IN_TIME_WINDOW),
    (dict(engine_time=1151), Refusal.NOT_IN_TIME_WINDOW),
    (dict(engine_time=849), Refusal.NOT_IN_TIME_WINDOW),
    (dict(flags=FLAG_AUTH | FLAG_PRIV | FLAG_REPORTABLE, ciphertext=b"\x00" * 16),
     Refusal.UNSUPPORTED_LEVEL),
    (dict(flags=FLAG_PRIV | FLAG_REPORTABLE, auth=None, ciphertext=b"\x00" * 16),
     Refusal.INVALID_MESSAGE),
    (dict(user=b"reader", auth=Auth("SHA256", "reader-auth-key"), flags=FLAG_AUTH | FLAG_PRIV,
          ciphertext=b"\x00" * 16, priv_params=b"short"), Refusal.DECRYPTION_ERROR),
    (dict(user=b"legacy", auth=Auth("MD5", "legacy-auth"), flags=FLAG_AUTH | FLAG_PRIV,
          ciphertext=b"\x00" * 15, priv_params=bytes(8)), Refusal.DECRYPTION_ERROR),
    (dict(user=b"reader", auth=Auth("SHA256", "reader-auth-key"), flags=FLAG_AUTH | FLAG_PRIV,
          ciphertext=b"\x00" * 16, priv_params=bytes(8)), Refusal.PARSE_ERROR),
])
def test_refusals_name_the_rfc3414_step(overrides: dict[str, object], refusal: Refusal) -> None:
    assert accept(pysnmp_request(**overrides), ENGINE_ID, USERS, CLOCK) is refusal


@pytest.mark.parametrize(("overrides", "level"), [
    (dict(auth=None, flags=FLAG_REPORTABLE), 1),  # noAuthNoPriv from a user with keys
    (dict(user=b"reader", auth=Auth("SHA256", "reader-auth-key")), 2),  # below its authPriv
])
def test_a_level_below_the_users_passes_usm(overrides: dict[str, object], level: int) -> None:
    # USM accepts what the user's keys can do; VACM refuses it (authorizationError).
    result = accept(pysnmp_request(**overrides), ENGINE_ID, USERS, CLOCK)
    assert isinstance(result, Accepted) and result.level == level


def test_the_time_window_is_150_seconds_either_way() -> None:
    for engine_time in (850, 1150):
        assert isinstance(accept(pysnmp_request(engine_time=engine_time), ENGINE_ID, USERS,
                                 CLOCK), Accepted)


def test_latched_boots_refuse_everything() -> None:
    latched = FixedClock(2147483647, 1000)
    request = pysnmp_request(boots=2147483647)
    assert accept(request, ENGINE_ID, USERS, latched) is Refusal.NOT_IN_TIME_WINDOW


@pytest.mark.parametrize("data", [b"", b"\x30\x00", b"\x30\x03\x02\x01\x01",
                                  bytes.fromhex("3082ffff")])
def test_malformed_messages_are_refused_not_raised(data: bytes) -> None:
    assert accept(data, ENGINE_ID, USERS, CLOCK) is Refusal.PARSE_ERROR


def test_a_response_sealed_here_decodes_with_pysnmp() -> None:
    """authPriv: pysnmp's ASN.1 classes read the message, its AES service the data."""
    reader = USERS[b"reader"]
    request = accept(pysnmp_request(), ENGINE_ID, USERS, CLOCK)
    assert isinstance(request, Accepted)
    as_reader = Accepted(request.request, reader, 3, request.scoped)
    sealer = Sealer(ENGINE_ID, CLOCK, 65507)
    scoped = encode_scoped_pdu(ENGINE_ID, b"", GET_PDU)
    sealed = sealer.seal(as_reader, scoped)
    message, rest = decoder.decode(sealed, asn1Spec=SNMPv3Message())
    assert not rest
    header = message.getComponentByPosition(1)
    assert header.getComponentByPosition(2).asNumbers() == (FLAG_AUTH | FLAG_PRIV,)
    params, _ = decoder.decode(bytes(message.getComponentByPosition(2)),
                               asn1Spec=UsmSecurityParameters())
    assert (bytes(params[0]), int(params[1]), int(params[2]), bytes(params[3])) == (
        ENGINE_ID, 5, 1000, b"reader")
    ciphertext = message.getComponentByPosition(3).getComponent()
    key = priv_key(b"reader-priv-key", ENGINE_ID, AUTH_PROTOCOLS["SHA256"],
                   PRIV_PROTOCOLS["AES256"])
    plaintext = PYSNMP_PRIV["AES256"].decrypt_data(
        rfc1902.OctetString(key), (5, 1000, params[5]), ciphertext)
    assert bytes(plaintext) == scoped
    # And it is accepted back as a request would be (same keys, same clock).
    assert isinstance(accept(sealed, ENGINE_ID, USERS, CLOCK), Accepted)


def test_the_budget_leaves_room_for_the_whole_message() -> None:
    request = accept(pysnmp_request(), ENGINE_ID, USERS, CLOCK)
    assert isinstance(request, Accepted)
    for limit in (484, 1500, 65507):
        sealer = Sealer(ENGINE_ID, CLOCK, limit)
        budget = sealer.scoped_pdu_budget(request)
        filler = budget
        scoped = encode_scoped_pdu(ENGINE_ID, b"", encode_element(0xA2, bytes(filler)))
        while len(scoped) > budget:
            filler -= 1
            scoped = encode_scoped_pdu(ENGINE_ID, b"", encode_element(0xA2, bytes(filler)))
        assert budget - len(scoped) <= 1  # a length's octet count may not allow exactly
        assert len(sealer.seal(request, scoped)) <= limit


@pytest.mark.parametrize("request_id", [0, 1, 127, 128, 255, 256, 65535, 2147483647, -1, -128,
                                        -129, -2147483648])
def test_the_scoped_response_is_the_scoped_pdu_of_the_response_pdu(request_id: int) -> None:
    for context in ((ENGINE_ID, b""), (b"", b"0002c90300000001"), (ENGINE_ID, b"x" * 120)):
        for errors in ((0, 0), (5, 1), (18, 127)):
            for size in (0, 3, 120, 121, 122, 127, 128, 250, 255, 256, 4090, 4096, 70000):
                varbinds = bytes(size)
                assert encode_scoped_response(*context, request_id, *errors, varbinds) == \
                    encode_scoped_pdu(*context, encode_response_pdu(request_id, *errors, varbinds))


@pytest.mark.parametrize("flags", [0, FLAG_AUTH, FLAG_AUTH | FLAG_PRIV])
def test_messages_are_framed_at_every_length(flags: int) -> None:
    """Written around data of every size class, with integers and names of every
    length: what pysnmp's ASN.1 classes read back, and `overhead` its size."""
    mac_length = 24 if flags & FLAG_AUTH else 0
    salt = bytes(range(8)) if flags & FLAG_PRIV else b""
    for user in (b"", b"u", b"n" * 32):
        for message_id, engine_time in ((0, 0), (127, 128), (32768, 8388608),
                                        (2147483647, 2147483647)):
            out = Outgoing(message_id, 65507, flags, ENGINE_ID, 7, engine_time, user, mac_length,
                           salt)
            for size in (10, 70, 120, 126, 127, 128, 200, 255, 256, 4000, 4096, 65000):
                # The ciphertext, or a scoped PDU of about that size (its context name).
                data = bytes(size) if flags & FLAG_PRIV else encode_scoped_pdu(
                    ENGINE_ID, b"c" * size, GET_PDU)
                message, mac_at = encode_v3(out, data)
                assert len(message) == overhead(out, len(data)) + len(data)
                assert message[mac_at:mac_at + mac_length] == bytes(mac_length)
                decoded, rest = decoder.decode(message, asn1Spec=SNMPv3Message())
                assert not rest
                params, _ = decoder.decode(bytes(decoded.getComponentByPosition(2)),
                                           asn1Spec=UsmSecurityParameters())
                header = decoded.getComponentByPosition(1)
                assert int(header.getComponentByPosition(0)) == message_id
                assert (bytes(params[0]), int(params[1]), int(params[2]), bytes(params[3]),
                        bytes(params[4]), bytes(params[5])) == (
                    ENGINE_ID, 7, engine_time, user, bytes(mac_length), salt)
                body = decoded.getComponentByPosition(3).getComponent()
                if flags & FLAG_PRIV:
                    assert bytes(body) == data
                else:
                    assert bytes(body.getComponentByPosition(1)) == b"c" * size


def test_octets_after_a_scoped_pdu_are_padding_but_inside_it_are_malformed() -> None:
    scoped = bytes.fromhex("301104000400a00b02010102010002010030000000")[:19]
    engine, name, pdu = read_scoped_pdu(scoped + b"\x00\x00")
    assert (engine, name, pdu.tag, pdu.request_id) == (b"", b"", 0xA0, 1)
    with pytest.raises(HeaderError):
        read_scoped_pdu(bytes.fromhex("301304000400a00b0201010201000201003000") + b"\x05\x00")


def test_each_report_carries_its_own_user_boots_and_time() -> None:
    # The security parameters of the last Report are kept for the next: one
    # written for another user, MAC, boots or second must not reuse them.
    engine_id = bytes.fromhex("800000000102030405")
    writer = ReportWriter(engine_id, 65507)
    signer = localize_users([UserConfig("signer", "SHA256", "signer-auth-key")],
                            engine_id)[b"signer"]
    counter = encode_element(0x06, bytes.fromhex("2b060106030f01010200"))
    cases = [(b"alice", None, 1, 100), (b"alice", None, 1, 100), (b"alice", None, 1, 101),
             (b"alice", None, 2, 101), (b"bob", None, 2, 101), (b"signer", signer.mac, 2, 101),
             (b"alice", None, 2, 101)]
    for number, (user, mac, boots, engine_time) in enumerate(cases):
        request = V3Message(number, 65507, FLAG_REPORTABLE, 3, user, engine_id)
        report = read_header(writer.write(request, boots, engine_time, None, 7, counter, number,
                                          mac))
        assert isinstance(report, V3Message)
        assert (report.message_id, report.user_name, report.boots, report.engine_time) == (
            number, user, boots, engine_time)
        assert report.flags == (FLAG_AUTH if mac is not None else 0)
        assert report.auth_params is not None
        start, end = report.auth_params
        assert end - start == (mac.mac_length if mac is not None else 0)

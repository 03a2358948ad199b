"""USM incoming processing for an authoritative engine, and the sealed answer.

RFC 3414 3.2 steps 1-8 in order: parse, engine ID, user, security level,
digest, time window, decryption. `accept` has no side effect: a message it
refuses, with the step that refused it, is left to pysnmp's USM, which
counts it and answers the Report exactly as the agent always has, so the
two paths cannot disagree on a Report or count an error twice. What it
accepts is counted by neither USM (RFC 3414 counts only failures).

Keys are localized once per engine ID (and user set), never per message.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from .header import GET, GET_BULK, GET_NEXT, INFORM, INTEGER, SET, HeaderError, read_tlv
from .usm_crypto import SaltCounter, decrypt, digest_matches, encrypt, message_digest
from .usm_keys import (AUTH_PROTOCOLS, PRIV_PROTOCOLS, AuthProtocol, PrivProtocol, auth_key,
                       priv_key)
from .usm_message import (FLAG_AUTH, FLAG_PRIV, FLAG_REPORTABLE, Outgoing, ScopedPdu, V3Request,
                          encode_v3, overhead, parse_scoped_pdu, parse_v3)

NO_AUTH_NO_PRIV, AUTH_NO_PRIV, AUTH_PRIV = 1, 2, 3
MAX_BOOTS = 2147483647  # RFC 3414 2.2.2: latched, nothing authenticated is in time
TIME_WINDOW = 150  # seconds, RFC 3414 2.2.3
# RFC 3411 SnmpEngineID: 5 to 32 octets; anything else asks for discovery.
ENGINE_ID_LENGTHS = range(5, 33)
MAX_USER_NAME = 32  # RFC 3414 SnmpAdminString (SIZE(0..32)); longer: a parse error
# RFC 3411's Confirmed Class: what a reportable message may carry.
CONFIRMED_PDUS = frozenset({GET, GET_NEXT, GET_BULK, SET, INFORM})
INT32_MIN, INT32_MAX = -(1 << 31), (1 << 31) - 1


class Refusal(enum.Enum):
    """Why a message is left to pysnmp (the RFC 3414 3.2 step, or not ours to take)."""

    MALFORMED = "parse error"
    UNKNOWN_ENGINE_ID = "usmStatsUnknownEngineIDs"
    UNKNOWN_USER = "usmStatsUnknownUserNames"  # or a user this path does not serve
    UNSUPPORTED_LEVEL = "usmStatsUnsupportedSecLevels"
    WRONG_DIGEST = "usmStatsWrongDigests"
    NOT_IN_TIME_WINDOW = "usmStatsNotInTimeWindows"
    DECRYPTION_ERROR = "usmStatsDecryptionErrors"
    BELOW_USER_LEVEL = "below the user's configured level (VACM decides)"
    NO_AUTH = "noAuthNoPriv (discovery or VACM decides)"


@dataclass(frozen=True, slots=True)
class UsmUser:
    """A user's keys localized to this engine's ID."""

    name: bytes
    auth: AuthProtocol
    auth_key: bytes
    priv: PrivProtocol | None
    priv_key: bytes | None
    access: str
    view: str | None

    @property
    def level(self) -> int:
        return AUTH_PRIV if self.priv is not None else AUTH_NO_PRIV


class UserEntry(Protocol):
    """What agent.config.User offers (a Protocol keeps wire/ free of agent/)."""

    name: str
    auth: str
    auth_key: str
    priv: str | None
    priv_key: str | None
    access: str
    view: str | None


def localize_users(users: Iterable[UserEntry], engine_id: bytes) -> dict[bytes, UsmUser]:
    """The users this path serves (AES privacy or none), keyed by user name.

    A user with a privacy protocol this path lacks (DES) is left out: its
    requests are unknown here and pysnmp serves them.
    """
    table: dict[bytes, UsmUser] = {}
    for user in users:
        auth = AUTH_PROTOCOLS[user.auth]
        key = auth_key(user.auth_key.encode("utf-8"), engine_id, auth)
        priv = localized = None
        if user.priv is not None:
            if user.priv not in PRIV_PROTOCOLS or user.priv_key is None:
                continue
            priv = PRIV_PROTOCOLS[user.priv]
            localized = priv_key(user.priv_key.encode("utf-8"), engine_id, auth, priv)
        name = user.name.encode("utf-8")
        table[name] = UsmUser(name, auth, key, priv, localized, user.access, user.view)
    return table


class EngineClock(Protocol):
    """snmpEngineBoots and snmpEngineTime of the engine that answers."""

    def boots(self) -> int: ...

    def time(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Accepted:
    """An authenticated (and decrypted) request, ready for the responder."""

    request: V3Request
    user: UsmUser
    level: int
    scoped: ScopedPdu


def accept(data: bytes, engine_id: bytes, users: dict[bytes, UsmUser],
           clock: EngineClock) -> Accepted | Refusal:
    """RFC 3414 3.2 for `data`, or the first step that refuses it."""
    try:
        request = parse_v3(data)
        level = request.level
    except (HeaderError, ValueError):
        return Refusal.MALFORMED
    if level < AUTH_NO_PRIV:
        return Refusal.NO_AUTH
    if request.engine_id != engine_id:  # step 3
        return Refusal.UNKNOWN_ENGINE_ID
    user = users.get(request.user)  # step 4
    if user is None:
        return Refusal.UNKNOWN_USER
    if level > user.level:  # step 5: no key for that level
        return Refusal.UNSUPPORTED_LEVEL
    mac = request.mac(data)  # step 6
    if len(mac) != user.auth.mac_length or not digest_matches(
            user.auth, user.auth_key, request.without_mac(data), mac):
        return Refusal.WRONG_DIGEST
    boots = clock.boots()  # step 7
    if (boots == MAX_BOOTS or request.boots != boots
            or abs(request.engine_time - clock.time()) > TIME_WINDOW):
        return Refusal.NOT_IN_TIME_WINDOW
    if level < user.level:
        return Refusal.BELOW_USER_LEVEL
    plaintext = request.data
    if level == AUTH_PRIV:  # step 8
        assert user.priv_key is not None
        try:
            plaintext = decrypt(user.priv_key, request.boots, request.engine_time,
                                request.priv_params, request.data)
        except ValueError:
            return Refusal.DECRYPTION_ERROR
    try:
        scoped = parse_scoped_pdu(plaintext)
    except HeaderError:
        # pysnmp counts a ciphertext that does not decrypt to a ScopedPDU
        # as a decryption error, a plaintext one as a parse error.
        return Refusal.DECRYPTION_ERROR if level == AUTH_PRIV else Refusal.MALFORMED
    return Accepted(request, user, level, scoped)


@dataclass(frozen=True, slots=True)
class Unauthenticated:
    """A request refused before any key vouched for it: what its Report needs."""

    refusal: Refusal
    request: V3Request
    request_id: int  # 0 when the scoped PDU is encrypted (it cannot be read)
    # The request's own contextEngineID and contextName, echoed by a
    # discovery Report; None: this engine's ID and the default context.
    context: tuple[bytes, bytes] | None
    answered: bool  # False: counted and dropped, no Report


def refuse_unauthenticated(data: bytes, engine_id: bytes, user_names: frozenset[bytes],
                           users: dict[bytes, UsmUser]) -> Unauthenticated | None:
    """RFC 3414 3.2 steps 3-6 for a request no key has vouched for yet.

    The refusals that need no key (discovery, a foreign engine ID, an
    unknown user, a level the user has no key for) and a wrong digest, as
    the agent's pysnmp USM answers them (same Report, same counter), at a
    fraction of its cost. None for everything else: an authentic message,
    a user this path has no key for (DES), noAuthNoPriv from a known user,
    or anything it cannot read, which pysnmp then decides.
    A request without the reportable flag is counted and gets no Report
    (RFC 3412 7.1.3b).
    """
    try:
        request = parse_v3(data)
        level = request.level
    except (HeaderError, ValueError):
        return None
    if len(request.user) > MAX_USER_NAME:
        return None
    scoped: ScopedPdu | None = None
    request_id = 0
    if level < AUTH_PRIV:
        try:
            scoped = parse_scoped_pdu(request.data)
            request_id = _confirmed_request_id(scoped.pdu)
        except HeaderError:
            return None
    reportable = bool(request.flags & FLAG_REPORTABLE)
    refusal = _refusal(request, level, data, engine_id, user_names, users)
    if refusal is None:
        return None
    context = None
    if refusal is Refusal.UNKNOWN_ENGINE_ID and len(request.engine_id) not in ENGINE_ID_LENGTHS:
        # Discovery: only a noAuthNoPriv one is answered, in the request's own context.
        if scoped is None or level != NO_AUTH_NO_PRIV:
            reportable = False
        else:
            context = (scoped.context_engine_id or engine_id, scoped.context_name)
    return Unauthenticated(refusal, request, request_id, context, reportable)


def _refusal(request: V3Request, level: int, data: bytes, engine_id: bytes,
             user_names: frozenset[bytes], users: dict[bytes, UsmUser]) -> Refusal | None:
    if request.engine_id != engine_id:  # step 3
        return Refusal.UNKNOWN_ENGINE_ID
    if request.user not in user_names:  # step 4
        return Refusal.UNKNOWN_USER
    user = users.get(request.user)
    if user is None or level == NO_AUTH_NO_PRIV:
        return None
    if level > user.level:  # step 5
        return Refusal.UNSUPPORTED_LEVEL
    mac = request.mac(data)  # step 6
    if len(mac) != user.auth.mac_length or not digest_matches(
            user.auth, user.auth_key, request.without_mac(data), mac):
        return Refusal.WRONG_DIGEST
    return None


def _confirmed_request_id(pdu: bytes) -> int:
    """The request-id of a Confirmed Class PDU (the rest is the prefilter's to check)."""
    element = read_tlv(pdu, 0, len(pdu))
    if element.tag not in CONFIRMED_PDUS:
        raise HeaderError("not a confirmed PDU")
    request_id = read_tlv(pdu, element.start, element.end)
    if request_id.tag != INTEGER or not 1 <= request_id.end - request_id.start <= 4:
        raise HeaderError("bad request-id")
    return int.from_bytes(pdu[request_id.start:request_id.end], "big", signed=True)


class Sealer:
    """Builds authenticated (and encrypted) responses to accepted requests."""

    def __init__(self, engine_id: bytes, clock: EngineClock, max_size: int) -> None:
        self.engine_id = engine_id
        self.clock = clock
        self.max_size = max_size  # snmpEngineMaxMessageSize
        self._salts = SaltCounter()

    def _outgoing(self, accepted: Accepted, salt: bytes) -> Outgoing:
        request, user = accepted.request, accepted.user
        flags = FLAG_AUTH | (FLAG_PRIV if accepted.level == AUTH_PRIV else 0)
        return Outgoing(message_id=request.message_id, max_size=self.max_size, flags=flags,
                        engine_id=self.engine_id, boots=self.clock.boots(),
                        engine_time=self.clock.time(), user=user.name,
                        mac_length=user.auth.mac_length, priv_params=salt)

    def scoped_pdu_budget(self, accepted: Accepted) -> int:
        """The largest ScopedPDU element a response to `accepted` may carry."""
        limit = min(accepted.request.max_size, self.max_size)
        salt = bytes(8) if accepted.level == AUTH_PRIV else b""
        # Measured at the limit itself: the lengths' own octets grow with it.
        return limit - overhead(self._outgoing(accepted, salt), limit)

    def seal(self, accepted: Accepted, scoped_pdu: bytes) -> bytes:
        """The response message carrying the ScopedPDU element `scoped_pdu`."""
        salt = self._salts.take() if accepted.level == AUTH_PRIV else b""
        return seal_message(self._outgoing(accepted, salt), accepted.user, scoped_pdu)


def seal_message(out: Outgoing, user: UsmUser, scoped_pdu: bytes) -> bytes:
    """`out` with `scoped_pdu`, encrypted if its flags say so, then authenticated."""
    data = scoped_pdu
    if out.flags & FLAG_PRIV:
        assert user.priv_key is not None
        data = encrypt(user.priv_key, out.boots, out.engine_time, out.priv_params, scoped_pdu)
    message, mac_at = encode_v3(out, data)
    mac = message_digest(user.auth, user.auth_key, message)
    return message[:mac_at] + mac + message[mac_at + len(mac):]

"""USM incoming processing for an authoritative engine, and the sealed answer.

`process` takes a message the strict reader (ibsnmp.wire.header) has read through the
security steps in the RFCs' order and returns the authenticated, decrypted request, or the
refusal with what its Report needs; it has no side effect and counts nothing (the caller
does, once). Keys are localized once per engine ID (and user set), never per message.
`Sealer` writes the authenticated (and encrypted) answers.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NamedTuple, Protocol

from .header import (AUTH_NO_PRIV, AUTH_PRIV, FLAG_AUTH, FLAG_PRIV, FLAG_REPORTABLE, GET,
                     GET_BULK, GET_NEXT, INFORM, NO_AUTH_NO_PRIV, SET, USM, PduHeader, V3Message, read_header, read_scoped_pdu)
from .ber import HeaderError
from .usm_crypto import MacKey, PrivKey, SaltCounter
from .usm_keys import AUTH_PROTOCOLS, PRIV_PROTOCOLS, AuthProtocol, auth_key, priv_key
from .usm_message import (MessageTemplate, Outgoing, encode_scoped_response, message_template,
                          overhead)

MAX_BOOTS = 2147483647  # RFC 3414 2.2.2: latched, nothing authenticated is in time
TIME_WINDOW = 150  # seconds, RFC 3414 2.2.3
# RFC 3411 SnmpEngineID: 5 to 32 octets; anything else asks for discovery.
ENGINE_ID_LENGTHS = range(5, 33)
# RFC 3411's Confirmed Class: what a reportable message may carry.
CONFIRMED_PDUS = frozenset({GET, GET_NEXT, GET_BULK, SET, INFORM})
# The security level of msgFlags' auth and priv bits (priv alone is refused first).
_LEVELS = {0: NO_AUTH_NO_PRIV, FLAG_AUTH: AUTH_NO_PRIV, FLAG_AUTH | FLAG_PRIV: AUTH_PRIV}
# msgFlags of a response at each security level (never reportable: RFC 3412 6.4).
_LEVEL_FLAGS: dict[int, int] = {NO_AUTH_NO_PRIV: 0, AUTH_NO_PRIV: FLAG_AUTH, AUTH_PRIV: FLAG_AUTH | FLAG_PRIV}


_SNMPV2_MIB, _MPD_MIB, _USM_MIB = "__SNMPv2-MIB", "__SNMP-MPD-MIB", "__SNMP-USER-BASED-SM-MIB"


class Refusal(enum.Enum):
    """Why a message is not processed further: the counter it moves (as
    pysnmp names its instance: module, symbol) and whether a reportable
    request refused so gets a Report (RFC 3414 3.2)."""

    UNKNOWN_SECURITY_MODEL = (_MPD_MIB, "snmpUnknownSecurityModels", False)  # RFC 3412 7.2 step 4
    INVALID_MESSAGE = (_MPD_MIB, "snmpInvalidMsgs", False)  # RFC 3412 7.2 step 5, 6.4
    PARSE_ERROR = (_SNMPV2_MIB, "snmpInASNParseErrs", False)  # a decrypted non-ScopedPDU
    UNKNOWN_ENGINE_ID = (_USM_MIB, "usmStatsUnknownEngineIDs", True)
    UNKNOWN_USER = (_USM_MIB, "usmStatsUnknownUserNames", True)
    UNSUPPORTED_LEVEL = (_USM_MIB, "usmStatsUnsupportedSecLevels", True)
    WRONG_DIGEST = (_USM_MIB, "usmStatsWrongDigests", True)
    NOT_IN_TIME_WINDOW = (_USM_MIB, "usmStatsNotInTimeWindows", True)
    DECRYPTION_ERROR = (_USM_MIB, "usmStatsDecryptionErrors", True)

    def __init__(self, module: str, counter_name: str, reported: bool) -> None:
        # Plain attributes: read for every refused datagram (an Enum's
        # hash and `.value` cost more than the rest of a refusal).
        self.counter = (module, counter_name)
        self.reported = reported


@dataclass(frozen=True, slots=True)
class UsmUser:
    """A user's keys localized to this engine's ID, ready for use."""

    name: bytes
    auth: AuthProtocol
    mac: MacKey
    priv: PrivKey | None
    priv_name: str | None
    access: str
    view: str | None

    @property
    def level(self) -> int:
        return AUTH_PRIV if self.priv is not None else AUTH_NO_PRIV


class UserEntry(Protocol):
    """What agent.config.User offers (a Protocol keeps wire/ free of agent/).
    Read-only members: User is frozen, and its access and view are narrower str."""

    @property
    def name(self) -> str: ...
    @property
    def auth(self) -> str: ...
    @property
    def auth_key(self) -> str: ...
    @property
    def priv(self) -> str | None: ...
    @property
    def priv_key(self) -> str | None: ...
    @property
    def access(self) -> str: ...
    @property
    def view(self) -> str | None: ...


def localize_users(users: Iterable[UserEntry], engine_id: bytes) -> dict[bytes, UsmUser]:
    """Every user with its keys localized to `engine_id`, keyed by user name."""
    table: dict[bytes, UsmUser] = {}
    for user in users:
        auth = AUTH_PROTOCOLS[user.auth]
        mac = MacKey(auth, auth_key(user.auth_key.encode("utf-8"), engine_id, auth))
        priv = None
        if user.priv is not None:
            assert user.priv_key is not None
            protocol = PRIV_PROTOCOLS[user.priv]
            priv = PrivKey(protocol, priv_key(user.priv_key.encode("utf-8"), engine_id, auth,
                                              protocol))
        name = user.name.encode("utf-8")
        table[name] = UsmUser(name, auth, mac, priv, user.priv, user.access, user.view)
    return table


class EngineClock(Protocol):
    """snmpEngineBoots and snmpEngineTime of the engine that answers."""

    def boots(self) -> int: ...

    def time(self) -> int: ...


class ScopedPdu(NamedTuple):
    """A scoped PDU read whole: `pdu`'s offsets are into `octets` (the
    datagram for a plaintext message, the plaintext once decrypted)."""

    octets: bytes
    context_engine_id: bytes
    context_name: bytes
    pdu: PduHeader


class Accepted(NamedTuple):
    """A request that passed every security step, ready for VACM and a responder.

    `level` may be below the user's own (noAuthNoPriv from a user with
    keys): USM accepts it, VACM decides (authorizationError).
    """

    request: V3Message
    user: UsmUser
    level: int
    scoped: ScopedPdu


class Refused(NamedTuple):
    """A message refused: what to count, and what its Report (if any) needs.

    Named tuples, these three: one is made for every SNMPv3 datagram, many
    sent by nobody with a credential."""

    refusal: Refusal
    request: V3Message
    request_id: int  # 0 when the scoped PDU could not be read
    # The request's own contextEngineID and contextName, echoed by a
    # discovery Report; None: this engine's ID and the default context.
    context: tuple[bytes, bytes] | None
    report: bool  # False: counted and dropped
    signer: UsmUser | None = None  # the Report goes out authNoPriv, signed (time window)


def process(message: V3Message, data: bytes, engine_id: bytes, users: dict[bytes, UsmUser],
            clock: EngineClock) -> Accepted | Refused:
    """The security steps for `message` (the datagram `data`): RFC 3412 7.2
    steps 4-5 (security model, msgFlags), RFC 3414 3.2 steps 3-8 (engine ID,
    user, level, digest, time window, decryption), then RFC 3412's checks of
    the scoped PDU (parse, reportable flag on an unconfirmed PDU)."""
    flags = message.flags
    reportable = bool(flags & FLAG_REPORTABLE)
    if message.security_model != USM:
        return Refused(Refusal.UNKNOWN_SECURITY_MODEL, message, 0, None, False)
    if flags & FLAG_PRIV and not flags & FLAG_AUTH:
        return Refused(Refusal.INVALID_MESSAGE, message, 0, None, False)
    level = _LEVELS[flags & (FLAG_AUTH | FLAG_PRIV)]  # V3Message.level, checked just above
    pdu = message.pdu
    request_id = 0
    if pdu is not None:
        if reportable and pdu.tag not in CONFIRMED_PDUS:
            return Refused(Refusal.INVALID_MESSAGE, message, 0, None, False)
        request_id = pdu.request_id
    if message.engine_id != engine_id:  # step 3: reported, as snmpd does, at any level
        if len(message.engine_id) in ENGINE_ID_LENGTHS or pdu is None or level != NO_AUTH_NO_PRIV:
            return Refused(Refusal.UNKNOWN_ENGINE_ID, message, request_id, None, reportable)
        # Discovery (RFC 3414 4): answered in the request's own context.
        context = (message.context_engine_id or engine_id, message.context_name)
        return Refused(Refusal.UNKNOWN_ENGINE_ID, message, request_id, context, reportable)
    user = users.get(message.user_name or b"")
    if user is None:  # step 4
        return Refused(Refusal.UNKNOWN_USER, message, request_id, None, reportable)
    if level == AUTH_PRIV and user.priv is None:  # step 5: no key for that level
        return Refused(Refusal.UNSUPPORTED_LEVEL, message, request_id, None, reportable)
    if level >= AUTH_NO_PRIV:
        auth_params = message.auth_params
        assert auth_params is not None  # read for every USM message
        if not user.mac.signed(data, *auth_params):  # step 6
            return Refused(Refusal.WRONG_DIGEST, message, request_id, None, reportable)
        boots = clock.boots()  # step 7
        if (boots == MAX_BOOTS or message.boots != boots
                or abs(message.engine_time - clock.time()) > TIME_WINDOW):
            return Refused(Refusal.NOT_IN_TIME_WINDOW, message, request_id, None, reportable,
                           user)
    if pdu is not None:
        scoped = ScopedPdu(data, message.context_engine_id, message.context_name, pdu)
        return Accepted(message, user, level, scoped)
    assert user.priv is not None
    try:  # step 8
        plaintext = user.priv.decrypt(message.boots, message.engine_time, message.priv_params,
                                      message.data)
    except ValueError:
        return Refused(Refusal.DECRYPTION_ERROR, message, request_id, None, reportable)
    try:
        context_engine_id, context_name, pdu = read_scoped_pdu(plaintext)
    except HeaderError:
        # A ciphertext that decrypts to no ScopedPDU: a parse error, dropped
        # (RFC 3412 7.2 step 8 after RFC 3414 3.2 step 8).
        return Refused(Refusal.PARSE_ERROR, message, 0, None, False)
    if reportable and pdu.tag not in CONFIRMED_PDUS:
        return Refused(Refusal.INVALID_MESSAGE, message, 0, None, False)
    return Accepted(message, user, level,
                    ScopedPdu(plaintext, context_engine_id, context_name, pdu))


class Sealer:
    """Builds authenticated (and encrypted) messages answering requests.

    Each user's HMAC and cipher are prepared once (ibsnmp.wire.usm_crypto). A
    sealed message is written around its data from what the engine's messages
    to the user share (usm_message.MessageTemplate), hashed in parts and
    joined once: its data is not copied to splice the MAC in."""

    def __init__(self, engine_id: bytes, clock: EngineClock, max_size: int) -> None:
        self.engine_id = engine_id
        self.clock = clock
        self.max_size = max_size  # snmpEngineMaxMessageSize
        self._salts = SaltCounter()

    def _outgoing(self, request: V3Message, user: UsmUser, level: int, boots: int,
                  salt: bytes) -> Outgoing:
        # Positional: one is built for every response.
        return Outgoing(request.message_id, self.max_size, _LEVEL_FLAGS[level], self.engine_id,
                        boots, self.clock.time(), user.name,
                        user.mac.mac_length if level >= AUTH_NO_PRIV else 0, salt)

    def scoped_pdu_budget(self, accepted: Accepted) -> int:
        """The largest ScopedPDU element a response to `accepted` may carry.

        It depends on the octets the header's integers take, not on their
        values (agent.fast_v3 keeps it by those)."""
        request, user, level, _ = accepted
        limit = min(request.max_size, self.max_size)
        salt = bytes(8) if level == AUTH_PRIV else b""
        out = self._outgoing(request, user, level, self.clock.boots(), salt)
        # Measured at the limit itself: the lengths' own octets grow with it.
        budget = limit - overhead(out, limit)
        if level == AUTH_PRIV and user.priv_name == "DES":
            budget -= 7  # CBC pads to whole blocks of eight octets
        return budget

    def seal(self, accepted: Accepted, scoped_pdu: bytes) -> bytes:
        """The response message carrying the ScopedPDU element `scoped_pdu`."""
        return self.seal_as(accepted.request, accepted.user, accepted.level, scoped_pdu)

    def seal_response(self, accepted: Accepted, error_status: int, error_index: int,
                      varbinds: bytes) -> bytes:
        """The Response PDU to `accepted` carrying `varbinds` (the concatenated varbind
        elements), in the request's context, sealed at its level."""
        request, user, level, scoped = accepted
        return self.seal_as(request, user, level, encode_scoped_response(
            scoped.context_engine_id, scoped.context_name, scoped.pdu.request_id, error_status,
            error_index, varbinds))

    def seal_as(self, request: V3Message, user: UsmUser, level: int, scoped_pdu: bytes) -> bytes:
        """A message answering `request` at `level`, as `user`, carrying `scoped_pdu`."""
        boots = self.clock.boots()
        salt = b""
        if level == AUTH_PRIV:
            assert user.priv is not None
            salt = user.priv.salt(self._salts, boots)
        template = message_template(self.max_size, _LEVEL_FLAGS[level], self.engine_id, boots,
                                    user.name, user.mac.mac_length if level >= AUTH_NO_PRIV else 0)
        return _seal(template, user, request.message_id, boots, self.clock.time(), salt,
                     scoped_pdu)


def seal_message(out: Outgoing, user: UsmUser, scoped_pdu: bytes) -> bytes:
    """`out` with `scoped_pdu`, encrypted if its flags say so, then authenticated."""
    template = message_template(out.max_size, out.flags, out.engine_id, out.boots, out.user,
                                out.mac_length)
    return _seal(template, user, out.message_id, out.boots, out.engine_time, out.priv_params,
                 scoped_pdu)


def _seal(template: MessageTemplate, user: UsmUser, message_id: int, boots: int,
          engine_time: int, salt: bytes, scoped_pdu: bytes) -> bytes:
    data = scoped_pdu
    if template.flags & FLAG_PRIV:
        assert user.priv is not None
        data = user.priv.encrypt(boots, engine_time, salt, scoped_pdu)
    head, tail = template.parts(message_id, engine_time, salt, len(data))
    if not template.flags & FLAG_AUTH:
        return b"".join((head, template.zeros, tail, data))
    return b"".join((head, user.mac.digest(head + template.zeros + tail, data), tail, data))


def accept(data: bytes, engine_id: bytes, users: dict[bytes, UsmUser],
           clock: EngineClock) -> Accepted | Refusal:
    """`process` for a datagram not read yet (a manager checking a response, a
    test): the accepted request, or only the refusal."""
    try:
        message = read_header(data)
    except HeaderError:
        return Refusal.PARSE_ERROR
    if not isinstance(message, V3Message):
        return Refusal.PARSE_ERROR
    result = process(message, data, engine_id, users, clock)
    return result.refusal if isinstance(result, Refused) else result

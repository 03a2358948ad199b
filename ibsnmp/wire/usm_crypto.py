"""USM message digests and privacy: AES-CFB (RFC 3826) and CBC-DES (RFC 3414 8).

Keys are prepared once per user (`MacKey`, `PrivKey`): the HMAC's padded
key blocks (RFC 2104) are hashed once and their hash states copied for
every message; a user's AES key is scheduled once, in OpenSSL contexts
that every message reuses.
"""

from __future__ import annotations

import hmac
import itertools
import secrets
import warnings
from threading import Lock

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

try:  # RFC 3826 fixes CFB; newer cryptography files it with the legacy modes
    from cryptography.hazmat.decrepit.ciphers.modes import CFB
except ImportError:  # pragma: no cover - cryptography before the move
    from cryptography.hazmat.primitives.ciphers.modes import CFB
try:  # DES as TripleDES with one key thrice (EDE with K1=K2=K3 is single DES)
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
except ImportError:  # pragma: no cover - cryptography before the move
    from cryptography.hazmat.primitives.ciphers.algorithms import TripleDES

from .usm_keys import AuthProtocol, PrivProtocol

SALT_OCTETS = 8  # msgPrivacyParameters: RFC 3826 3.1.2.1 (AES), RFC 3414 8.1.1.1 (DES)
DES_BLOCK = 8
AES_BLOCK = 16
_SALT_MASK = (1 << 64) - 1
_IPAD = bytes(octet ^ 0x36 for octet in range(256))  # RFC 2104's pads, as translate tables
_OPAD = bytes(octet ^ 0x5C for octet in range(256))
_ZEROS = bytes(AES_BLOCK)


class MacKey:
    """One user's HMAC key for one protocol, ready for many messages.

    HMAC(K, m) = H(K ^ opad || H(K ^ ipad || m)) (RFC 2104): the hash states
    after the two padded key blocks are computed here, once, and each
    message copies them; a message costs its own octets and one block.
    """

    __slots__ = ("_inner", "_outer", "_zeros", "mac_length")

    def __init__(self, auth: AuthProtocol, key: bytes) -> None:
        block = auth.new_hash().block_size
        if len(key) > block:  # RFC 2104: a longer key is hashed first (localized ones never are)
            key = auth.new_hash(key).digest()
        key = key.ljust(block, b"\0")
        self._inner = auth.new_hash(key.translate(_IPAD))
        self._outer = auth.new_hash(key.translate(_OPAD))
        self.mac_length = auth.mac_length
        self._zeros = bytes(auth.mac_length)

    def digest(self, message: bytes, rest: bytes = b"") -> bytes:
        """The truncated HMAC of a whole message whose auth parameters are zeros,
        given whole or in two consecutive parts (not joined here)."""
        inner = self._inner.copy()
        inner.update(message)
        if rest:
            inner.update(rest)
        outer = self._outer.copy()
        outer.update(inner.digest())
        return outer.digest()[:self.mac_length]

    def matches(self, message: bytes, received: bytes) -> bool:
        return len(received) == self.mac_length and hmac.compare_digest(
            self.digest(message), received)

    def signed(self, datagram: bytes, start: int, end: int) -> bool:
        """Whether the MAC at datagram[start:end] is the datagram's: `matches`
        without copying the datagram to zero its MAC."""
        if end - start != self.mac_length:
            return False
        inner = self._inner.copy()
        inner.update(datagram[:start])
        inner.update(self._zeros)
        inner.update(datagram[end:])
        outer = self._outer.copy()
        outer.update(inner.digest())
        return hmac.compare_digest(outer.digest()[:end - start], datagram[start:end])


def message_digest(auth: AuthProtocol, key: bytes, message: bytes) -> bytes:
    """The truncated HMAC of a whole message whose auth parameters are zeros."""
    return hmac.new(key, message, auth.hash_name).digest()[:auth.mac_length]


class PrivKey:
    """One user's localized privacy key for its protocol, ready for many messages.

    AES: building a cipher context schedules the key and costs more than
    encrypting a whole response does, so two contexts are built
    once, an encryptor and a decryptor, and moved to each message's IV
    (RFC 3826 3.1.2.1: boots || time || salt) instead. CFB's state between
    two blocks is its feedback register, the last ciphertext block (what
    went out of the encryptor, what came into the decryptor); both are kept
    at a block boundary (each message is followed by zeros up to one) and
    the register is set by one block. Decrypting, the IV itself, taken as
    ciphertext. Encrypting, the block that encrypts to the IV: IV xor
    E(register), which the decryptor computes when given the encryptor's
    register and then the IV (its output for the IV is IV xor E(register)).
    What comes out is what a context made for the message's IV gives
    (tests/test_wire_usm.py compares them). One message at a time uses the
    contexts (a lock: another's blocks must not come between its own).

    DES (CBC, RFC 3414 8): a context per message, the key made once.
    """

    __slots__ = ("_des", "_algorithm", "_pre_iv", "_lock", "_encryptor", "_decryptor",
                 "_register")

    def __init__(self, priv: PrivProtocol, key: bytes) -> None:
        self._des = priv.cipher == "des-cbc"
        self._algorithm: TripleDES | algorithms.AES
        if self._des:
            # RFC 3414 8.1.1.1: the first 8 octets are the DES key, the last 8 the pre-IV.
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # DES is what the user configured
                self._algorithm = TripleDES(key[:DES_BLOCK] * 3)
            self._pre_iv = key[DES_BLOCK:2 * DES_BLOCK]
        else:
            self._algorithm = algorithms.AES(key)
            self._lock = Lock()
            self._reset()

    def _reset(self) -> None:
        """AES: contexts at a block boundary, the encryptor's register known (zeros)."""
        self._encryptor = Cipher(self._algorithm, CFB(_ZEROS)).encryptor()
        self._decryptor = Cipher(self._algorithm, CFB(_ZEROS)).decryptor()
        self._register = _ZEROS  # the encryptor's feedback: its last ciphertext block

    def _des_cipher(self, salt: bytes) -> Cipher[modes.CBC]:
        iv = bytes(a ^ b for a, b in zip(self._pre_iv, salt))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return Cipher(self._algorithm, modes.CBC(iv))

    def decrypt(self, boots: int, engine_time: int, salt: bytes, ciphertext: bytes) -> bytes:
        """The plaintext scoped PDU (DES: with its padding); ValueError when the
        parameters or the length cannot be decrypted (usmStatsDecryptionErrors)."""
        if len(salt) != SALT_OCTETS or not 0 <= boots < 1 << 32 \
                or not 0 <= engine_time < 1 << 32:
            raise ValueError("bad privacy parameters")
        if self._des:
            if len(ciphertext) % DES_BLOCK:
                raise ValueError("DES ciphertext not a whole number of blocks")
            decryptor = self._des_cipher(salt).decryptor()
            return decryptor.update(ciphertext) + decryptor.finalize()
        # One update: the IV taken as ciphertext, the message, zeros to a boundary.
        with self._lock:
            try:
                out = self._decryptor.update(b"".join((
                    (boots << 32 | engine_time).to_bytes(8, "big"), salt, ciphertext,
                    _ZEROS[:-len(ciphertext) % AES_BLOCK])))
            except BaseException:
                self._reset()  # never leave a context at an unknown state
                raise
        return out[AES_BLOCK:AES_BLOCK + len(ciphertext)]

    def encrypt(self, boots: int, engine_time: int, salt: bytes, plaintext: bytes) -> bytes:
        if self._des:
            if len(plaintext) % DES_BLOCK:
                plaintext += bytes(DES_BLOCK - len(plaintext) % DES_BLOCK)  # RFC 3414 8.1.1.2
            encryptor = self._des_cipher(salt).encryptor()
            return encryptor.update(plaintext) + encryptor.finalize()
        if len(salt) != SALT_OCTETS:  # any other would leave the contexts off a boundary
            raise ValueError("bad privacy parameters")
        with self._lock:
            try:
                # The decryptor at the encryptor's register, then given the IV, puts
                # out the block that encrypts to the IV (its register is the IV then).
                lead = self._decryptor.update(b"".join((
                    self._register, (boots << 32 | engine_time).to_bytes(8, "big"), salt)))
                # One update: that block, the message, zeros to a boundary.
                out = self._encryptor.update(b"".join((
                    lead[AES_BLOCK:], plaintext, _ZEROS[:-len(plaintext) % AES_BLOCK])))
                self._register = out[-AES_BLOCK:]
            except BaseException:
                self._reset()
                raise
        return out[AES_BLOCK:AES_BLOCK + len(plaintext)]

    def salt(self, counter: SaltCounter, boots: int) -> bytes:
        """A fresh msgPrivacyParameters: DES's is boots || a 32-bit counter."""
        taken = counter.take()
        return boots.to_bytes(4, "big") + taken[4:] if self._des else taken


class SaltCounter:
    """Salts that never repeat under one key: a 64-bit counter from a random start.

    RFC 3826 3.1.2.1 asks that an (engine boots, engine time, salt) triple
    never be used twice with one key; a counter guarantees it within a boot.
    """

    def __init__(self) -> None:
        # itertools.count's next() is one C call: no two threads get one value.
        self._count = itertools.count(secrets.randbits(64))

    def take(self) -> bytes:
        return (next(self._count) & _SALT_MASK).to_bytes(SALT_OCTETS, "big")

"""USM message digests and privacy: AES-CFB (RFC 3826) and CBC-DES (RFC 3414 8).

Keys are prepared once per user (`MacKey`, `PrivKey`): the HMAC's padded
key blocks are hashed once and copied for every message, the cipher
chosen once.
"""

from __future__ import annotations

import hmac
import secrets
import warnings
from threading import Lock

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

try:  # RFC 3826 fixes CFB; newer cryptography files it with the legacy modes
    from cryptography.hazmat.decrepit.ciphers.modes import CFB
except ImportError:  # pragma: no cover - cryptography before the move
    from cryptography.hazmat.primitives.ciphers.modes import CFB  # type: ignore[no-redef]
try:  # DES as TripleDES with one key thrice (EDE with K1=K2=K3 is single DES)
    from cryptography.hazmat.decrepit.ciphers.algorithms import TripleDES
except ImportError:  # pragma: no cover - cryptography before the move
    from cryptography.hazmat.primitives.ciphers.algorithms import TripleDES  # type: ignore

from .usm_keys import AuthProtocol, PrivProtocol

SALT_OCTETS = 8  # msgPrivacyParameters: RFC 3826 3.1.2.1 (AES), RFC 3414 8.1.1.1 (DES)
DES_BLOCK = 8
_SALT_MODULUS = 1 << 64


class MacKey:
    """One user's HMAC key for one protocol, ready for many messages."""

    __slots__ = ("_template", "mac_length")

    def __init__(self, auth: AuthProtocol, key: bytes) -> None:
        self._template = hmac.new(key, digestmod=auth.hash_name)
        self.mac_length = auth.mac_length

    def digest(self, message: bytes) -> bytes:
        """The truncated HMAC of a whole message whose auth parameters are zeros."""
        mac = self._template.copy()
        mac.update(message)
        return mac.digest()[:self.mac_length]

    def matches(self, message: bytes, received: bytes) -> bool:
        return len(received) == self.mac_length and hmac.compare_digest(
            self.digest(message), received)


def message_digest(auth: AuthProtocol, key: bytes, message: bytes) -> bytes:
    """The truncated HMAC of a whole message whose auth parameters are zeros."""
    return hmac.new(key, message, auth.hash_name).digest()[:auth.mac_length]


class PrivKey:
    """One user's localized privacy key for its protocol."""

    __slots__ = ("_des", "_key", "_pre_iv")

    def __init__(self, priv: PrivProtocol, key: bytes) -> None:
        self._des = priv.cipher == "des-cbc"
        if self._des:
            # RFC 3414 8.1.1.1: the first 8 octets are the DES key, the last 8 the pre-IV.
            self._key, self._pre_iv = key[:DES_BLOCK] * 3, key[DES_BLOCK:2 * DES_BLOCK]
        else:
            self._key, self._pre_iv = key, b""

    def _cipher(self, boots: int, engine_time: int, salt: bytes) -> Cipher:
        if self._des:
            iv = bytes(a ^ b for a, b in zip(self._pre_iv, salt))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # DES is what the user configured
                return Cipher(TripleDES(self._key), modes.CBC(iv))
        # RFC 3826 3.1.2.1: IV = engine boots (4) || engine time (4) || salt (8).
        iv = boots.to_bytes(4, "big") + engine_time.to_bytes(4, "big") + salt
        return Cipher(algorithms.AES(self._key), CFB(iv))

    def decrypt(self, boots: int, engine_time: int, salt: bytes, ciphertext: bytes) -> bytes:
        """The plaintext scoped PDU (DES: with its padding); ValueError when the
        parameters or the length cannot be decrypted (usmStatsDecryptionErrors)."""
        if len(salt) != SALT_OCTETS or not 0 <= boots < 1 << 32 \
                or not 0 <= engine_time < 1 << 32:
            raise ValueError("bad privacy parameters")
        if self._des and len(ciphertext) % DES_BLOCK:
            raise ValueError("DES ciphertext not a whole number of blocks")
        decryptor = self._cipher(boots, engine_time, salt).decryptor()
        return decryptor.update(ciphertext) + decryptor.finalize()

    def encrypt(self, boots: int, engine_time: int, salt: bytes, plaintext: bytes) -> bytes:
        if self._des and len(plaintext) % DES_BLOCK:
            plaintext += bytes(DES_BLOCK - len(plaintext) % DES_BLOCK)  # RFC 3414 8.1.1.2
        encryptor = self._cipher(boots, engine_time, salt).encryptor()
        return encryptor.update(plaintext) + encryptor.finalize()

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
        self._next = secrets.randbits(64)
        self._lock = Lock()  # responses may be sealed from worker threads

    def take(self) -> bytes:
        with self._lock:
            value = self._next
            self._next = (value + 1) % _SALT_MODULUS
        return value.to_bytes(SALT_OCTETS, "big")

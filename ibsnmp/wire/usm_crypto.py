"""USM message digests and AES-CFB privacy (RFC 3414 6-7, RFC 7860, RFC 3826)."""

from __future__ import annotations

import hmac
import secrets
from threading import Lock

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms

try:  # RFC 3826 fixes CFB; newer cryptography files it with the legacy modes
    from cryptography.hazmat.decrepit.ciphers.modes import CFB
except ImportError:  # pragma: no cover - cryptography before the move
    from cryptography.hazmat.primitives.ciphers.modes import CFB  # type: ignore[no-redef]

from .usm_keys import AuthProtocol

SALT_OCTETS = 8  # RFC 3826 3.1.2.1: msgPrivacyParameters is the 64-bit salt
_SALT_MODULUS = 1 << 64


def message_digest(auth: AuthProtocol, key: bytes, message: bytes) -> bytes:
    """The truncated HMAC of a whole message whose auth parameters are zeros."""
    return hmac.new(key, message, auth.hash_name).digest()[:auth.mac_length]


def digest_matches(auth: AuthProtocol, key: bytes, message: bytes, received: bytes) -> bool:
    return hmac.compare_digest(message_digest(auth, key, message), received)


def _cipher(key: bytes, boots: int, engine_time: int, salt: bytes) -> Cipher:
    # RFC 3826 3.1.2.1: IV = engine boots (4) || engine time (4) || salt (8).
    iv = boots.to_bytes(4, "big") + engine_time.to_bytes(4, "big") + salt
    return Cipher(algorithms.AES(key), CFB(iv))


def decrypt(key: bytes, boots: int, engine_time: int, salt: bytes, ciphertext: bytes) -> bytes:
    """The plaintext scoped PDU; ValueError if the parameters cannot be an IV."""
    if len(salt) != SALT_OCTETS or not 0 <= boots < 1 << 32 or not 0 <= engine_time < 1 << 32:
        raise ValueError("bad privacy parameters")
    decryptor = _cipher(key, boots, engine_time, salt).decryptor()
    return decryptor.update(ciphertext) + decryptor.finalize()


def encrypt(key: bytes, boots: int, engine_time: int, salt: bytes, plaintext: bytes) -> bytes:
    encryptor = _cipher(key, boots, engine_time, salt).encryptor()
    return encryptor.update(plaintext) + encryptor.finalize()


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

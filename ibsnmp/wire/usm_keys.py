"""USM keys: pass phrase to localized key (RFC 3414 A.2, RFC 7860 9.3).

The protocols are the ones `agent.config` accepts, named as it names them.
Every key here is a secret: nothing in this module logs or formats one.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Literal

PASSPHRASE_OCTETS = 1_048_576  # RFC 3414 A.2: the pass phrase is repeated to 1 MB
_CHUNK = 64


@dataclass(frozen=True, slots=True)
class AuthProtocol:
    """An HMAC authentication protocol and its truncated MAC length."""

    name: str
    hash_name: str
    mac_length: int  # msgAuthenticationParameters octets (RFC 3414 6/7, RFC 7860 4.2)

    def new_hash(self, data: bytes = b"") -> "hashlib._Hash":
        return hashlib.new(self.hash_name, data)


AUTH_PROTOCOLS: dict[str, AuthProtocol] = {
    "MD5": AuthProtocol("MD5", "md5", 12),
    "SHA": AuthProtocol("SHA", "sha1", 12),
    "SHA224": AuthProtocol("SHA224", "sha224", 16),
    "SHA256": AuthProtocol("SHA256", "sha256", 24),
    "SHA384": AuthProtocol("SHA384", "sha384", 32),
    "SHA512": AuthProtocol("SHA512", "sha512", 48),
}

# How a privacy key longer than the auth hash's output is made:
# "blumenthal" appends H(key so far) (draft-blumenthal-aes-usm-04, net-snmp's
# AES192/AES256); "reeder" appends the key so far, hashed as a pass phrase
# and localized again (draft-reeder-snmpv3-usm-3desede, Cisco's AES192C/AES256C).
KeyExtension = Literal["blumenthal", "reeder"]


Cipher = Literal["aes-cfb", "des-cbc"]


@dataclass(frozen=True, slots=True)
class PrivProtocol:
    """A privacy protocol: AES-CFB (RFC 3826 and its 192/256-bit variants)
    or CBC-DES (RFC 3414 8), whose 16-octet key is the DES key and the pre-IV."""

    name: str
    key_size: int
    extension: KeyExtension
    cipher: Cipher = "aes-cfb"


PRIV_PROTOCOLS: dict[str, PrivProtocol] = {
    "DES": PrivProtocol("DES", 16, "blumenthal", "des-cbc"),  # every auth hash gives 16
    "AES": PrivProtocol("AES", 16, "blumenthal"),  # 128 bits never need extending
    "AES192": PrivProtocol("AES192", 24, "blumenthal"),
    "AES256": PrivProtocol("AES256", 32, "blumenthal"),
    "AES192C": PrivProtocol("AES192C", 24, "reeder"),
    "AES256C": PrivProtocol("AES256C", 32, "reeder"),
}


def hash_passphrase(passphrase: bytes, auth: AuthProtocol) -> bytes:
    """Ku: the hash of the pass phrase repeated to 1 MB (RFC 3414 A.2.1)."""
    if not passphrase:
        raise ValueError("empty pass phrase")
    # One buffer of whole repetitions that is a multiple of 64 octets long
    # would need lcm(len, 64) octets; slicing a ring is as fast and simpler.
    ring = passphrase * (_CHUNK // len(passphrase) + 2)
    hasher = auth.new_hash()
    mark = 0
    for _ in range(PASSPHRASE_OCTETS // _CHUNK):
        hasher.update(ring[mark:mark + _CHUNK])
        mark = (mark + _CHUNK) % len(passphrase)
    return hasher.digest()


def localize(key: bytes, engine_id: bytes, auth: AuthProtocol) -> bytes:
    """Kul = H(Ku || snmpEngineID || Ku) (RFC 3414 2.6)."""
    return auth.new_hash(key + engine_id + key).digest()


def auth_key(passphrase: bytes, engine_id: bytes, auth: AuthProtocol) -> bytes:
    return localize(hash_passphrase(passphrase, auth), engine_id, auth)


def priv_key(passphrase: bytes, engine_id: bytes, auth: AuthProtocol,
             priv: PrivProtocol) -> bytes:
    """The localized privacy key, extended to the cipher's key size."""
    key = auth_key(passphrase, engine_id, auth)
    while len(key) < priv.key_size:
        if priv.extension == "blumenthal":
            key += auth.new_hash(key).digest()
        else:
            key += auth_key(key, engine_id, auth)
    return key[:priv.key_size]

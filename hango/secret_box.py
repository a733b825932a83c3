"""Secrets at rest: sealed with the server key ``HANGO_SECRET_KEY`` (Fernet: AES-128-CBC + HMAC-SHA256).

The key may be any string of at least 32 characters; the Fernet key is its
SHA-256, so an operator can use a password manager's output as it is.
A value sealed under one key cannot be opened under another: rotating the key
means registering the secrets again.
"""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from cryptography.fernet import Fernet, InvalidToken

MIN_KEY_CHARS = 32


class SecretKeyMissing(RuntimeError):
    """No usable ``HANGO_SECRET_KEY``: secrets can be neither sealed nor opened."""


def _fernet(key: str | None) -> Fernet:
    if not key or len(key) < MIN_KEY_CHARS:
        raise SecretKeyMissing(
            f"storing secrets needs HANGO_SECRET_KEY (at least {MIN_KEY_CHARS} characters) on the server"
        )
    return Fernet(base64.urlsafe_b64encode(hashlib.sha256(key.encode()).digest()))


def seal(key: str | None, value: Any) -> bytes:
    """``value`` as JSON, encrypted and authenticated under ``key``."""
    return _fernet(key).encrypt(json.dumps(value).encode())


def unseal(key: str | None, token: bytes) -> Any:
    """The value ``seal`` stored; SecretKeyMissing when the key is gone or is not the one it was sealed with."""
    try:
        return json.loads(_fernet(key).decrypt(bytes(token)))
    except InvalidToken:
        raise SecretKeyMissing("the stored secrets were sealed under another HANGO_SECRET_KEY") from None

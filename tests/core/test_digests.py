"""The built-in digests give exactly what hashlib and hmac give, on either side of the size at
which `core.digests` hands bulk data to OpenSSL."""

from __future__ import annotations

import hashlib
import hmac

from hypothesis import given, settings
from hypothesis import strategies as st

from core import digests

SIZES = (0, 1, 63, 64, 65, digests.BULK_BYTES - 1, digests.BULK_BYTES, digests.BULK_BYTES + 1)


def test_sha1_and_sha256_match_hashlib_around_the_bulk_size() -> None:
    for size in SIZES:
        data = bytes(range(256)) * (size // 256) + bytes(size % 256)
        assert digests.sha1_hex(data) == hashlib.sha1(data).hexdigest(), size
        assert digests.sha256_hex(data) == hashlib.sha256(data).hexdigest(), size


@settings(max_examples=200)
@given(key=st.binary(max_size=200), message=st.binary(max_size=300))
def test_hmac_sha256_is_rfc_2104(key: bytes, message: bytes) -> None:
    assert digests.hmac_sha256(key, message) == hmac.new(key, message, hashlib.sha256).digest()


def test_blake2b_takes_a_person_and_a_size_as_hashlibs_does() -> None:
    made = digests.blake2b(b"data", digest_size=16, person=b"pitstop-scan").hexdigest()
    assert made == hashlib.blake2b(b"data", digest_size=16, person=b"pitstop-scan").hexdigest()

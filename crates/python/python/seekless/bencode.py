"""Bencode, decoded by seekless's Rust decoder (libtorrent's limits: depth
100, 2,000,000 tokens), into plain Python objects."""

import typing

from ._seekless import bencode_decode

#: What a bencoded value decodes to.
Value = typing.Union[int, bytes, typing.List[typing.Any], typing.Dict[bytes, typing.Any]]


def decode(data: typing.Union[bytes, bytearray, memoryview]) -> Value:
    """Decodes one bencoded value, the whole of ``data``: integers become
    ``int``, strings ``bytes``, lists ``list`` and dictionaries ``dict``
    with ``bytes`` keys. Raises ``ValueError`` (saying where) for
    malformed, truncated or trailing input and for input past the limits
    (integers beyond 64 bits included, as libtorrent)."""
    return bencode_decode(bytes(data))

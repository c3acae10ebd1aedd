"""Bencode, decoded by seekless's Rust decoder (libtorrent's limits: depth
100, 2,000,000 tokens), into plain Python objects."""

import typing

from ._seekless import bencode_decode

if typing.TYPE_CHECKING:
    from typing_extensions import Buffer

#: What a bencoded value decodes to.
Value = typing.Union[int, bytes, typing.List[typing.Any], typing.Dict[bytes, typing.Any]]


def decode(data: "Buffer") -> Value:
    """Decodes one bencoded value, the whole of ``data``: integers become
    ``int``, strings ``bytes``, lists ``list`` and dictionaries ``dict``
    with ``bytes`` keys. Raises ``ValueError`` (saying where) for
    malformed, truncated or trailing input and for input past the limits
    (integers beyond 64 bits included).

    ``data`` is ``bytes`` or any object exporting a C-contiguous buffer
    (``bytearray``, ``memoryview``, ``mmap``), read in place without a
    copy; a strided ``memoryview`` raises ``ValueError``, an object that
    exports no buffer ``TypeError``. The GIL is held for the whole call, so
    no other Python thread can change a ``bytearray`` meanwhile."""
    return typing.cast(Value, bencode_decode(data))

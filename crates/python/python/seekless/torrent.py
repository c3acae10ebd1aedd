"""Torrent metadata (BEP 3 v1, BEP 52 v2 and hybrid), read by seekless."""

import json
import typing

from ._seekless import torrent_info_json


def info(data: typing.Union[bytes, bytearray, memoryview]) -> typing.Dict[str, typing.Any]:
    """A ``.torrent`` file's metadata, as ``seekless torrent info --json``
    prints it: name, version, info hashes (v1 and v2, hex), piece length and
    count, total size, private flag, creation date, trackers, web seeds and
    files. Raises ``ValueError`` for anything that is not a valid torrent."""
    return json.loads(torrent_info_json(bytes(data)))

"""Torrent metadata (BEP 3 v1, BEP 52 v2 and hybrid), read by seekless."""

import json
import typing

from ._seekless import torrent_info_json

if typing.TYPE_CHECKING:
    from typing_extensions import Buffer


class TorrentFile(typing.TypedDict):
    """One file of a torrent, in the order of the info dictionary."""

    #: The path inside the torrent, the torrent's name first, ``/`` between.
    path: str
    length: int
    #: A BEP 47 padding file.
    pad: bool
    #: The file's v2 Merkle root (hex); None in a v1 torrent.
    pieces_root: typing.Optional[str]


class TorrentInfo(typing.TypedDict):
    """What :func:`info` returns (``seekless torrent info --json``)."""

    name: str
    version: typing.Literal["v1", "v2", "hybrid"]
    #: SHA-1 of the info dictionary (hex), None for a v2-only torrent.
    info_hash_v1: typing.Optional[str]
    #: SHA-256 of the info dictionary (hex), None for a v1-only torrent.
    info_hash_v2: typing.Optional[str]
    piece_length: int
    piece_count: int
    total_size: int
    private: bool
    #: Seconds since the Unix epoch.
    creation_date: typing.Optional[int]
    comment: typing.Optional[str]
    created_by: typing.Optional[str]
    #: Announce URLs by tier (BEP 12).
    trackers: typing.List[typing.List[str]]
    web_seeds: typing.List[str]
    files: typing.List[TorrentFile]
    magnet: str


def info(data: "Buffer") -> TorrentInfo:
    """A ``.torrent`` file's metadata, as ``seekless torrent info --json``
    prints it: name, version, info hashes (v1 and v2, hex), piece length and
    count, total size, private flag, creation date, comment, creator,
    trackers, web seeds, files and magnet link. ``data`` is ``bytes`` or
    any object exporting a C-contiguous buffer, read in place. Raises
    ``ValueError`` for anything that is not a valid torrent."""
    return typing.cast(TorrentInfo, json.loads(torrent_info_json(data)))

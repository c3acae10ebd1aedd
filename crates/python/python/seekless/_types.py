"""The dictionaries the native module returns, as TypedDicts (importable
from ``seekless``), so a type checker knows their keys."""

import typing


class IndexStats(typing.TypedDict):
    """What :meth:`seekless.PwnedIndex.stats` returns: the index's header."""

    version: int
    kind: typing.Literal["sha1", "ntlm"]
    hashes: int
    total_count: int
    pages: int
    bucket_bits: int
    key_bits: int
    bytes: int
    compact: bool
    #: For a compact index, the chance a hash outside the corpus is found.
    false_positive_rate: float


class BuildSummary(typing.TypedDict):
    """What :func:`seekless.build_index` returns: what the build did."""

    #: The hash kind of the corpus (``"sha1"`` for an empty one).
    kind: typing.Literal["sha1", "ntlm"]
    #: Hash lines read.
    lines: int
    #: Distinct hashes in the index.
    hashes: int
    #: Lines whose hash was already seen (counts summed).
    duplicates: int
    #: Malformed lines skipped (``skip_invalid=True``).
    invalid: int
    #: The first malformed line skipped, as ``NAME:LINE: what``.
    first_invalid: typing.Optional[str]
    #: Lines with a count of 0, skipped.
    zero_counts: int
    #: Lines whose count exceeded 2**32 - 1 and was capped to it.
    capped: int
    #: Bytes of the index.
    bytes: int
    #: Bytes written to spill files.
    spilled: int
    #: The top bits of each hash kept, for a compact index.
    key_bits: typing.Optional[int]
    #: The fewest times a hash kept was seen (1: every hash is kept).
    min_count: int
    #: Distinct hashes seen fewer than ``min_count`` times, left out.
    left_out: int
    #: Whether the input was in hash order, so it went straight into pages.
    streamed: bool
    seconds: float
    #: For a compact index, the chance a hash outside the corpus is found.
    false_positive_rate: float

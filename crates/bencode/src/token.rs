//! The flat token: 8 bytes per value, offsets into the input.

use std::fmt;

/// The type of a bencoded value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// `d…e`
    Dict,
    /// `l…e`
    List,
    /// `<len>:<bytes>`
    Bytes,
    /// `i<digits>e`
    Int,
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Kind::Dict => "a dictionary",
            Kind::List => "a list",
            Kind::Bytes => "a byte string",
            Kind::Int => "an integer",
        })
    }
}

pub(crate) const DICT: u32 = 0;
pub(crate) const LIST: u32 = 1;
pub(crate) const BYTES: u32 = 2;
pub(crate) const INT: u32 = 3;
pub(crate) const END: u32 = 4;

/// Width of the type field in [`Token::info`].
pub(crate) const TYPE_BITS: u32 = 3;
/// Largest value of the auxiliary field (29 bits, as in libtorrent).
pub(crate) const MAX_AUX: u32 = (1 << (32 - TYPE_BITS)) - 1;

/// One decoded value (or the end of a list or dictionary), 8 bytes.
///
/// * `offset`: byte offset of the value's first byte in the input (for an end
///   token, the offset of its `e`; the final token of a document holds the
///   offset just past the top-level value).
/// * `info`: the type in the low 3 bits; above it, for a list or dictionary
///   the number of tokens to its next sibling (so a whole subtree is skipped in
///   one step), for a byte string the width of its length prefix including
///   the `:`. A string's length is the next token's offset minus its payload
///   start, so no length needs storing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(C)]
pub struct Token {
    pub(crate) offset: u32,
    pub(crate) info: u32,
}

const _: () = assert!(std::mem::size_of::<Token>() == 8);

impl Token {
    #[inline(always)]
    pub(crate) const fn new(offset: u32, ty: u32, aux: u32) -> Token {
        Token {
            offset,
            info: ty | (aux << TYPE_BITS),
        }
    }

    #[inline(always)]
    pub(crate) const fn ty(self) -> u32 {
        self.info & ((1 << TYPE_BITS) - 1)
    }

    #[inline(always)]
    pub(crate) const fn aux(self) -> u32 {
        self.info >> TYPE_BITS
    }

    /// Number of tokens from this one to its next sibling.
    #[inline(always)]
    pub(crate) const fn next(self) -> usize {
        match self.ty() {
            DICT | LIST => self.aux() as usize,
            _ => 1,
        }
    }
}

//! BEP 3 violations that default mode tolerates, listed after the fact.

use crate::error::{Error, ErrorKind};
use crate::node::Node;
use crate::token::{BYTES, DICT, INT};

impl Node<'_> {
    /// The BEP 3 violations default mode tolerates, in input order: leading
    /// zeros, `-0`, unsorted and duplicate keys within this value, and (for
    /// the top-level value) trailing bytes after it. Strict mode rejects the
    /// first of these.
    pub fn warnings(&self) -> Vec<Error> {
        warnings(*self)
    }
}

/// Walks the subtree (linearly: tokens are in input order) and lists every
/// BEP 3 violation, sorted by offset.
fn warnings(root: Node<'_>) -> Vec<Error> {
    let (input, tokens, index) = (root.input(), root.tokens(), root.token_index());
    let mut out = Vec::new();
    for (i, t) in root.subtree().iter().enumerate() {
        let offset = t.offset as usize;
        match t.ty() {
            INT => {
                let mut d = offset + 1;
                if input[d] == b'-' {
                    if input[d + 1] == b'0' {
                        out.push(Error::new(ErrorKind::NegativeZero, d));
                        continue;
                    }
                    d += 1;
                }
                if input[d] == b'0' && input[d + 1] != b'e' {
                    out.push(Error::new(ErrorKind::LeadingZero, d));
                }
            }
            BYTES if input[offset] == b'0' && t.aux() > 2 => {
                out.push(Error::new(ErrorKind::LeadingZero, offset));
            }
            DICT => {
                let dict = Node::new(input, tokens, index + i)
                    .dict()
                    .expect("dict token");
                let mut previous: Option<&[u8]> = None;
                for (key, value) in dict.iter() {
                    // The key token immediately precedes its value token.
                    let key_offset = tokens[value.token_index() - 1].offset as usize;
                    if let Some(p) = previous {
                        match p.cmp(key) {
                            std::cmp::Ordering::Less => {}
                            std::cmp::Ordering::Equal => {
                                out.push(Error::new(ErrorKind::DuplicateKey, key_offset))
                            }
                            std::cmp::Ordering::Greater => {
                                out.push(Error::new(ErrorKind::UnsortedKey, key_offset))
                            }
                        }
                    }
                    previous = Some(key);
                }
            }
            _ => {}
        }
    }
    if index == 0 {
        let end = root.offset() + root.raw().len();
        if end < input.len() {
            out.push(Error::new(ErrorKind::TrailingData, end));
        }
    }
    out.sort_by_key(|e| e.offset());
    out
}

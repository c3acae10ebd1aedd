//! BEP 3 violations that default mode tolerates, listed after the fact.

use crate::Error;
use crate::node::Node;
use crate::token::{BYTES, DICT, INT, Token};

/// Walks the subtree at `index` (linearly: tokens are in input order) and
/// lists every BEP 3 violation, sorted by offset.
pub(crate) fn warnings(input: &[u8], tokens: &[Token], index: usize) -> Vec<Error> {
    let root = Node::new(input, tokens, index);
    let mut out = Vec::new();
    for (i, t) in root.subtree().iter().enumerate() {
        let offset = t.offset as usize;
        match t.ty() {
            INT => {
                let mut d = offset + 1;
                if input[d] == b'-' {
                    if input[d + 1] == b'0' {
                        out.push(Error::NegativeZero { offset: d });
                        continue;
                    }
                    d += 1;
                }
                if input[d] == b'0' && input[d + 1] != b'e' {
                    out.push(Error::LeadingZero { offset: d });
                }
            }
            BYTES if input[offset] == b'0' && t.aux() > 2 => {
                out.push(Error::LeadingZero { offset });
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
                                out.push(Error::DuplicateKey { offset: key_offset })
                            }
                            std::cmp::Ordering::Greater => {
                                out.push(Error::UnsortedKey { offset: key_offset })
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
            out.push(Error::TrailingData { offset: end });
        }
    }
    out.sort_by_key(|e| e.offset());
    out
}

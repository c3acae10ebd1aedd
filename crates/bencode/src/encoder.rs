//! The encoder: a writer API producing canonical bencode.

use crate::error::{Error, ErrorKind};
use crate::node::Node;

/// Writes bencode into a byte buffer.
///
/// Values are written in call order; [`Encoder::dict`] and [`Encoder::list`]
/// open a container and [`Encoder::end`] closes it. The caller writes
/// dictionary keys in sorted order (BEP 3); [`Encoder::finish`] checks that
/// every container was closed.
///
/// ```
/// let mut e = seekless_bencode::Encoder::new();
/// e.dict().key("a").int(-1).key("b").list().bytes(b"x").end().end();
/// assert_eq!(e.finish().unwrap(), b"d1:ai-1e1:bl1:xee");
/// ```
#[derive(Debug, Default, Clone)]
pub struct Encoder {
    out: Vec<u8>,
    open: usize,
}

impl Encoder {
    /// An empty encoder.
    pub fn new() -> Self {
        Encoder::default()
    }

    /// Write an integer.
    pub fn int(&mut self, value: i64) -> &mut Self {
        self.out.push(b'i');
        push_decimal(&mut self.out, value.unsigned_abs(), value < 0);
        self.out.push(b'e');
        self
    }

    /// Write a byte string.
    pub fn bytes(&mut self, value: &[u8]) -> &mut Self {
        push_decimal(&mut self.out, value.len() as u64, false);
        self.out.push(b':');
        self.out.extend_from_slice(value);
        self
    }

    /// Write a UTF-8 string as a byte string.
    pub fn str(&mut self, value: &str) -> &mut Self {
        self.bytes(value.as_bytes())
    }

    /// Write a dictionary key (a byte string).
    pub fn key(&mut self, key: &str) -> &mut Self {
        self.bytes(key.as_bytes())
    }

    /// Open a list.
    pub fn list(&mut self) -> &mut Self {
        self.out.push(b'l');
        self.open += 1;
        self
    }

    /// Open a dictionary.
    pub fn dict(&mut self) -> &mut Self {
        self.out.push(b'd');
        self.open += 1;
        self
    }

    /// Close the innermost open list or dictionary.
    pub fn end(&mut self) -> &mut Self {
        self.out.push(b'e');
        self.open = self.open.saturating_sub(1);
        self
    }

    /// Copy an already-encoded value (e.g. [`Node::raw`]) verbatim.
    pub fn raw(&mut self, node: Node<'_>) -> &mut Self {
        self.out.extend_from_slice(node.raw());
        self
    }

    /// Re-encode a decoded value canonically from its tokens: integers
    /// without leading zeros (`-0` as `0`), minimal length prefixes, entries
    /// in their input order. For input that strict mode accepts the result
    /// equals [`Node::raw`]. Walks the token buffer, so deep values need no
    /// recursion.
    pub fn node(&mut self, node: Node<'_>) -> &mut Self {
        use crate::token::{BYTES, DICT, END, INT, LIST};
        let base = node.token_index();
        for (i, t) in node.subtree().iter().enumerate() {
            match t.ty() {
                DICT => {
                    self.out.push(b'd');
                }
                LIST => {
                    self.out.push(b'l');
                }
                END => self.out.push(b'e'),
                BYTES => {
                    let value = Node::new(node.input(), node.tokens(), base + i);
                    self.bytes(value.as_bytes().unwrap_or_default());
                }
                INT => {
                    let (sign, digits) =
                        Node::new(node.input(), node.tokens(), base + i).canonical_int();
                    self.out.push(b'i');
                    self.out.extend_from_slice(sign.as_bytes());
                    self.out.extend_from_slice(digits);
                    self.out.push(b'e');
                }
                _ => {}
            }
        }
        self
    }

    /// Bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.out
    }

    /// The encoded bytes. Fails with [`ErrorKind::UnexpectedEof`] (at the end of
    /// the output) if a list or dictionary is still open.
    pub fn finish(self) -> Result<Vec<u8>, Error> {
        if self.open != 0 {
            return Err(Error::new(ErrorKind::UnexpectedEof, self.out.len()));
        }
        Ok(self.out)
    }
}

pub(crate) fn push_decimal(out: &mut Vec<u8>, mut value: u64, negative: bool) {
    if negative {
        out.push(b'-');
    }
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (value % 10) as u8;
        value /= 10;
        if value == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_every_type() {
        let mut e = Encoder::new();
        e.list()
            .int(0)
            .int(i64::MIN)
            .int(i64::MAX)
            .str("")
            .bytes(&[0xff])
            .dict()
            .end()
            .end();
        let out = e.finish().unwrap();
        assert_eq!(
            out,
            b"li0ei-9223372036854775808ei9223372036854775807e0:1:\xffdee"
        );
        let doc = crate::decode_strict(&out).unwrap();
        assert_eq!(
            doc.root()
                .as_list()
                .unwrap()
                .get(1)
                .unwrap()
                .as_int()
                .unwrap(),
            i64::MIN
        );
    }

    #[test]
    fn unclosed_container_is_an_error() {
        let mut e = Encoder::new();
        e.dict().key("a");
        assert!(e.finish().is_err());
    }
}

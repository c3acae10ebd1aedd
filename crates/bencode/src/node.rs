//! Borrowed views of decoded values.

use std::fmt;

use crate::error::{Error, ErrorKind};
use crate::token::{BYTES, DICT, END, INT, Kind, LIST, Token};

/// One decoded value: a view into the input and the token buffer. Copying a
/// `Node` is cheap; nothing is decoded until asked for.
#[derive(Clone, Copy)]
pub struct Node<'a> {
    input: &'a [u8],
    tokens: &'a [Token],
    index: usize,
}

impl fmt::Debug for Node<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("kind", &self.kind())
            .field("offset", &self.offset())
            .field("raw", &String::from_utf8_lossy(self.raw()))
            .finish()
    }
}

impl<'a> Node<'a> {
    pub(crate) fn new(input: &'a [u8], tokens: &'a [Token], index: usize) -> Self {
        Node {
            input,
            tokens,
            index,
        }
    }

    #[inline(always)]
    fn token(&self) -> Token {
        self.tokens[self.index]
    }

    /// The value's type.
    pub fn kind(&self) -> Kind {
        match self.token().ty() {
            DICT => Kind::Dict,
            LIST => Kind::List,
            BYTES => Kind::Bytes,
            _ => Kind::Int,
        }
    }

    /// Byte offset of the value's first byte in the input.
    pub fn offset(&self) -> usize {
        self.token().offset as usize
    }

    /// Index of this node's token in the token buffer.
    pub fn token_index(&self) -> usize {
        self.index
    }

    /// The whole input this node was decoded from.
    pub fn input(&self) -> &'a [u8] {
        self.input
    }

    /// Offset just past the value's last byte.
    fn end(&self) -> usize {
        let t = self.token();
        match t.ty() {
            DICT | LIST => self.tokens[self.index + t.next() - 1].offset as usize + 1,
            _ => self.tokens[self.index + 1].offset as usize,
        }
    }

    /// The exact input bytes of this value (for a dictionary, from its `d` to
    /// its `e`). The v1 info-hash is the SHA-1 of the info dictionary's raw
    /// bytes.
    pub fn raw(&self) -> &'a [u8] {
        &self.input[self.offset()..self.end()]
    }

    fn wrong(&self, expected: Kind) -> Error {
        Error::new(
            ErrorKind::WrongType {
                expected,
                found: self.kind(),
            },
            self.offset(),
        )
    }

    /// The payload of a byte string, or `None` for other types.
    pub fn as_bytes(&self) -> Option<&'a [u8]> {
        let t = self.token();
        if t.ty() != BYTES {
            return None;
        }
        let start = t.offset as usize + t.aux() as usize;
        Some(&self.input[start..self.tokens[self.index + 1].offset as usize])
    }

    /// The payload of a byte string as UTF-8, or `None` if it is not a byte
    /// string or not valid UTF-8.
    pub fn as_str(&self) -> Option<&'a str> {
        std::str::from_utf8(self.as_bytes()?).ok()
    }

    /// The value of an integer. Integers of up to 20 digits decode (as in
    /// libtorrent) even when they do not fit an `i64`; reading one gives
    /// [`ErrorKind::Overflow`] rather than a silent 0.
    pub fn as_int(&self) -> Result<i64, Error> {
        let t = self.token();
        if t.ty() != INT {
            return Err(self.wrong(Kind::Int));
        }
        let (negative, digits) = self.int_parts();
        let mut value: i64 = 0;
        for (i, &d) in digits.iter().enumerate() {
            let d = i64::from(d - b'0');
            let next = value.checked_mul(10).and_then(|v| {
                if negative {
                    v.checked_sub(d)
                } else {
                    v.checked_add(d)
                }
            });
            match next {
                Some(v) => value = v,
                None => {
                    return Err(Error::new(
                        ErrorKind::Overflow,
                        self.offset() + 1 + usize::from(negative) + i,
                    ));
                }
            }
        }
        Ok(value)
    }

    /// An integer's sign and digits as written, between its `i` (or `i-`) and
    /// its `e`.
    #[inline]
    fn int_parts(&self) -> (bool, &'a [u8]) {
        let raw = self.raw();
        let body = &raw[1..raw.len() - 1];
        match body.split_first() {
            Some((b'-', rest)) => (true, rest),
            _ => (false, body),
        }
    }

    /// An integer written canonically, for re-encoding it exactly (also
    /// beyond `i64`): its sign (`""` or `"-"`) and its digits without leading
    /// zeros, zero (also `-0`) being `("", "0")`.
    pub(crate) fn canonical_int(&self) -> (&'static str, &'a [u8]) {
        let (negative, digits) = self.int_parts();
        let start = digits
            .iter()
            .position(|&d| d != b'0')
            .unwrap_or(digits.len());
        match &digits[start..] {
            [] => ("", b"0"),
            digits => (if negative { "-" } else { "" }, digits),
        }
    }

    /// A list view, or `None` for other types.
    pub fn as_list(&self) -> Option<List<'a>> {
        (self.token().ty() == LIST).then_some(List { node: *self })
    }

    /// A dictionary view, or `None` for other types.
    pub fn as_dict(&self) -> Option<Dict<'a>> {
        (self.token().ty() == DICT).then_some(Dict { node: *self })
    }

    /// Like [`Node::as_bytes`], with a typed error.
    pub fn bytes(&self) -> Result<&'a [u8], Error> {
        self.as_bytes().ok_or_else(|| self.wrong(Kind::Bytes))
    }

    /// Like [`Node::as_list`], with a typed error.
    pub fn list(&self) -> Result<List<'a>, Error> {
        self.as_list().ok_or_else(|| self.wrong(Kind::List))
    }

    /// Like [`Node::as_dict`], with a typed error.
    pub fn dict(&self) -> Result<Dict<'a>, Error> {
        self.as_dict().ok_or_else(|| self.wrong(Kind::Dict))
    }

    /// Look `key` up if this is a dictionary (see [`Dict::get`]).
    pub fn get(&self, key: &[u8]) -> Option<Node<'a>> {
        self.as_dict()?.get(key)
    }

    pub(crate) fn tokens(&self) -> &'a [Token] {
        self.tokens
    }

    /// Every token of this subtree (for a container, up to and including its
    /// end token), for walking it without recursion.
    pub(crate) fn subtree(&self) -> &'a [Token] {
        &self.tokens[self.index..self.index + self.token().next()]
    }
}

/// A list view.
#[derive(Debug, Clone, Copy)]
pub struct List<'a> {
    node: Node<'a>,
}

impl<'a> List<'a> {
    /// The list as a node.
    pub fn node(&self) -> Node<'a> {
        self.node
    }

    /// Number of items (walks the sibling links).
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// True for `le`.
    pub fn is_empty(&self) -> bool {
        self.node.tokens[self.node.index + 1].ty() == END
    }

    /// The item at `index`, if any (walks the sibling links).
    pub fn get(&self, index: usize) -> Option<Node<'a>> {
        self.iter().nth(index)
    }

    /// The items in order.
    pub fn iter(&self) -> ListIter<'a> {
        ListIter {
            input: self.node.input,
            tokens: self.node.tokens,
            index: self.node.index + 1,
        }
    }
}

impl<'a> IntoIterator for List<'a> {
    type Item = Node<'a>;
    type IntoIter = ListIter<'a>;
    fn into_iter(self) -> ListIter<'a> {
        self.iter()
    }
}

/// Iterator over a list's items.
#[derive(Debug, Clone)]
pub struct ListIter<'a> {
    input: &'a [u8],
    tokens: &'a [Token],
    index: usize,
}

impl<'a> Iterator for ListIter<'a> {
    type Item = Node<'a>;

    #[inline]
    fn next(&mut self) -> Option<Node<'a>> {
        let t = self.tokens[self.index];
        if t.ty() == END {
            return None;
        }
        let node = Node::new(self.input, self.tokens, self.index);
        self.index += t.next();
        Some(node)
    }
}

/// A dictionary view. Keys keep their input order; duplicates are kept.
#[derive(Debug, Clone, Copy)]
pub struct Dict<'a> {
    node: Node<'a>,
}

impl<'a> Dict<'a> {
    /// The dictionary as a node.
    pub fn node(&self) -> Node<'a> {
        self.node
    }

    /// Number of entries (walks the sibling links).
    pub fn len(&self) -> usize {
        self.iter().count()
    }

    /// True for `de`.
    pub fn is_empty(&self) -> bool {
        self.node.tokens[self.node.index + 1].ty() == END
    }

    /// The value of the first entry whose key is `key`. With duplicate keys
    /// (which default mode accepts, like libtorrent) the first one wins, as in
    /// libtorrent's `dict_find`.
    pub fn get(&self, key: &[u8]) -> Option<Node<'a>> {
        self.iter().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    /// The entries as (key, value) pairs in input order.
    pub fn iter(&self) -> DictIter<'a> {
        DictIter {
            input: self.node.input,
            tokens: self.node.tokens,
            index: self.node.index + 1,
        }
    }
}

impl<'a> IntoIterator for Dict<'a> {
    type Item = (&'a [u8], Node<'a>);
    type IntoIter = DictIter<'a>;
    fn into_iter(self) -> DictIter<'a> {
        self.iter()
    }
}

/// Iterator over a dictionary's entries.
#[derive(Debug, Clone)]
pub struct DictIter<'a> {
    input: &'a [u8],
    tokens: &'a [Token],
    index: usize,
}

impl<'a> Iterator for DictIter<'a> {
    type Item = (&'a [u8], Node<'a>);

    #[inline]
    fn next(&mut self) -> Option<Self::Item> {
        let k = self.tokens[self.index];
        if k.ty() == END {
            return None;
        }
        let start = k.offset as usize + k.aux() as usize;
        let key = &self.input[start..self.tokens[self.index + 1].offset as usize];
        let value = Node::new(self.input, self.tokens, self.index + 1);
        self.index += 1 + self.tokens[self.index + 1].next();
        Some((key, value))
    }
}

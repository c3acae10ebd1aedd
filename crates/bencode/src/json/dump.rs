//! Bencode to JSON (the mapping is in the parent module).
//!
//! The walk is over the flat token buffer, so arbitrarily deep input renders
//! without recursion.

use super::push_string;
use crate::hex;
use crate::node::Node;
use crate::token::{BYTES, DICT, END, INT, LIST};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    List,
    /// A dictionary as a JSON object.
    Object,
    /// A dictionary as `{"$dict": [[key, value], …]}`.
    Pairs,
}

struct Open {
    shape: Shape,
    /// Items (keys and values) written so far.
    items: usize,
}

/// Append `node` as one line of JSON to `out`, in the mapping from which
/// [`from_json`](super::from_json) rebuilds its exact bytes. The root of a
/// document with bytes after its value renders with them (`$trailing`).
pub fn to_json(node: Node<'_>, out: &mut String) {
    let input = node.input();
    let tokens = node.tokens();
    let base = node.token_index();
    let trailing = if base == 0 {
        &input[node.raw().len()..]
    } else {
        &[]
    };
    if !trailing.is_empty() {
        out.push_str("{\"$trailing\":[");
    }
    let mut stack: Vec<Open> = Vec::new();
    for (i, t) in node.subtree().iter().enumerate() {
        if t.ty() == END {
            match stack.pop().map(|open| open.shape) {
                Some(Shape::List) => out.push(']'),
                Some(Shape::Object) => out.push('}'),
                Some(Shape::Pairs) => out.push_str("]}"),
                None => {}
            }
            close_pair(&stack, out);
            continue;
        }
        if let Some(open) = stack.last_mut() {
            let item = open.items;
            open.items += 1;
            match (open.shape, item % 2) {
                (Shape::Object, 1) => out.push(':'),
                (Shape::Pairs, 0) if item > 0 => out.push_str(",["),
                (Shape::Pairs, 0) => out.push('['),
                _ if item > 0 => out.push(','),
                _ => {}
            }
        }
        let value = Node::new(input, tokens, base + i);
        match t.ty() {
            DICT => {
                let shape = if is_object(value) {
                    out.push('{');
                    Shape::Object
                } else {
                    out.push_str("{\"$dict\":[");
                    Shape::Pairs
                };
                stack.push(Open { shape, items: 0 });
            }
            LIST => {
                out.push('[');
                stack.push(Open {
                    shape: Shape::List,
                    items: 0,
                });
            }
            BYTES => {
                bytes(value, out);
                close_pair(&stack, out);
            }
            INT => {
                int(value, out);
                close_pair(&stack, out);
            }
            _ => {}
        }
    }
    if !trailing.is_empty() {
        out.push_str(",\"");
        hex::push(out, trailing);
        out.push_str("\"]}");
    }
}

/// After a complete item: a `$dict` pair closes once its value is written.
fn close_pair(stack: &[Open], out: &mut String) {
    if let Some(open) = stack.last()
        && open.shape == Shape::Pairs
        && open.items % 2 == 0
    {
        out.push(']');
    }
}

/// `0`, or digits without a leading zero.
fn canonical(digits: &[u8]) -> bool {
    digits == b"0" || digits.first().is_some_and(|&d| d != b'0')
}

/// A byte string's length prefix (without the `:`) and payload.
fn string_parts(node: Node<'_>) -> (&[u8], &[u8]) {
    let raw = node.raw();
    let payload = node.as_bytes().unwrap_or_default();
    (&raw[..raw.len() - payload.len() - 1], payload)
}

fn bytes(node: Node<'_>, out: &mut String) {
    let (prefix, payload) = string_parts(node);
    if !canonical(prefix) {
        out.push_str("{\"$raw\":\"");
        hex::push(out, node.raw());
        out.push_str("\"}");
    } else if let Ok(s) = std::str::from_utf8(payload) {
        push_string(out, s);
    } else {
        out.push_str("{\"$hex\":\"");
        hex::push(out, payload);
        out.push_str("\"}");
    }
}

fn int(node: Node<'_>, out: &mut String) {
    let raw = node.raw();
    let body = &raw[1..raw.len() - 1];
    let exact = match body.strip_prefix(b"-") {
        Some(digits) => digits.first().is_some_and(|&d| d != b'0'),
        None => canonical(body),
    };
    // The decoder only accepts `-` and ASCII digits here.
    let text = std::str::from_utf8(body).unwrap_or_default();
    if exact {
        out.push_str(text);
    } else {
        out.push_str("{\"$int\":\"");
        out.push_str(text);
        out.push_str("\"}");
    }
}

/// Whether a dictionary prints as a plain JSON object: every key UTF-8 with
/// a canonical length, no key twice, and not one lone key that would read
/// back as a tag.
fn is_object(dict: Node<'_>) -> bool {
    let Some(dict) = dict.as_dict() else {
        return false;
    };
    let mut keys: Vec<&[u8]> = Vec::with_capacity(dict.len());
    let mut sorted = true;
    let mut i = dict.node().token_index() + 1;
    let tokens = dict.node().tokens();
    while tokens[i].ty() != END {
        let key = Node::new(dict.node().input(), tokens, i);
        let (prefix, payload) = string_parts(key);
        if !canonical(prefix) || std::str::from_utf8(payload).is_err() {
            return false;
        }
        sorted &= keys.last().is_none_or(|&last| last < payload);
        keys.push(payload);
        i += 1;
        i += tokens[i].next();
    }
    if let [only] = keys[..] {
        return !only.starts_with(b"$");
    }
    if !sorted {
        keys.sort_unstable();
        if keys.windows(2).any(|w| w[0] == w[1]) {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(input: &[u8]) -> String {
        let doc = crate::decode(input).unwrap();
        let mut out = String::new();
        to_json(doc.root(), &mut out);
        out
    }

    #[test]
    fn plain_json_where_it_is_exact() {
        assert_eq!(
            json(b"d1:ai-12e1:bl3:x\"yi7ei0eee"),
            r#"{"a":-12,"b":["x\"y",7,0]}"#
        );
        assert_eq!(json(b"le"), "[]");
        assert_eq!(json(b"de"), "{}");
        assert_eq!(json(b"i12345678901234567890e"), "12345678901234567890");
        assert_eq!(json(b"i-9e"), "-9");
        assert_eq!(json(b"lldeleee"), "[[{},[]]]");
        assert_eq!(json(b"3:\t\n\x01"), r#""\t\n\u0001""#);
        // Unsorted keys keep their order.
        assert_eq!(json(b"d1:bi1e1:ai2ee"), r#"{"b":1,"a":2}"#);
        // A `$` key among others is no tag.
        assert_eq!(json(b"d4:$hex1:x1:ai1ee"), r#"{"$hex":"x","a":1}"#);
    }

    #[test]
    fn tags_where_plain_json_would_lose_bytes() {
        // The two inputs the old mapping printed alike.
        assert_eq!(json(b"d3:hex2:ffe"), r#"{"hex":"ff"}"#);
        assert_eq!(json(b"1:\xff"), r#"{"$hex":"ff"}"#);
        assert_eq!(json(b"d4:$hex2:ffe"), r#"{"$dict":[["$hex","ff"]]}"#);
        assert_eq!(json(b"i007e"), r#"{"$int":"007"}"#);
        assert_eq!(json(b"i-0e"), r#"{"$int":"-0"}"#);
        assert_eq!(json(b"i-05e"), r#"{"$int":"-05"}"#);
        assert_eq!(json(b"03:abc"), r#"{"$raw":"30333a616263"}"#);
        assert_eq!(json(b"d1:ai1e1:ai2ee"), r#"{"$dict":[["a",1],["a",2]]}"#);
        assert_eq!(
            json(b"d2:\xff\xfeld1:xi1eee1:b0:e"),
            r#"{"$dict":[[{"$hex":"fffe"},[{"x":1}]],["b",""]]}"#
        );
        assert_eq!(json(b"d01:ai1ee"), r#"{"$dict":[[{"$raw":"30313a61"},1]]}"#);
        assert_eq!(json(b"i1exyz"), r#"{"$trailing":[1,"78797a"]}"#);
    }

    #[test]
    fn renders_deep_input_without_recursion() {
        let mut input = vec![b'l'; 99];
        input.extend(std::iter::repeat_n(b'e', 99));
        assert_eq!(json(&input).len(), 198);
    }

    #[test]
    fn a_subtree_renders_alone() {
        let doc = crate::decode(b"d1:ad1:bi1eee").unwrap();
        let mut out = String::new();
        to_json(doc.root().get(b"a").unwrap(), &mut out);
        assert_eq!(out, r#"{"b":1}"#);
    }
}

//! JSON rendering of a decoded value (for `seekless bencode dump`).
//!
//! * byte strings that are valid UTF-8 become JSON strings; others become
//!   `{"hex": "<lowercase hex>"}`;
//! * dictionary keys that are valid UTF-8 are used as they are; others become
//!   `"hex:<lowercase hex>"`; key order (and duplicates) are kept as in the
//!   input;
//! * integers become JSON numbers, exactly (also beyond `i64`), with leading
//!   zeros dropped and `-0` written as `0`.
//!
//! The walk is over the flat token buffer, so arbitrarily deep input renders
//! without recursion.

use crate::node::Node;
use crate::token::{BYTES, DICT, END, INT, LIST};

/// Append `node` as one line of JSON to `out`.
pub fn to_json(node: Node<'_>, out: &mut String) {
    let input = node.input();
    let tokens = node.subtree();
    let base = node.token_index();
    // Per open container: (is_dict, items written so far).
    let mut stack: Vec<(bool, usize)> = Vec::new();
    for (i, t) in tokens.iter().enumerate() {
        if t.ty() == END {
            match stack.pop() {
                Some((true, _)) => out.push('}'),
                Some((false, _)) => out.push(']'),
                None => {}
            }
            continue;
        }
        let mut as_key = false;
        if let Some((is_dict, count)) = stack.last_mut() {
            if *is_dict {
                if *count % 2 == 0 {
                    if *count > 0 {
                        out.push(',');
                    }
                    as_key = true;
                } else {
                    out.push(':');
                }
            } else if *count > 0 {
                out.push(',');
            }
            *count += 1;
        }
        let value = Node::new(input, node.tokens(), base + i);
        match t.ty() {
            DICT => {
                out.push('{');
                stack.push((true, 0));
            }
            LIST => {
                out.push('[');
                stack.push((false, 0));
            }
            BYTES => {
                let bytes = value.as_bytes().unwrap_or_default();
                match std::str::from_utf8(bytes) {
                    Ok(s) => push_string(out, s),
                    Err(_) if as_key => {
                        out.push_str("\"hex:");
                        push_hex(out, bytes);
                        out.push('"');
                    }
                    Err(_) => {
                        out.push_str("{\"hex\":\"");
                        push_hex(out, bytes);
                        out.push_str("\"}");
                    }
                }
            }
            INT => {
                let (sign, digits) = value.canonical_int();
                out.push_str(sign);
                // The decoder only accepts ASCII digits here.
                out.extend(digits.iter().map(|&d| char::from(d)));
            }
            _ => {}
        }
    }
}

fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 15)]));
    }
}

fn push_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                out.push_str(&format!("\\u{:04x}", c as u32));
            }
            c => out.push(c),
        }
    }
    out.push('"');
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
    fn renders_every_type() {
        assert_eq!(
            json(b"d1:ai-12e1:bl3:x\"yi007ei-0ee2:\xff\xfe2:\xff\x00e"),
            r#"{"a":-12,"b":["x\"y",7,0],"hex:fffe":{"hex":"ff00"}}"#
        );
        assert_eq!(json(b"le"), "[]");
        assert_eq!(json(b"de"), "{}");
        assert_eq!(json(b"i12345678901234567890e"), "12345678901234567890");
        assert_eq!(json(b"lldeleee"), "[[{},[]]]");
        assert_eq!(json(b"3:\t\n\x01"), r#""\t\n\u0001""#);
    }

    #[test]
    fn renders_deep_input_without_recursion() {
        let mut input = vec![b'l'; 99];
        input.extend(std::iter::repeat_n(b'e', 99));
        let out = json(&input);
        assert_eq!(out.len(), 198);
    }
}

//! A reversible JSON mapping of bencode: [`to_json`] prints any decoded
//! document (`seekless bencode dump`), [`from_json`] rebuilds its exact bytes
//! (`seekless bencode encode`).
//!
//! Plain JSON where it is exact, a one-member object tagged with `$` where it
//! is not:
//!
//! | bencode | JSON |
//! |---|---|
//! | integer written canonically (`i42e`, `i-7e`, `i0e`) | number, exactly, also beyond 2^53 |
//! | any other integer (`i007e`, `i-0e`) | `{"$int": "007"}`: the digits as written |
//! | byte string, valid UTF-8 | string |
//! | byte string, not UTF-8 | `{"$hex": "ff00"}` (lowercase) |
//! | byte string with a zero-padded length (`03:abc`) | `{"$raw": "<hex of the whole value>"}` |
//! | list | array |
//! | dictionary whose keys are UTF-8 strings, unique, written canonically, and not one lone key starting with `$` | object, members in input order |
//! | any other dictionary | `{"$dict": [[key, value], …]}` in input order, a key being a string, `{"$hex": …}` or `{"$raw": …}` |
//! | bytes after the top-level value | `{"$trailing": [value, "<hex of the rest>"]}` around the whole document |
//!
//! So a one-member object whose key starts with `$` is always a tag; any
//! other object is a dictionary. [`from_json`] also takes what a person
//! writes by hand: `\u` escapes, uppercase hex, whitespace anywhere JSON
//! allows it. It writes object members in the order given (bencode wants
//! them sorted; `seekless bencode check --strict` says when they are not).
//! `true`, `false`, `null` and numbers with a fraction or an exponent have
//! no bencode form and are errors, as are unknown tags.
//!
//! Both directions walk iteratively, so any depth is safe.

mod dump;
mod encode;

pub use dump::to_json;
pub use encode::from_json;

/// Append `s` to `out` as a JSON string.
pub(crate) fn push_string(out: &mut String, s: &str) {
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

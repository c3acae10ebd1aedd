//! serde round trip: a generic value deserialized from strictly valid input
//! serializes back to the identical bytes.
#![no_main]

use std::fmt;

use libfuzzer_sys::fuzz_target;
use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};

#[derive(Debug, PartialEq)]
enum Value<'a> {
    Int(i64),
    Bytes(&'a [u8]),
    List(Vec<Value<'a>>),
    Dict(Vec<(&'a [u8], Value<'a>)>),
}

struct Raw<'a>(&'a [u8]);

impl<'de> Deserialize<'de> for Raw<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Raw<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a byte string")
            }
            fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Raw<'de>, E> {
                Ok(Raw(v))
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Raw<'de>, E> {
                Ok(Raw(v.as_bytes()))
            }
        }
        d.deserialize_bytes(V)
    }
}

impl<'de> Deserialize<'de> for Value<'de> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Value<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a bencode value")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Value<'de>, E> {
                Ok(Value::Int(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Value<'de>, E> {
                i64::try_from(v).map(Value::Int).map_err(E::custom)
            }
            fn visit_borrowed_bytes<E: de::Error>(self, v: &'de [u8]) -> Result<Value<'de>, E> {
                Ok(Value::Bytes(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value<'de>, A::Error> {
                let mut items = Vec::new();
                while let Some(v) = seq.next_element()? {
                    items.push(v);
                }
                Ok(Value::List(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value<'de>, A::Error> {
                let mut entries = Vec::new();
                while let Some((k, v)) = map.next_entry::<Raw<'de>, Value<'de>>()? {
                    entries.push((k.0, v));
                }
                Ok(Value::Dict(entries))
            }
        }
        d.deserialize_any(V)
    }
}

struct Bytes<'a>(&'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

impl Serialize for Value<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Int(v) => s.serialize_i64(*v),
            Value::Bytes(b) => s.serialize_bytes(b),
            Value::List(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for i in items {
                    seq.serialize_element(i)?;
                }
                seq.end()
            }
            Value::Dict(entries) => {
                let mut map = s.serialize_map(Some(entries.len()))?;
                for (k, v) in entries {
                    map.serialize_entry(&Bytes(k), v)?;
                }
                map.end()
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let strict = seekless_bencode::decode_strict(data).is_ok();
    match seekless_bencode::from_bytes::<Value>(data) {
        Ok(value) => match seekless_bencode::to_bytes(&value) {
            Ok(bytes) => {
                // Serializing sorts keys, so only strictly valid (canonical)
                // input comes back byte for byte; any output is a fixed point.
                if strict {
                    assert_eq!(bytes, data);
                }
                let again: Value = seekless_bencode::from_bytes(&bytes).expect("round trip");
                if strict {
                    assert_eq!(again, value);
                }
                assert_eq!(
                    seekless_bencode::to_bytes(&again).expect("serializable"),
                    bytes
                );
            }
            // Duplicate keys, which only non-strict input can have.
            Err(e) => assert!(!strict, "{e}"),
        },
        // Only integers beyond i64 fail in a strictly valid document.
        Err(e) => assert!(
            !strict
                || e.decode_error()
                    .is_none_or(|d| d.kind() == seekless_bencode::ErrorKind::Overflow),
            "{e}"
        ),
    }
});

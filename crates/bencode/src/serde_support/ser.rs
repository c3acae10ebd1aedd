//! Serializing to canonical bencode (dictionary keys sorted).

use serde::ser::{self, Serialize};

use super::SerdeError;
use crate::encoder::push_decimal;

/// Serialize `value` to bencode. Map and struct keys are written sorted by
/// their bytes; `None` fields and unit values are left out.
pub fn to_bytes<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, SerdeError> {
    let mut out = Vec::new();
    value.serialize(&mut Serializer {
        out: &mut out,
        last_u8: None,
    })?;
    if out.is_empty() {
        return Err(<SerdeError as ser::Error>::custom(
            "nothing to encode (a top-level None or unit)",
        ));
    }
    Ok(out)
}

struct Serializer<'a> {
    out: &'a mut Vec<u8>,
    /// Set when the value just written was a `u8`: a sequence made only of
    /// them (`Vec<u8>`, `&[u8]`, `[u8; N]`) is written as a byte string.
    last_u8: Option<u8>,
}

impl Serializer<'_> {
    fn int(&mut self, v: i128) -> Result<(), SerdeError> {
        let magnitude =
            u64::try_from(v.unsigned_abs()).map_err(|_| unsupported("integers beyond 64 bits"))?;
        self.out.push(b'i');
        push_decimal(self.out, magnitude, v < 0);
        self.out.push(b'e');
        Ok(())
    }

    fn bytes(&mut self, v: &[u8]) {
        push_decimal(self.out, v.len() as u64, false);
        self.out.push(b':');
        self.out.extend_from_slice(v);
    }
}

fn unsupported(what: &str) -> SerdeError {
    <SerdeError as ser::Error>::custom(format!("bencode has no {what}"))
}

/// Serializes one value into its own buffer (for sorting entries).
fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, SerdeError> {
    let mut out = Vec::new();
    value.serialize(&mut Serializer {
        out: &mut out,
        last_u8: None,
    })?;
    Ok(out)
}

/// A dictionary key: the payload of a byte string, or an integer's digits.
fn key_bytes<T: Serialize + ?Sized>(key: &T) -> Result<Vec<u8>, SerdeError> {
    let encoded = encode(key)?;
    let doc = crate::decode(&encoded)
        .map_err(|_| <SerdeError as ser::Error>::custom("dictionary keys must be strings"))?;
    let root = doc.root();
    if let Some(b) = root.as_bytes() {
        return Ok(b.to_vec());
    }
    if root.as_int().is_ok() {
        return Ok(encoded[1..encoded.len() - 1].to_vec());
    }
    Err(<SerdeError as ser::Error>::custom(
        "dictionary keys must be strings",
    ))
}

/// Collects dictionary entries, then writes them sorted.
struct Dict<'a> {
    out: &'a mut Vec<u8>,
    entries: Vec<(Vec<u8>, Vec<u8>)>,
    key: Option<Vec<u8>>,
    /// For struct variants: close the wrapping dictionary too.
    wrapped: bool,
}

impl Dict<'_> {
    fn add(&mut self, key: Vec<u8>, value: Vec<u8>) {
        // A value that wrote nothing (None, unit) omits its key.
        if !value.is_empty() {
            self.entries.push((key, value));
        }
    }

    fn finish(mut self) -> Result<(), SerdeError> {
        self.entries.sort_by(|a, b| a.0.cmp(&b.0));
        if let Some(w) = self.entries.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(<SerdeError as ser::Error>::custom(format!(
                "duplicate dictionary key {:?}",
                String::from_utf8_lossy(&w[0].0)
            )));
        }
        self.out.push(b'd');
        for (k, v) in &self.entries {
            push_decimal(self.out, k.len() as u64, false);
            self.out.push(b':');
            self.out.extend_from_slice(k);
            self.out.extend_from_slice(v);
        }
        self.out.push(b'e');
        if self.wrapped {
            self.out.push(b'e');
        }
        Ok(())
    }
}

/// Writes list items in order.
struct List<'a> {
    out: &'a mut Vec<u8>,
    wrapped: bool,
    /// Offset of the list's `l`.
    start: usize,
    /// The items so far, while every one of them is a `u8`.
    bytes: Option<Vec<u8>>,
}

impl List<'_> {
    fn item<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerdeError> {
        let mut ser = Serializer {
            out: self.out,
            last_u8: None,
        };
        value.serialize(&mut ser)?;
        match (ser.last_u8, &mut self.bytes) {
            (Some(b), Some(bytes)) => bytes.push(b),
            _ => self.bytes = None,
        }
        Ok(())
    }

    fn finish(self) -> Result<(), SerdeError> {
        if let Some(bytes) = self.bytes.filter(|b| !b.is_empty()) {
            self.out.truncate(self.start);
            push_decimal(self.out, bytes.len() as u64, false);
            self.out.push(b':');
            self.out.extend_from_slice(&bytes);
        } else {
            self.out.push(b'e');
        }
        if self.wrapped {
            self.out.push(b'e');
        }
        Ok(())
    }
}

impl<'s, 'a> ser::Serializer for &'s mut Serializer<'a> {
    type Ok = ();
    type Error = SerdeError;
    type SerializeSeq = List<'s>;
    type SerializeTuple = List<'s>;
    type SerializeTupleStruct = List<'s>;
    type SerializeTupleVariant = List<'s>;
    type SerializeMap = Dict<'s>;
    type SerializeStruct = Dict<'s>;
    type SerializeStructVariant = Dict<'s>;

    fn serialize_bool(self, v: bool) -> Result<(), SerdeError> {
        self.int(i128::from(v))
    }
    fn serialize_i8(self, v: i8) -> Result<(), SerdeError> {
        self.int(i128::from(v))
    }
    fn serialize_i16(self, v: i16) -> Result<(), SerdeError> {
        self.int(i128::from(v))
    }
    fn serialize_i32(self, v: i32) -> Result<(), SerdeError> {
        self.int(i128::from(v))
    }
    fn serialize_i64(self, v: i64) -> Result<(), SerdeError> {
        self.int(i128::from(v))
    }
    fn serialize_i128(self, v: i128) -> Result<(), SerdeError> {
        self.int(v)
    }
    fn serialize_u8(self, v: u8) -> Result<(), SerdeError> {
        self.last_u8 = Some(v);
        self.int(i128::from(v))
    }
    fn serialize_u16(self, v: u16) -> Result<(), SerdeError> {
        self.int(i128::from(v))
    }
    fn serialize_u32(self, v: u32) -> Result<(), SerdeError> {
        self.int(i128::from(v))
    }
    fn serialize_u64(self, v: u64) -> Result<(), SerdeError> {
        self.int(i128::from(v))
    }
    fn serialize_u128(self, v: u128) -> Result<(), SerdeError> {
        let v = i128::try_from(v).map_err(|_| unsupported("integers beyond 64 bits"))?;
        self.int(v)
    }
    fn serialize_f32(self, _v: f32) -> Result<(), SerdeError> {
        Err(unsupported("floating point numbers"))
    }
    fn serialize_f64(self, _v: f64) -> Result<(), SerdeError> {
        Err(unsupported("floating point numbers"))
    }
    fn serialize_char(self, v: char) -> Result<(), SerdeError> {
        self.bytes(v.encode_utf8(&mut [0; 4]).as_bytes());
        Ok(())
    }
    fn serialize_str(self, v: &str) -> Result<(), SerdeError> {
        self.bytes(v.as_bytes());
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<(), SerdeError> {
        self.bytes(v);
        Ok(())
    }
    fn serialize_none(self) -> Result<(), SerdeError> {
        Ok(())
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), SerdeError> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<(), SerdeError> {
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Result<(), SerdeError> {
        Ok(())
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<(), SerdeError> {
        self.bytes(variant.as_bytes());
        Ok(())
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<(), SerdeError> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), SerdeError> {
        self.out.push(b'd');
        self.bytes(variant.as_bytes());
        value.serialize(&mut *self)?;
        self.out.push(b'e');
        Ok(())
    }
    fn serialize_seq(self, _len: Option<usize>) -> Result<List<'s>, SerdeError> {
        let start = self.out.len();
        self.out.push(b'l');
        Ok(List {
            out: self.out,
            wrapped: false,
            start,
            bytes: Some(Vec::new()),
        })
    }
    fn serialize_tuple(self, len: usize) -> Result<List<'s>, SerdeError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(
        self,
        _name: &'static str,
        len: usize,
    ) -> Result<List<'s>, SerdeError> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<List<'s>, SerdeError> {
        self.out.push(b'd');
        self.bytes(variant.as_bytes());
        let start = self.out.len();
        self.out.push(b'l');
        Ok(List {
            out: self.out,
            wrapped: true,
            start,
            bytes: None,
        })
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<Dict<'s>, SerdeError> {
        Ok(Dict {
            out: self.out,
            entries: Vec::new(),
            key: None,
            wrapped: false,
        })
    }
    fn serialize_struct(self, _name: &'static str, len: usize) -> Result<Dict<'s>, SerdeError> {
        self.serialize_map(Some(len))
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
        _len: usize,
    ) -> Result<Dict<'s>, SerdeError> {
        self.out.push(b'd');
        self.bytes(variant.as_bytes());
        Ok(Dict {
            out: self.out,
            entries: Vec::new(),
            key: None,
            wrapped: true,
        })
    }
}

impl ser::SerializeSeq for List<'_> {
    type Ok = ();
    type Error = SerdeError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerdeError> {
        self.item(value)
    }
    fn end(self) -> Result<(), SerdeError> {
        self.finish()
    }
}

impl ser::SerializeTuple for List<'_> {
    type Ok = ();
    type Error = SerdeError;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerdeError> {
        self.item(value)
    }
    fn end(self) -> Result<(), SerdeError> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for List<'_> {
    type Ok = ();
    type Error = SerdeError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerdeError> {
        self.item(value)
    }
    fn end(self) -> Result<(), SerdeError> {
        self.finish()
    }
}

impl ser::SerializeTupleVariant for List<'_> {
    type Ok = ();
    type Error = SerdeError;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerdeError> {
        self.item(value)
    }
    fn end(self) -> Result<(), SerdeError> {
        self.finish()
    }
}

impl ser::SerializeMap for Dict<'_> {
    type Ok = ();
    type Error = SerdeError;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), SerdeError> {
        self.key = Some(key_bytes(key)?);
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), SerdeError> {
        let key = self
            .key
            .take()
            .ok_or_else(|| <SerdeError as ser::Error>::custom("map value without a key"))?;
        let value = encode(value)?;
        self.add(key, value);
        Ok(())
    }
    fn end(self) -> Result<(), SerdeError> {
        self.finish()
    }
}

impl ser::SerializeStruct for Dict<'_> {
    type Ok = ();
    type Error = SerdeError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), SerdeError> {
        let value = encode(value)?;
        self.add(key.as_bytes().to_vec(), value);
        Ok(())
    }
    fn end(self) -> Result<(), SerdeError> {
        self.finish()
    }
}

impl ser::SerializeStructVariant for Dict<'_> {
    type Ok = ();
    type Error = SerdeError;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), SerdeError> {
        let value = encode(value)?;
        self.add(key.as_bytes().to_vec(), value);
        Ok(())
    }
    fn end(self) -> Result<(), SerdeError> {
        self.finish()
    }
}

//! Deserializing from the flat token buffer, borrowing from the input.

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

use super::SerdeError;
use crate::decode;
use crate::error::{Error, ErrorKind};
use crate::node::Node;
use crate::token::{BYTES, DICT, END, INT, Kind, LIST, Token};

/// Decode `input` (default mode) and deserialize a `T` from it; `&[u8]` and
/// `&str` fields borrow from `input`.
pub fn from_bytes<'de, T: de::Deserialize<'de>>(input: &'de [u8]) -> Result<T, SerdeError> {
    let doc = decode(input)?;
    let mut de = Deserializer {
        input,
        tokens: doc.tokens(),
        index: 0,
    };
    T::deserialize(&mut de)
}

/// Deserialize a `T` from an already decoded node (e.g. a torrent's `info`
/// dictionary).
pub fn from_node<'a, T: de::Deserialize<'a>>(node: Node<'a>) -> Result<T, SerdeError> {
    let mut de = Deserializer {
        input: node.input(),
        tokens: node.tokens(),
        index: node.token_index(),
    };
    T::deserialize(&mut de)
}

/// A cursor over the token buffer: `index` is the next value to read.
struct Deserializer<'de, 't> {
    input: &'de [u8],
    tokens: &'t [Token],
    index: usize,
}

impl<'de, 't> Deserializer<'de, 't> {
    fn token(&self) -> Token {
        self.tokens[self.index]
    }

    fn offset(&self) -> usize {
        self.token().offset as usize
    }

    fn kind(&self) -> Kind {
        Node::new(self.input, self.tokens, self.index).kind()
    }

    fn wrong(&self, expected: Kind) -> SerdeError {
        Error::new(
            ErrorKind::WrongType {
                expected,
                found: self.kind(),
            },
            self.offset(),
        )
        .into()
    }

    fn unsupported(&self, what: &str) -> SerdeError {
        SerdeError::at(self.offset(), format!("bencode has no {what}"))
    }

    /// The payload of the byte string at the cursor, advancing past it.
    fn take_bytes(&mut self) -> Result<&'de [u8], SerdeError> {
        let t = self.token();
        // The serializer writes an empty sequence as `le`; read it back as
        // an empty byte string.
        if t.ty() == LIST && self.tokens[self.index + 1].ty() == END {
            self.index += 2;
            return Ok(&[]);
        }
        if t.ty() != BYTES {
            return Err(self.wrong(Kind::Bytes));
        }
        let start = t.offset as usize + t.aux() as usize;
        let end = self.tokens[self.index + 1].offset as usize;
        self.index += 1;
        Ok(&self.input[start..end])
    }

    fn take_str(&mut self) -> Result<&'de str, SerdeError> {
        let offset = self.offset();
        let bytes = self.take_bytes()?;
        std::str::from_utf8(bytes)
            .map_err(|_| SerdeError::at(offset, "byte string is not UTF-8".to_string()))
    }

    /// The integer at the cursor as i128 (covers i64 and u64), advancing.
    fn take_int(&mut self) -> Result<i128, SerdeError> {
        let t = self.token();
        if t.ty() != INT {
            return Err(self.wrong(Kind::Int));
        }
        let node = Node::new(self.input, self.tokens, self.index);
        let raw = node.raw();
        let text = std::str::from_utf8(&raw[1..raw.len() - 1]).expect("ASCII digits");
        let value: i128 = text
            .parse()
            .map_err(|_| SerdeError::from(Error::new(ErrorKind::Overflow, self.offset())))?;
        self.index += 1;
        Ok(value)
    }

    fn int<T: TryFrom<i128>>(&mut self) -> Result<T, SerdeError> {
        let offset = self.offset();
        let v = self.take_int()?;
        T::try_from(v).map_err(|_| {
            SerdeError::at(
                offset,
                format!(
                    "integer {v} out of range for {}",
                    std::any::type_name::<T>()
                ),
            )
        })
    }

    fn skip(&mut self) {
        self.index += self.token().next();
    }
}

macro_rules! int_method {
    ($method:ident, $visit:ident, $ty:ty) => {
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
            let v: $ty = self.int()?;
            visitor.$visit(v)
        }
    };
}

impl<'de, 't> de::Deserializer<'de> for &mut Deserializer<'de, 't> {
    type Error = SerdeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
        match self.token().ty() {
            INT => {
                let offset = self.offset();
                let v = self.take_int()?;
                if let Ok(v) = i64::try_from(v) {
                    visitor.visit_i64(v)
                } else if let Ok(v) = u64::try_from(v) {
                    visitor.visit_u64(v)
                } else {
                    Err(Error::new(ErrorKind::Overflow, offset).into())
                }
            }
            BYTES => visitor.visit_borrowed_bytes(self.take_bytes()?),
            LIST => self.deserialize_seq(visitor),
            DICT => self.deserialize_map(visitor),
            _ => Err(self.unsupported("value here")),
        }
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
        let offset = self.offset();
        match self.take_int()? {
            0 => visitor.visit_bool(false),
            1 => visitor.visit_bool(true),
            v => Err(SerdeError::at(
                offset,
                format!("{v} is not a boolean (0 or 1)"),
            )),
        }
    }

    int_method!(deserialize_i8, visit_i8, i8);
    int_method!(deserialize_i16, visit_i16, i16);
    int_method!(deserialize_i32, visit_i32, i32);
    int_method!(deserialize_i64, visit_i64, i64);
    int_method!(deserialize_i128, visit_i128, i128);
    int_method!(deserialize_u8, visit_u8, u8);
    int_method!(deserialize_u16, visit_u16, u16);
    int_method!(deserialize_u32, visit_u32, u32);
    int_method!(deserialize_u64, visit_u64, u64);
    int_method!(deserialize_u128, visit_u128, u128);

    fn deserialize_f32<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, SerdeError> {
        Err(self.unsupported("floating point numbers"))
    }

    fn deserialize_f64<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, SerdeError> {
        Err(self.unsupported("floating point numbers"))
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
        let offset = self.offset();
        let s = self.take_str()?;
        let mut chars = s.chars();
        match (chars.next(), chars.next()) {
            (Some(c), None) => visitor.visit_char(c),
            _ => Err(SerdeError::at(
                offset,
                "expected a single character".to_string(),
            )),
        }
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
        visitor.visit_borrowed_str(self.take_str()?)
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
        visitor.visit_borrowed_bytes(self.take_bytes()?)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
        // A value that is present is `Some`; absence is handled by the
        // containing struct (missing field).
        visitor.visit_some(self)
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
        self.skip();
        visitor.visit_unit()
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, SerdeError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, SerdeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
        match self.token().ty() {
            LIST => {
                self.index += 1;
                let value = visitor.visit_seq(Seq { de: &mut *self })?;
                // Past the list's end token (the visitor may stop early).
                while self.token().ty() != END {
                    self.skip();
                }
                self.index += 1;
                Ok(value)
            }
            // A byte string reads as a sequence of bytes (for `Vec<u8>`).
            BYTES => {
                let bytes = self.take_bytes()?;
                visitor.visit_seq(de::value::SeqDeserializer::<_, SerdeError>::new(
                    bytes.iter().copied(),
                ))
            }
            _ => Err(self.wrong(Kind::List)),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, SerdeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, SerdeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
        if self.token().ty() != DICT {
            return Err(self.wrong(Kind::Dict));
        }
        self.index += 1;
        let value = visitor.visit_map(Map { de: &mut *self })?;
        while self.token().ty() != END {
            self.skip();
        }
        self.index += 1;
        Ok(value)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, SerdeError> {
        self.deserialize_map(visitor)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, SerdeError> {
        match self.token().ty() {
            BYTES => visitor.visit_enum(self.take_str()?.into_deserializer()),
            DICT => {
                self.index += 1;
                let value = visitor.visit_enum(Enum { de: &mut *self })?;
                if self.token().ty() != END {
                    return Err(SerdeError::at(
                        self.offset(),
                        "an enum dictionary has exactly one entry".to_string(),
                    ));
                }
                self.index += 1;
                Ok(value)
            }
            _ => Err(self.wrong(Kind::Dict)),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
        // Keys that are not UTF-8 still match `#[serde(other)]`/ignored.
        let bytes = self.take_bytes()?;
        match std::str::from_utf8(bytes) {
            Ok(s) => visitor.visit_borrowed_str(s),
            Err(_) => visitor.visit_borrowed_bytes(bytes),
        }
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
        self.skip();
        visitor.visit_unit()
    }
}

struct Seq<'a, 'de, 't> {
    de: &'a mut Deserializer<'de, 't>,
}

impl<'de> de::SeqAccess<'de> for Seq<'_, 'de, '_> {
    type Error = SerdeError;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, SerdeError> {
        if self.de.token().ty() == END {
            return Ok(None);
        }
        seed.deserialize(&mut *self.de).map(Some)
    }
}

struct Map<'a, 'de, 't> {
    de: &'a mut Deserializer<'de, 't>,
}

impl<'de> de::MapAccess<'de> for Map<'_, 'de, '_> {
    type Error = SerdeError;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, SerdeError> {
        if self.de.token().ty() == END {
            return Ok(None);
        }
        seed.deserialize(Key { de: &mut *self.de }).map(Some)
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, SerdeError> {
        seed.deserialize(&mut *self.de)
    }
}

/// Deserializes a dictionary key: a byte string, offered as a string when
/// UTF-8 (so string-keyed maps and struct fields work) and as bytes
/// otherwise; integer-keyed maps parse the key's digits.
struct Key<'a, 'de, 't> {
    de: &'a mut Deserializer<'de, 't>,
}

impl<'de> Key<'_, 'de, '_> {
    fn parse<T: std::str::FromStr>(self) -> Result<T, SerdeError> {
        let offset = self.de.offset();
        let s = self.de.take_str()?;
        s.parse()
            .map_err(|_| SerdeError::at(offset, format!("key {s:?} is not a number")))
    }
}

macro_rules! key_int {
    ($method:ident, $visit:ident, $ty:ty) => {
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
            let v: $ty = self.parse()?;
            visitor.$visit(v)
        }
    };
}

impl<'de> de::Deserializer<'de> for Key<'_, 'de, '_> {
    type Error = SerdeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
        de::Deserializer::deserialize_identifier(&mut *self.de, visitor)
    }

    key_int!(deserialize_i8, visit_i8, i8);
    key_int!(deserialize_i16, visit_i16, i16);
    key_int!(deserialize_i32, visit_i32, i32);
    key_int!(deserialize_i64, visit_i64, i64);
    key_int!(deserialize_u8, visit_u8, u8);
    key_int!(deserialize_u16, visit_u16, u16);
    key_int!(deserialize_u32, visit_u32, u32);
    key_int!(deserialize_u64, visit_u64, u64);

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
        visitor.visit_borrowed_bytes(self.de.take_bytes()?)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, SerdeError> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, SerdeError> {
        visitor.visit_newtype_struct(self)
    }

    serde::forward_to_deserialize_any! {
        bool i128 u128 f32 f64 char str string option unit unit_struct seq tuple
        tuple_struct map struct enum identifier ignored_any
    }
}

struct Enum<'a, 'de, 't> {
    de: &'a mut Deserializer<'de, 't>,
}

impl<'de> de::EnumAccess<'de> for Enum<'_, 'de, '_> {
    type Error = SerdeError;
    type Variant = Self;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self), SerdeError> {
        let variant = seed.deserialize(Key { de: &mut *self.de })?;
        Ok((variant, self))
    }
}

impl<'de> de::VariantAccess<'de> for Enum<'_, 'de, '_> {
    type Error = SerdeError;

    fn unit_variant(self) -> Result<(), SerdeError> {
        self.de.skip();
        Ok(())
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(
        self,
        seed: T,
    ) -> Result<T::Value, SerdeError> {
        seed.deserialize(&mut *self.de)
    }

    fn tuple_variant<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, SerdeError> {
        de::Deserializer::deserialize_seq(&mut *self.de, visitor)
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, SerdeError> {
        de::Deserializer::deserialize_map(&mut *self.de, visitor)
    }
}

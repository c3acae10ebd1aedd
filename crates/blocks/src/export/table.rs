//! A table as the export writers take it: its name and columns, a row's
//! values, and the sink each format implements.

use std::path::Path;

use crate::error::{Error, Result};

/// A column's type: an SQLite `INT` (Parquet INT32, INT64 or BOOLEAN) or
/// `TEXT` (a Parquet string).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Int32,
    Int64,
    /// `0` or `1` in CSV and SQLite, as utxo_to_sqlite.py stores it.
    Bool,
    Text,
}

#[derive(Debug)]
pub(crate) struct Column {
    pub(crate) name: &'static str,
    pub(crate) kind: Kind,
    /// Whether the column may hold no value (NULL; empty in CSV).
    pub(crate) nullable: bool,
}

/// A table's name and columns.
#[derive(Debug)]
pub(crate) struct Table {
    pub(crate) name: &'static str,
    pub(crate) columns: &'static [Column],
}

impl Table {
    /// The `CREATE TABLE` statement, spaced as utxo_to_sqlite.py's.
    pub(crate) fn create_sql(&self) -> String {
        let columns: Vec<String> = self
            .columns
            .iter()
            .map(|c| {
                let kind = if c.kind == Kind::Text { "TEXT" } else { "INT" };
                format!("{} {kind}", c.name)
            })
            .collect();
        format!("CREATE TABLE {}({})", self.name, columns.join(", "))
    }
}

/// One value of a row, in its column's kind (`Null` where nullable).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Cell<'a> {
    Int(i64),
    Bool(bool),
    Text(&'a str),
    Null,
}

/// Where a table's rows go.
pub(crate) trait Sink {
    /// One row, a cell a column.
    fn row(&mut self, cells: &[Cell<'_>]) -> Result<()>;
    /// Everything written and synced to the file system.
    fn finish(self: Box<Self>) -> Result<()>;
}

/// An I/O error of a library (SQLite's, Parquet's) as this crate's, naming
/// the file.
pub(crate) fn write_error(out: &Path, error: std::io::Error) -> Error {
    Error::io(out, "write", error)
}

/// Lowercase hex of `bytes` appended to `out`, reversed when `reversed`
/// (a txid as Core shows it).
pub(crate) fn push_hex(out: &mut String, bytes: &[u8], reversed: bool) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut push = |byte: &u8| {
        out.push(DIGITS[(byte >> 4) as usize] as char);
        out.push(DIGITS[(byte & 15) as usize] as char);
    };
    if reversed {
        bytes.iter().rev().for_each(&mut push);
    } else {
        bytes.iter().for_each(&mut push);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_both_ways() {
        let mut out = String::new();
        push_hex(&mut out, &[0x01, 0xab, 0xf0], false);
        push_hex(&mut out, &[0x01, 0xab, 0xf0], true);
        assert_eq!(out, "01abf0f0ab01");
    }
}

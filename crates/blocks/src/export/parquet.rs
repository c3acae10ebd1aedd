//! Parquet through the parquet crate's own column writers (no arrow):
//! text columns as strings (`BYTE_ARRAY` annotated UTF8, the hex a SQL
//! user compares with), integers as INT32 or INT64, `coinbase` as BOOLEAN;
//! Snappy pages. Rows are gathered a row group at a time, at most
//! [`GROUP_ROWS`] rows or about [`GROUP_BYTES`] of values, so memory stays
//! bounded whatever the number of rows, and a reader (DuckDB) has many row
//! groups to share among its threads.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use bytes::Bytes;
use parquet::basic::Compression;
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, Int32Type, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::{SerializedColumnWriter, SerializedFileWriter};
use parquet::schema::parser::parse_message_type;

use crate::error::{Error, Result};
use crate::export::table::{Cell, Kind, Sink, Table, write_error};

/// The most rows of a row group.
pub(crate) const GROUP_ROWS: usize = 1 << 20;

/// About the most bytes of values a row group gathers before it is
/// written (its strings, and 8 bytes a value of the other columns).
pub(crate) const GROUP_BYTES: usize = 64 << 20;

/// Values of a text column handed to the column writer at a time.
const BATCH: usize = 1 << 13;

/// One column's values of the row group being gathered.
enum Values {
    Int32(Vec<i32>),
    Int64(Vec<i64>),
    Bool(Vec<bool>),
    /// The strings one after another, where each ends, and the definition
    /// levels (1 a value, 0 a null) of a nullable column.
    Text {
        data: Vec<u8>,
        ends: Vec<usize>,
        defined: Option<Vec<i16>>,
    },
}

/// Rows into a Parquet file.
pub(crate) struct ParquetSink {
    writer: SerializedFileWriter<BufWriter<File>>,
    columns: Vec<Values>,
    rows: usize,
    bytes: usize,
    /// [`GROUP_ROWS`] (fewer in tests).
    group_rows: usize,
    out: PathBuf,
}

impl ParquetSink {
    pub(crate) fn new(table: &Table, file: BufWriter<File>, out: &Path) -> Result<Self> {
        let fields: Vec<String> = table
            .columns
            .iter()
            .map(|c| {
                let repetition = if c.nullable { "OPTIONAL" } else { "REQUIRED" };
                let kind = match c.kind {
                    Kind::Int32 => "INT32",
                    Kind::Int64 => "INT64",
                    Kind::Bool => "BOOLEAN",
                    Kind::Text => "BYTE_ARRAY",
                };
                let annotation = if c.kind == Kind::Text { " (UTF8)" } else { "" };
                format!("{repetition} {kind} {}{annotation};", c.name)
            })
            .collect();
        let message = format!("message {} {{ {} }}", table.name, fields.join(" "));
        let schema = parse_message_type(&message).map_err(|e| error(out, e))?;
        let properties = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(GROUP_ROWS))
            .build();
        let writer = SerializedFileWriter::new(file, Arc::new(schema), Arc::new(properties))
            .map_err(|e| error(out, e))?;
        let columns = table
            .columns
            .iter()
            .map(|c| match c.kind {
                Kind::Int32 => Values::Int32(Vec::new()),
                Kind::Int64 => Values::Int64(Vec::new()),
                Kind::Bool => Values::Bool(Vec::new()),
                Kind::Text => Values::Text {
                    data: Vec::new(),
                    ends: Vec::new(),
                    defined: c.nullable.then(Vec::new),
                },
            })
            .collect();
        Ok(ParquetSink {
            writer,
            columns,
            rows: 0,
            bytes: 0,
            group_rows: GROUP_ROWS,
            out: out.to_path_buf(),
        })
    }

    /// Writes the gathered rows as one row group.
    fn write_group(&mut self) -> Result<()> {
        if self.rows == 0 {
            return Ok(());
        }
        let out = &self.out;
        let mut group = self.writer.next_row_group().map_err(|e| error(out, e))?;
        for values in &mut self.columns {
            let mut column = group
                .next_column()
                .map_err(|e| error(out, e))?
                .expect("the schema has a column for each");
            write_column(&mut column, values).map_err(|e| error(out, e))?;
            column.close().map_err(|e| error(out, e))?;
            values.clear();
        }
        group.close().map_err(|e| error(out, e))?;
        self.rows = 0;
        self.bytes = 0;
        Ok(())
    }
}

fn write_column(
    column: &mut SerializedColumnWriter<'_>,
    values: &mut Values,
) -> parquet::errors::Result<()> {
    match values {
        Values::Int32(v) => drop(column.typed::<Int32Type>().write_batch(v, None, None)?),
        Values::Int64(v) => drop(column.typed::<Int64Type>().write_batch(v, None, None)?),
        Values::Bool(v) => drop(column.typed::<BoolType>().write_batch(v, None, None)?),
        Values::Text {
            data,
            ends,
            defined,
        } => {
            // Every string a slice of one buffer: no allocation a value.
            let data = Bytes::from(std::mem::take(data));
            let writer = column.typed::<ByteArrayType>();
            let rows = defined.as_ref().map_or(ends.len(), Vec::len);
            let mut batch: Vec<ByteArray> = Vec::with_capacity(BATCH.min(rows));
            let (mut value, mut start) = (0, 0);
            for first in (0..rows).step_by(BATCH) {
                let last = (first + BATCH).min(rows);
                let levels = defined.as_deref().map(|l| &l[first..last]);
                let count = levels.map_or(last - first, |l| l.iter().filter(|&&d| d == 1).count());
                batch.clear();
                for &end in &ends[value..value + count] {
                    batch.push(ByteArray::from(data.slice(start..end)));
                    start = end;
                }
                value += count;
                writer.write_batch(&batch, levels, None)?;
            }
            // The buffer's allocation is not kept: the next group starts anew.
        }
    };
    Ok(())
}

impl Values {
    fn clear(&mut self) {
        match self {
            Values::Int32(v) => v.clear(),
            Values::Int64(v) => v.clear(),
            Values::Bool(v) => v.clear(),
            Values::Text {
                data,
                ends,
                defined,
            } => {
                data.clear();
                ends.clear();
                if let Some(levels) = defined {
                    levels.clear();
                }
            }
        }
    }
}

impl Sink for ParquetSink {
    fn row(&mut self, cells: &[Cell<'_>]) -> Result<()> {
        for (values, cell) in self.columns.iter_mut().zip(cells) {
            match (values, *cell) {
                (Values::Int32(v), Cell::Int(n)) => v.push(n as i32),
                (Values::Int64(v), Cell::Int(n)) => v.push(n),
                (Values::Bool(v), Cell::Bool(b)) => v.push(b),
                (
                    Values::Text {
                        data,
                        ends,
                        defined,
                    },
                    cell,
                ) => {
                    let text = match cell {
                        Cell::Text(text) => Some(text),
                        _ => None,
                    };
                    if let Some(text) = text {
                        data.extend_from_slice(text.as_bytes());
                        ends.push(data.len());
                        self.bytes += text.len();
                    }
                    if let Some(levels) = defined {
                        levels.push(text.is_some() as i16);
                    }
                }
                _ => unreachable!("a cell of its column's kind"),
            }
            self.bytes += 8;
        }
        self.rows += 1;
        if self.rows == self.group_rows || self.bytes >= GROUP_BYTES {
            self.write_group()?;
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<()> {
        self.write_group()?;
        let ParquetSink { writer, out, .. } = *self;
        let file = writer
            .into_inner()
            .map_err(|e| error(&out, e))?
            .into_inner()
            .map_err(|e| Error::io(&out, "write", e.into_error()))?;
        file.sync_all().map_err(|e| Error::io(&out, "sync", e))
    }
}

/// Parquet's error as an I/O error naming the file: the system's own
/// where it is one (a full disk), else Parquet's words.
fn error(out: &Path, error: ParquetError) -> Error {
    let io = match error {
        ParquetError::External(inner) => match inner.downcast::<std::io::Error>() {
            Ok(io) => *io,
            Err(other) => std::io::Error::other(other.to_string()),
        },
        other => std::io::Error::other(other.to_string()),
    };
    write_error(out, io)
}

#[cfg(test)]
mod tests {
    use super::*;
    // The balances' table: a nullable text column first.
    use crate::balances::BALANCES;
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::RowAccessor;

    #[test]
    fn row_groups_are_bounded_and_nulls_kept() {
        let dir = seekless_testkit::TempDir::new("parquet-groups");
        let path = dir.join("b.parquet");
        let file = BufWriter::new(File::create(&path).unwrap());
        let mut sink = Box::new(ParquetSink::new(&BALANCES, file, &path).unwrap());
        sink.group_rows = 3;
        let address = |i: i64| (i % 3 != 1).then(|| format!("a{i}"));
        for i in 0..10 {
            let address = address(i);
            let script = format!("{i:02x}");
            sink.row(&[
                address.as_deref().map_or(Cell::Null, Cell::Text),
                Cell::Text(&script),
                Cell::Int(100 - i),
                Cell::Int(i),
            ])
            .unwrap();
        }
        sink.finish().unwrap();
        let reader = SerializedFileReader::new(File::open(&path).unwrap()).unwrap();
        let groups: Vec<i64> = reader
            .metadata()
            .row_groups()
            .iter()
            .map(|g| g.num_rows())
            .collect();
        assert_eq!(groups, [3, 3, 3, 1]);
        let rows: Vec<(Option<String>, String, i64, i64)> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|row| {
                let row = row.unwrap();
                (
                    row.get_string(0).ok().cloned(),
                    row.get_string(1).unwrap().clone(),
                    row.get_long(2).unwrap(),
                    row.get_long(3).unwrap(),
                )
            })
            .collect();
        let expected: Vec<_> = (0..10)
            .map(|i| (address(i), format!("{i:02x}"), 100 - i, i))
            .collect();
        assert_eq!(rows, expected);
    }
}

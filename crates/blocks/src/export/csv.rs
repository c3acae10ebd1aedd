//! CSV: a header row of the column names, then a line a row, fields as
//! SQLite would show them (integers in decimal, `coinbase` 0 or 1, hex as
//! is, no value as an empty field). No field ever needs quoting: hex,
//! digits and addresses hold no comma, quote or line break.

use std::io::Write;
use std::path::PathBuf;

use crate::error::{Error, Result};
use crate::export::table::{Cell, Sink, Table};

/// Rows to a stream as CSV lines.
pub(crate) struct CsvSink<W: Write> {
    out: W,
    /// The name errors give the stream (a path, or "standard output").
    name: PathBuf,
    line: Vec<u8>,
}

impl<W: Write> CsvSink<W> {
    /// Writes the header row.
    pub(crate) fn new(table: &Table, out: W, name: PathBuf) -> Result<Self> {
        let mut sink = CsvSink {
            out,
            name,
            line: Vec::with_capacity(256),
        };
        for (i, column) in table.columns.iter().enumerate() {
            if i > 0 {
                sink.line.push(b',');
            }
            sink.line.extend_from_slice(column.name.as_bytes());
        }
        sink.line.push(b'\n');
        sink.flush_line()?;
        Ok(sink)
    }

    fn flush_line(&mut self) -> Result<()> {
        let written = self.out.write_all(&self.line);
        self.line.clear();
        written.map_err(|e| Error::io(&self.name, "write", e))
    }

    /// Flushes the stream and returns it.
    pub(crate) fn into_inner(mut self) -> Result<W> {
        self.out
            .flush()
            .map_err(|e| Error::io(&self.name, "write", e))?;
        Ok(self.out)
    }
}

impl<W: Output> Sink for CsvSink<W> {
    fn row(&mut self, cells: &[Cell<'_>]) -> Result<()> {
        for (i, cell) in cells.iter().enumerate() {
            if i > 0 {
                self.line.push(b',');
            }
            match cell {
                // Writing into a Vec cannot fail.
                Cell::Int(n) => {
                    let _ = write!(self.line, "{n}");
                }
                Cell::Bool(b) => self.line.push(if *b { b'1' } else { b'0' }),
                Cell::Text(text) => self.line.extend_from_slice(text.as_bytes()),
                Cell::Null => {}
            }
        }
        self.line.push(b'\n');
        self.flush_line()
    }

    fn finish(self: Box<Self>) -> Result<()> {
        let name = self.name.clone();
        let out = self.into_inner()?;
        out.sync().map_err(|e| Error::io(&name, "sync", e))
    }
}

/// A stream a table ends in: a file is synced at the end, a stream
/// (standard output) only flushed.
pub(crate) trait Output: Write {
    /// Writes what is buffered and makes it durable where it can be.
    fn sync(self) -> std::io::Result<()>;
}

impl Output for std::io::BufWriter<std::fs::File> {
    fn sync(self) -> std::io::Result<()> {
        self.into_inner().map_err(|e| e.into_error())?.sync_all()
    }
}

impl Output for &mut dyn Write {
    fn sync(self) -> std::io::Result<()> {
        self.flush()
    }
}

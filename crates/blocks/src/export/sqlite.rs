//! SQLite: one table, created by the statement utxo_to_sqlite.py runs
//! (`CREATE TABLE utxos(txid TEXT, vout INT, value INT, coinbase INT,
//! height INT, scriptpubkey TEXT)`; no index, as the script makes none),
//! rows inserted by one prepared statement in one transaction. The file is
//! a temporary one until renamed into place, so nothing has to survive a
//! crash while it is built: no journal, no syncs, until it is complete.

use std::path::{Path, PathBuf};

use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ToSql};

use crate::error::{Error, Result};
use crate::export::table::{Cell, Sink, Table, write_error};

/// Rows into a new database's table.
pub(crate) struct SqliteSink {
    connection: Connection,
    insert: String,
    /// The file being written (the temporary name).
    temp: PathBuf,
    /// The file errors name.
    out: PathBuf,
}

impl SqliteSink {
    /// Creates the database at `temp` (empty, by this process: a path that
    /// cannot be written fails here with the system's words) and its table.
    pub(crate) fn create(table: &Table, temp: &Path, out: &Path) -> Result<Self> {
        std::fs::File::create(temp).map_err(|e| Error::io(out, "create", e))?;
        let connection = Connection::open(temp).map_err(|e| Error::io(out, "open", e.into_io()))?;
        let placeholders = vec!["?"; table.columns.len()].join(", ");
        let sink = SqliteSink {
            connection,
            insert: format!("INSERT INTO {} VALUES({placeholders})", table.name),
            temp: temp.to_path_buf(),
            out: out.to_path_buf(),
        };
        let setup = format!(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; \
             PRAGMA locking_mode = EXCLUSIVE; PRAGMA cache_size = -65536; \
             BEGIN; {};",
            table.create_sql()
        );
        sink.connection
            .execute_batch(&setup)
            .map_err(|e| sink.error(e))?;
        Ok(sink)
    }

    /// SQLite's error as an I/O error naming the file, with the system's
    /// own error where SQLite kept it (a full disk, a file size limit).
    fn error(&self, error: rusqlite::Error) -> Error {
        use rusqlite::ErrorCode;
        let io = match error.sqlite_error_code() {
            Some(ErrorCode::DiskFull) => std::io::Error::new(
                std::io::ErrorKind::StorageFull,
                "No space left on device (SQLite: database or disk is full)",
            ),
            Some(ErrorCode::SystemIoFailure | ErrorCode::CannotOpen) => {
                // SAFETY: the handle is this open connection's, valid while
                // `self.connection` lives; sqlite3_system_errno only reads
                // the error number SQLite kept from its last failed call.
                let errno =
                    unsafe { rusqlite::ffi::sqlite3_system_errno(self.connection.handle()) };
                if errno != 0 {
                    std::io::Error::from_raw_os_error(errno)
                } else {
                    error.into_io()
                }
            }
            _ => error.into_io(),
        };
        write_error(&self.out, io)
    }
}

impl Sink for SqliteSink {
    fn row(&mut self, cells: &[Cell<'_>]) -> Result<()> {
        let inserted = self
            .connection
            .prepare_cached(&self.insert)
            .and_then(|mut statement| statement.execute(rusqlite::params_from_iter(cells)));
        inserted.map(drop).map_err(|e| self.error(e))
    }

    fn finish(self: Box<Self>) -> Result<()> {
        self.connection
            .execute_batch("COMMIT")
            .map_err(|e| self.error(e))?;
        let SqliteSink {
            connection,
            temp,
            out,
            ..
        } = *self;
        connection
            .close()
            .map_err(|(_, e)| Error::io(&out, "write", e.into_io()))?;
        let file = std::fs::File::open(&temp).map_err(|e| Error::io(&out, "open", e))?;
        file.sync_all().map_err(|e| Error::io(&out, "sync", e))
    }
}

impl ToSql for Cell<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match *self {
            Cell::Int(n) => ValueRef::Integer(n),
            Cell::Bool(b) => ValueRef::Integer(b as i64),
            Cell::Text(text) => ValueRef::Text(text.as_bytes()),
            Cell::Null => ValueRef::Null,
        }))
    }
}

/// rusqlite's error as an I/O error, its words kept.
trait IntoIo {
    fn into_io(self) -> std::io::Error;
}

impl IntoIo for rusqlite::Error {
    fn into_io(self) -> std::io::Error {
        std::io::Error::other(self.to_string())
    }
}

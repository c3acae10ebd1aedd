//! A UTXO snapshot's coins as a table in CSV, SQLite or Parquet (feature
//! `export`): the columns and values of Core's
//! `contrib/utxo-tools/utxo_to_sqlite.py` (`txid, vout, value, coinbase,
//! height, scriptpubkey`), in the snapshot's order. The balances table
//! (`balances/`) goes through the same writers.
//!
//! A table is written under a temporary name beside its file and renamed
//! into place when complete and synced; a failure leaves what was there.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::coin::{Coin, OutPoint};
use crate::error::{Error, Result};
use crate::snapshot::{SnapshotMetadata, SnapshotReader};
use crate::staged::Staged;

pub(crate) mod csv;
mod parquet;
mod sqlite;
mod table;

pub(crate) use table::{Cell, Column, Kind, Sink, Table, push_hex};

/// The file formats a table is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExportFormat {
    /// Comma-separated values: a header row, then one line a row.
    Csv,
    /// An SQLite database of one table (`utxos`, or `balances`).
    Sqlite,
    /// Apache Parquet, Snappy-compressed.
    Parquet,
}

impl ExportFormat {
    /// Every format, in the order the command line lists them.
    pub const ALL: [ExportFormat; 3] = [
        ExportFormat::Csv,
        ExportFormat::Sqlite,
        ExportFormat::Parquet,
    ];

    /// The format a file's extension names: `.csv`; `.sqlite`, `.sqlite3`
    /// or `.db`; `.parquet` (any case). `None` for any other.
    pub fn from_extension(path: &Path) -> Option<ExportFormat> {
        let extension = path.extension()?.to_str()?.to_ascii_lowercase();
        match extension.as_str() {
            "csv" => Some(ExportFormat::Csv),
            "sqlite" | "sqlite3" | "db" => Some(ExportFormat::Sqlite),
            "parquet" => Some(ExportFormat::Parquet),
            _ => None,
        }
    }

    /// The name the command line gives it: `csv`, `sqlite`, `parquet`.
    pub fn name(self) -> &'static str {
        match self {
            ExportFormat::Csv => "csv",
            ExportFormat::Sqlite => "sqlite",
            ExportFormat::Parquet => "parquet",
        }
    }
}

const fn column(name: &'static str, kind: Kind) -> Column {
    Column {
        name,
        kind,
        nullable: false,
    }
}

/// utxo_to_sqlite.py's table: `CREATE TABLE utxos(txid TEXT, vout INT,
/// value INT, coinbase INT, height INT, scriptpubkey TEXT)`.
pub(crate) const UTXOS: Table = Table {
    name: "utxos",
    columns: &[
        column("txid", Kind::Text),
        column("vout", Kind::Int32),
        column("value", Kind::Int64),
        column("coinbase", Kind::Bool),
        column("height", Kind::Int32),
        column("scriptpubkey", Kind::Text),
    ],
};

/// Writes `table` to `out` in `format`: `fill` gets the sink and pushes
/// the rows. Under a temporary name beside `out`, renamed when complete.
pub(crate) fn write_table(
    format: ExportFormat,
    table: &'static Table,
    out: &Path,
    fill: &mut dyn FnMut(&mut dyn Sink) -> Result<()>,
) -> Result<()> {
    let staged = Staged::beside(out, "export");
    let mut sink: Box<dyn Sink> = match format {
        ExportFormat::Sqlite => Box::new(sqlite::SqliteSink::create(table, staged.path(), out)?),
        ExportFormat::Csv | ExportFormat::Parquet => {
            let file = File::create(staged.path()).map_err(|e| Error::io(out, "create", e))?;
            let file = std::io::BufWriter::with_capacity(1 << 20, file);
            if format == ExportFormat::Csv {
                Box::new(csv::CsvSink::new(table, file, out.to_path_buf())?)
            } else {
                Box::new(parquet::ParquetSink::new(table, file, out)?)
            }
        }
    };
    fill(sink.as_mut())?;
    sink.finish()?;
    staged.commit(out)
}

/// Opens a snapshot file for reading; its I/O errors name it.
pub(crate) fn open_snapshot(path: &Path) -> Result<SnapshotReader<File>> {
    let file = File::open(path).map_err(|e| Error::io(path, "open", e))?;
    SnapshotReader::new(file).map_err(|e| e.in_file(path))
}

/// The next coin of `reader` into `coin`, I/O errors naming `path`.
pub(crate) fn next_coin<R: Read>(
    reader: &mut SnapshotReader<R>,
    coin: &mut Coin,
    path: &Path,
) -> Result<Option<OutPoint>> {
    reader.read_into(coin).map_err(|e| e.in_file(path))
}

/// Coins between two calls of the progress function.
pub(crate) const PROGRESS_EVERY: u64 = 1 << 12;

/// Writes the coins of the snapshot at `snapshot` to `out` in `format`, one
/// row a coin in the snapshot's order, with utxo_to_sqlite.py's columns
/// and values: `txid` as Core shows it (hex, bytes reversed), `vout`,
/// `value` in satoshis, `coinbase` (0 or 1; a Parquet BOOLEAN), `height`,
/// `scriptpubkey` as lowercase hex. `progress` is called with the number
/// of coins read since its last call. Returns the snapshot's header.
/// Nothing is at `out` until the file is complete.
pub fn export_utxos(
    snapshot: &Path,
    out: &Path,
    format: ExportFormat,
    progress: &mut dyn FnMut(u64),
) -> Result<SnapshotMetadata> {
    let mut reader = open_snapshot(snapshot)?;
    let metadata = *reader.metadata();
    let mut coin = Coin {
        value: 0,
        height: 0,
        coinbase: false,
        script: Vec::new(),
    };
    let (mut txid, mut script) = (String::with_capacity(64), String::new());
    let mut read = 0u64;
    write_table(format, &UTXOS, out, &mut |sink| {
        while let Some(outpoint) = next_coin(&mut reader, &mut coin, snapshot)? {
            txid.clear();
            push_hex(&mut txid, &outpoint.txid, true);
            script.clear();
            push_hex(&mut script, &coin.script, false);
            sink.row(&[
                Cell::Text(&txid),
                Cell::Int(outpoint.vout as i64),
                Cell::Int(coin.value as i64),
                Cell::Bool(coin.coinbase),
                Cell::Int(coin.height as i64),
                Cell::Text(&script),
            ])?;
            read += 1;
            if read.is_multiple_of(PROGRESS_EVERY) {
                progress(PROGRESS_EVERY);
            }
        }
        progress(read % PROGRESS_EVERY);
        Ok(())
    })?;
    Ok(metadata)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_from_extensions() {
        let of = |name: &str| ExportFormat::from_extension(Path::new(name));
        assert_eq!(of("a/utxo.csv"), Some(ExportFormat::Csv));
        assert_eq!(of("utxo.CSV"), Some(ExportFormat::Csv));
        for name in ["u.sqlite", "u.sqlite3", "u.db"] {
            assert_eq!(of(name), Some(ExportFormat::Sqlite));
        }
        assert_eq!(of("u.parquet"), Some(ExportFormat::Parquet));
        for name in ["u", "u.txt", ".csv", "u.csv.gz"] {
            assert_eq!(of(name), None, "{name}");
        }
    }

    #[test]
    fn the_create_statement_is_utxo_to_sqlite_pys() {
        assert_eq!(
            UTXOS.create_sql(),
            "CREATE TABLE utxos(txid TEXT, vout INT, value INT, coinbase INT, height INT, \
             scriptpubkey TEXT)"
        );
    }
}

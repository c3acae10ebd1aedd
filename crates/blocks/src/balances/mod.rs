//! Balances per scriptPubKey at a snapshot's height (rusty-blockparser's
//! `balances`): each distinct script of the UTXO set with its standard
//! address, the sum of its coins' values and their number, in a memory
//! budget. The coins are summed in a [`Tally`] while it fits; past its
//! budget the partial sums spill into partition files by a hash of the
//! script, each partition is then summed alone and sorted into a run, and
//! the runs are merged (`spill.rs`). The output is ordered by balance
//! descending, then by script bytes ascending: the same for any budget.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::address::script_address;
use crate::coin::Coin;
use crate::error::Result;
use crate::export::csv::CsvSink;
use crate::export::{
    Cell, Column, ExportFormat, Kind, PROGRESS_EVERY, Sink, Table, next_coin, open_snapshot,
    push_hex, write_table,
};
use crate::network::Network;
use crate::snapshot::SnapshotMetadata;

mod spill;
mod tally;

use spill::{Emit, Partitions, Records, RunWriter, Scratch, merge};
use tally::Tally;

/// The balances table: `address` (none for a script without a standard
/// address: NULL in SQLite and Parquet, an empty field in CSV),
/// `scriptpubkey` (hex), `balance` (satoshis), `coins`.
pub(crate) const BALANCES: Table = Table {
    name: "balances",
    columns: &[
        Column {
            name: "address",
            kind: Kind::Text,
            nullable: true,
        },
        Column {
            name: "scriptpubkey",
            kind: Kind::Text,
            nullable: false,
        },
        Column {
            name: "balance",
            kind: Kind::Int64,
            nullable: false,
        },
        Column {
            name: "coins",
            kind: Kind::Int64,
            nullable: false,
        },
    ],
};

/// How [`balances()`] sums.
#[derive(Clone, Debug)]
pub struct BalanceOptions {
    /// About the most memory the sums take, in bytes; past it they spill
    /// to files.
    pub memory: u64,
    /// Where the spill files go (a directory made in it and removed at the
    /// end); `None`: beside the output file, or the system's temporary
    /// directory when the output is a stream.
    pub tmp_dir: Option<PathBuf>,
}

impl Default for BalanceOptions {
    /// 1 GiB, spill files beside the output.
    fn default() -> Self {
        BalanceOptions {
            memory: 1 << 30,
            tmp_dir: None,
        }
    }
}

/// Where [`balances()`] writes.
pub enum BalancesTo<'a> {
    /// A file in a format, written under a temporary name and renamed when
    /// complete.
    File {
        /// The file.
        path: &'a Path,
        /// Its format.
        format: ExportFormat,
    },
    /// CSV to a stream (standard output); its errors name "standard output".
    Csv(&'a mut dyn Write),
}

impl std::fmt::Debug for BalancesTo<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BalancesTo::File { path, format } => f
                .debug_struct("File")
                .field("path", path)
                .field("format", format)
                .finish(),
            BalancesTo::Csv(_) => f.write_str("Csv(..)"),
        }
    }
}

/// What [`balances()`] found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BalancesReport {
    /// The snapshot's header.
    pub metadata: SnapshotMetadata,
    /// Distinct scripts (rows written).
    pub scripts: u64,
    /// Coins read.
    pub coins: u64,
    /// Their total value, in satoshis.
    pub amount: u64,
    /// Partition files the sums spilled into (0: they fit in memory).
    pub partitions: usize,
}

/// Sums the coins of the snapshot at `snapshot` by script and writes one
/// row a distinct script (`address, scriptpubkey, balance, coins`) to
/// `to`, by balance descending, then script ascending. `progress` is
/// called with the number of coins read since its last call. The whole
/// snapshot is read before the first row is written: a damaged one leaves
/// no output.
pub fn balances(
    snapshot: &Path,
    to: BalancesTo<'_>,
    options: &BalanceOptions,
    progress: &mut dyn FnMut(u64),
) -> Result<BalancesReport> {
    let scratch_dir = {
        let pid = std::process::id();
        match (&options.tmp_dir, &to) {
            (Some(dir), _) => dir.join(format!(".seekless-balances-{pid}")),
            (None, BalancesTo::File { path, .. }) => {
                let name = path.file_name().unwrap_or_default().to_string_lossy();
                path.with_file_name(format!(".{name}.seekless-balances-{pid}"))
            }
            (None, BalancesTo::Csv(_)) => {
                std::env::temp_dir().join(format!("seekless-balances-{pid}"))
            }
        }
    };
    let mut scratch = Scratch::new(scratch_dir);
    let budget = usize::try_from(options.memory).unwrap_or(usize::MAX);
    let mut summed = sum(snapshot, budget, &mut scratch, progress)?;
    let network = summed.report.metadata.network;
    let mut rows = Rows::new(network);
    match to {
        BalancesTo::File { path, format } => write_table(format, &BALANCES, path, &mut |sink| {
            summed.emit(budget, &mut |script, balance, coins| {
                rows.push(sink, script, balance, coins)
            })
        })?,
        BalancesTo::Csv(stream) => {
            let mut sink = CsvSink::new(&BALANCES, stream, "standard output".into())?;
            summed.emit(budget, &mut |script, balance, coins| {
                rows.push(&mut sink, script, balance, coins)
            })?;
            Box::new(sink).finish()?;
        }
    }
    let mut report = summed.report;
    report.scripts = rows.written;
    Ok(report)
}

/// The sums, in memory or in sorted runs, and what was read.
struct Summed {
    tally: Tally,
    runs: Vec<PathBuf>,
    report: BalancesReport,
}

impl Summed {
    /// Each script with its sums in the output's order.
    fn emit(&mut self, budget: usize, f: &mut Emit<'_>) -> Result<()> {
        if self.runs.is_empty() {
            self.tally.sorted(f)
        } else {
            merge(&self.runs, buffer_size(budget, self.runs.len()), f)
        }
    }
}

/// Read buffers and write buffers of the spill files: a share of the
/// budget, between 4 KiB and 1 MiB each.
fn buffer_size(budget: usize, files: usize) -> usize {
    (budget / 4 / files.max(1)).clamp(4 << 10, 1 << 20)
}

/// Reads every coin and sums by script: in `budget` bytes, or spilled into
/// partitions in `scratch`, each then summed into a sorted run.
fn sum(
    snapshot: &Path,
    budget: usize,
    scratch: &mut Scratch,
    progress: &mut dyn FnMut(u64),
) -> Result<Summed> {
    let mut reader = open_snapshot(snapshot)?;
    let metadata = *reader.metadata();
    let mut tally = Tally::new(budget / 4 * 3);
    let mut partitions: Option<Partitions> = None;
    let mut coin = Coin {
        value: 0,
        height: 0,
        coinbase: false,
        script: Vec::new(),
    };
    let (mut coins, mut amount) = (0u64, 0u64);
    while next_coin(&mut reader, &mut coin, snapshot)?.is_some() {
        if !tally.add(&coin.script, coin.value, 1, false) {
            let parts = match &mut partitions {
                Some(parts) => parts,
                None => {
                    // Enough partitions that each one's sums, at the rate
                    // seen so far, fit the budget with room to spare.
                    let share = metadata.coins.div_ceil(coins.max(1)) as usize;
                    let count = (2 * share).next_power_of_two().clamp(2, 256);
                    let buffer = buffer_size(budget, count);
                    partitions.insert(Partitions::create(scratch, count, buffer)?)
                }
            };
            spill(&mut tally, parts)?;
            tally.add(&coin.script, coin.value, 1, true);
        }
        coins += 1;
        amount = amount.saturating_add(coin.value);
        if coins.is_multiple_of(PROGRESS_EVERY) {
            progress(PROGRESS_EVERY);
        }
    }
    progress(coins % PROGRESS_EVERY);
    let mut report = BalancesReport {
        metadata,
        scripts: 0,
        coins,
        amount,
        partitions: 0,
    };
    let mut runs = Vec::new();
    if let Some(mut parts) = partitions {
        spill(&mut tally, &mut parts)?;
        report.partitions = parts.len();
        let buffer = buffer_size(budget, 1);
        for (number, path) in parts.finish()?.into_iter().enumerate() {
            // A partition summed alone (its scripts are in no other), in
            // memory whatever the budget, sorted into a run.
            tally.clear();
            let mut records = Records::open(&path, buffer)?;
            let mut script = Vec::new();
            while let Some((balance, coins)) = records.next(&mut script)? {
                tally.add(&script, balance, coins, true);
            }
            drop(records);
            let mut run = RunWriter::create(scratch, number, buffer)?;
            tally.sorted(|script, balance, coins| run.push(script, balance, coins))?;
            runs.push(run.finish()?);
            let _ = std::fs::remove_file(&path);
        }
        tally = Tally::new(0);
    }
    Ok(Summed {
        tally,
        runs,
        report,
    })
}

/// Moves the tally's sums into the partitions and empties it.
fn spill(tally: &mut Tally, partitions: &mut Partitions) -> Result<()> {
    let mut written = Ok(());
    tally.for_each(|script, balance, coins| {
        if written.is_ok() {
            written = partitions.push(script, balance, coins);
        }
    });
    tally.clear();
    written
}

/// Rows of the balances table from scripts and sums.
struct Rows {
    network: Network,
    hex: String,
    written: u64,
}

impl Rows {
    fn new(network: Network) -> Rows {
        Rows {
            network,
            hex: String::new(),
            written: 0,
        }
    }

    fn push(&mut self, sink: &mut dyn Sink, script: &[u8], balance: u64, coins: u64) -> Result<()> {
        let address = script_address(script, self.network);
        self.hex.clear();
        push_hex(&mut self.hex, script, false);
        sink.row(&[
            address.as_deref().map_or(Cell::Null, Cell::Text),
            Cell::Text(&self.hex),
            Cell::Int(balance.min(i64::MAX as u64) as i64),
            Cell::Int(coins as i64),
        ])?;
        self.written += 1;
        Ok(())
    }
}

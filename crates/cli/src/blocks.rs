//! `seekless blocks …`: argument parsing and printing around the
//! `seekless-blocks` engine.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use seekless_blocks::{
    BadKind, BlockFile, Chain, ChainState, CoinStore, ConnectReport, DEFAULT_MAX_FILE_SIZE,
    DiskCoins, LinearizeOptions, Network, ScanOptions, ScanOutput, StateOptions, TxIndexOptions,
    UtxoStats, XorKey, check_linearize_output, connect, linearize, list_block_files, scan,
    write_snapshot,
};
use serde_json::{Value, json};

use crate::report::fail;

mod export;
mod txindex;

/// Where the blocks are and how to read them.
#[derive(Debug, clap::Args)]
pub struct Source {
    /// A Core `blocks/` directory (its blkNNNNN.dat files, in number order)
    /// or block files, in the order given.
    #[arg(required = true)]
    paths: Vec<PathBuf>,
    /// main, testnet3, testnet4, signet or regtest (default: detected from
    /// the first valid record).
    #[arg(long)]
    network: Option<String>,
    /// Search every block body for records hidden inside a torn record
    /// (reads every byte; `--verify` always does).
    #[arg(long)]
    thorough: bool,
    /// The 8-byte XOR key as 16 hex digits (default: the xor.dat next to the
    /// files; none means plain files).
    #[arg(long, value_name = "HEX")]
    xor_key: Option<String>,
    /// Also parse every transaction and check merkle roots: a block that
    /// fails, and its descendants, are not on the best chain (as Core would
    /// not connect them), and are named.
    #[arg(long)]
    verify: bool,
    /// Files read at once, each on a thread of its own (default: the cores).
    /// The output is the same for any number.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
}

/// `seekless blocks` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Read the block files once: count blocks, find the best tip, stale
    /// blocks, orphans, duplicates and damaged records. Exit 1 if `--verify`
    /// finds invalid blocks.
    Scan {
        #[command(flatten)]
        source: Source,
        /// Print one JSON object instead of the summary.
        #[arg(long)]
        json: bool,
    },
    /// Print the best chain from genesis: `HEIGHT HASH FILE OFFSET` per block.
    List {
        #[command(flatten)]
        source: Source,
        /// One JSON object per block (height, hash, file, offset), one per
        /// line.
        #[arg(long)]
        json: bool,
    },
    /// Write the best chain in height order as plain blkNNNNN.dat files.
    Linearize {
        #[command(flatten)]
        source: Source,
        /// Output directory.
        #[arg(short = 'o', long = "output", value_name = "DIR")]
        output: PathBuf,
        /// Start a new file before one would exceed this many bytes
        /// (suffixes K, M, G).
        #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_FILE_SIZE,
              value_parser = crate::size::parse_positive)]
        max_file_size: u64,
        /// Write into a non-empty directory, replacing the block files an
        /// earlier linearize wrote there (other files are left alone).
        #[arg(long)]
        force: bool,
    },
    /// Connect the best chain's blocks into the UTXO set and write it as
    /// Core's `dumptxoutset` snapshot; print what `gettxoutsetinfo` prints.
    /// Exit 1 if a block does not connect (the set at its parent is written).
    Utxo {
        #[command(flatten)]
        source: Source,
        /// The snapshot file to write.
        #[arg(short = 'o', long = "output", value_name = "SNAPSHOT")]
        output: PathBuf,
        /// Stop at this height (default: the tip).
        #[arg(long, value_name = "H")]
        height: Option<u32>,
        /// Memory budget for the coins kept in memory, in bytes (suffixes
        /// K, M, G, T; default: half the machine's memory, at most 4G).
        /// Beyond it, coins go to files in a directory beside the output.
        #[arg(long, value_parser = crate::size::parse)]
        memory: Option<u64>,
        /// Directory for the coins' files (default: the output's
        /// directory); removed at the end.
        #[arg(long, conflicts_with = "state")]
        tmp_dir: Option<PathBuf>,
        /// Keep the chainstate in DIR between runs (made at the first):
        /// connect only the blocks new since the last run, disconnect
        /// those that left the best chain (or are above --height).
        #[arg(long, value_name = "DIR")]
        state: Option<PathBuf>,
        /// With --state: blocks whose undo data is kept, the deepest reorg
        /// (or lowest --height below the state's tip) it can go back.
        #[arg(long, value_name = "N", default_value_t = seekless_blocks::DEFAULT_UNDO_BLOCKS,
              requires = "state")]
        undo_blocks: u32,
        /// Print one JSON object, with `gettxoutsetinfo`'s keys.
        #[arg(long)]
        json: bool,
    },
    /// Index every transaction of the best chain by txid (Core's
    /// `-txindex`, from the block files alone), for `blocks tx`.
    Txindex {
        #[command(flatten)]
        source: Source,
        /// The index file to write (replaced when complete).
        #[arg(short = 'o', long = "output", value_name = "INDEX")]
        output: PathBuf,
        /// Memory to sort in before spilling sorted runs beside the output
        /// (suffixes K, M, G); the index is the same for any amount.
        #[arg(long, value_name = "BYTES", default_value = "1G",
              value_parser = crate::size::parse_positive)]
        memory: u64,
    },
    /// Write the coins of a UTXO snapshot (`blocks utxo`'s, or Core's
    /// `dumptxoutset`) as a table, one row a coin in the snapshot's order,
    /// with the columns of Core's utxo_to_sqlite.py: txid, vout, value,
    /// coinbase, height, scriptpubkey.
    Export {
        /// The snapshot file.
        snapshot: PathBuf,
        /// The file to write (replaced when complete).
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: PathBuf,
        /// The file's format (default: from OUT's extension: .csv; .sqlite,
        /// .sqlite3 or .db; .parquet).
        #[arg(long, value_enum)]
        format: Option<export::Format>,
    },
    /// Sum a UTXO snapshot's coins by scriptPubKey: one row a distinct
    /// script (address, scriptpubkey, balance, coins), by balance
    /// descending, then script. CSV to standard output without -o.
    Balances {
        /// The snapshot file.
        snapshot: PathBuf,
        /// The file to write (replaced when complete).
        #[arg(short = 'o', long = "output", value_name = "OUT")]
        output: Option<PathBuf>,
        /// The file's format (default: from OUT's extension; CSV on
        /// standard output).
        #[arg(long, value_enum)]
        format: Option<export::Format>,
        /// Memory budget for the sums, in bytes (suffixes K, M, G, T;
        /// default 1G). Beyond it, they go to files in a directory beside
        /// the output.
        #[arg(long, value_parser = crate::size::parse)]
        memory: Option<u64>,
        /// Directory for those files (default: the output's directory, or
        /// the system's temporary directory for standard output); removed
        /// at the end.
        #[arg(long)]
        tmp_dir: Option<PathBuf>,
    },
    /// Print transactions by txid from an index `blocks txindex` wrote: the
    /// raw transaction as hex, one a line. Exit 1 if one is not there.
    Tx {
        /// The index file.
        index: PathBuf,
        /// Transaction ids (64 hex digits, as Core shows them).
        #[arg(required = true, value_name = "TXID")]
        txids: Vec<String>,
        /// One JSON object a transaction, as `getrawtransaction TXID 1`
        /// shows it, with the block's height and the position in it.
        #[arg(long)]
        json: bool,
        /// The directory that holds the block files now (default: where
        /// they were indexed).
        #[arg(long, value_name = "DIR")]
        blocks: Option<PathBuf>,
    },
}

/// Run a `seekless blocks` subcommand.
pub fn run(command: Command) -> ExitCode {
    let result = match command {
        Command::Scan { source, json } => run_scan(&source, json),
        Command::List { source, json } => run_list(&source, json),
        Command::Linearize {
            source,
            output,
            max_file_size,
            force,
        } => run_linearize(
            &source,
            &output,
            &LinearizeOptions {
                max_file_size,
                force,
            },
        ),
        Command::Utxo {
            source,
            output,
            height,
            memory,
            tmp_dir,
            state,
            undo_blocks,
            json,
        } => run_utxo(
            &source,
            &output,
            height,
            &Store {
                memory: memory.unwrap_or_else(DiskCoins::default_budget),
                dir: tmp_dir,
                state: state.map(|dir| (dir, undo_blocks)),
            },
            json,
        ),
        Command::Txindex {
            source,
            output,
            memory,
        } => run_txindex(&source, &output, memory),
        Command::Tx {
            index,
            txids,
            json,
            blocks,
        } => txindex::run_tx(&index, &txids, json, blocks.as_deref()),
        Command::Export {
            snapshot,
            output,
            format,
        } => export::run_export(&snapshot, &output, format),
        Command::Balances {
            snapshot,
            output,
            format,
            memory,
            tmp_dir,
        } => export::run_balances(
            &snapshot,
            output.as_deref(),
            format,
            &export::balance_options(memory, tmp_dir),
        ),
    };
    result.unwrap_or_else(fail)
}

/// Refuses an output among the inputs before the scan, then builds.
fn run_txindex(source: &Source, output: &Path, memory: u64) -> Result<ExitCode, String> {
    let inputs: Vec<&Path> = source.paths.iter().map(PathBuf::as_path).collect();
    crate::guard::output_apart(output, &inputs)?;
    let (scanned, chain) = load(source)?;
    let threads = source
        .threads
        .map_or(TxIndexOptions::default().threads, usize::from);
    let options = TxIndexOptions { memory, threads };
    txindex::run_txindex(&scanned, &chain, output, &options)
}

fn load(source: &Source) -> Result<(ScanOutput, Chain), String> {
    scan_files(source, block_files(source)?)
}

fn block_files(source: &Source) -> Result<Vec<BlockFile>, String> {
    let xor = match source.xor_key.as_deref() {
        Some(none) if none.eq_ignore_ascii_case("none") => Some(XorKey::default()),
        key => key
            .map(XorKey::from_hex)
            .transpose()
            .map_err(|e| e.to_string())?,
    };
    list_block_files(&source.paths, xor).map_err(|e| e.to_string())
}

/// Scans `files`; finding no block of the network at all is an error that
/// says what may be wrong (the network, or a missing XOR key).
fn scan_files(source: &Source, files: Vec<BlockFile>) -> Result<(ScanOutput, Chain), String> {
    let network = source
        .network
        .as_deref()
        .map(Network::from_name)
        .transpose()
        .map_err(|e| e.to_string())?;
    let total = files.iter().map(|f| f.len).sum();
    let bar = crate::progress::bytes(total, "scan");
    let options = ScanOptions {
        network,
        verify: source.verify,
        thorough: source.thorough,
        threads: source
            .threads
            .map_or(ScanOptions::default().threads, usize::from),
        ..ScanOptions::default()
    };
    let read_plain = files.iter().all(|f| f.xor.is_zero());
    // What may be wrong when no block is found: the network, or a key.
    let mut hint = String::new();
    if network.is_some() {
        hint.push_str("; wrong --network?");
    }
    if read_plain && source.xor_key.is_none() {
        hint.push_str(
            "; if the files are XOR-obfuscated (Core 28 and later), is xor.dat missing? \
             copy it from Core's blocks directory or give --xor-key",
        );
    }
    let mut output = scan(files, &options, &mut |n| bar.inc(n)).map_err(|e| match e.kind() {
        seekless_blocks::ErrorKind::NetworkNotDetected => {
            format!("no valid block record found to detect the network{hint}; or pass --network")
        }
        _ => e.to_string(),
    })?;
    bar.finish_and_clear();
    let chain = Chain::build(&mut output);
    if chain.is_empty() && total > 0 {
        let what = match network {
            Some(network) => format!("no {network} block"),
            None => "no block of any network".to_string(),
        };
        return Err(format!(
            "{what} found in {} ({} bad records){hint}",
            crate::words::count(output.files.len() as u64, "file", "files"),
            output.bad_records.len()
        ));
    }
    Ok((output, chain))
}

fn file_name(files: &[BlockFile], index: usize) -> String {
    files[index].path.display().to_string()
}

fn bad_detail(kind: &BadKind) -> String {
    match kind {
        BadKind::Garbage => "garbage".to_string(),
        BadKind::BadSize { size } => format!("size {size} out of range"),
        BadKind::BadProofOfWork => "header fails its proof of work".to_string(),
        BadKind::Truncated {
            size: Some(size),
            available,
        } => {
            format!("truncated record ({available} of {size} bytes)")
        }
        BadKind::Truncated { size: None, .. } => "truncated record prefix".to_string(),
        _ => kind.name().to_string(),
    }
}

fn run_scan(source: &Source, as_json: bool) -> Result<ExitCode, String> {
    let verify = source.verify;
    let (output, chain) = load(source)?;
    let tip = chain.tip();
    if as_json {
        let bad: Vec<Value> = output
            .bad_records
            .iter()
            .map(|bad| {
                let mut object = json!({
                    "file": file_name(&output.files, bad.file),
                    "offset": bad.record.offset,
                    "kind": bad.record.kind.name(),
                    "skipped": bad.record.skipped,
                });
                match bad.record.kind {
                    BadKind::BadSize { size }
                    | BadKind::Truncated {
                        size: Some(size), ..
                    } => {
                        object["size"] = json!(size);
                    }
                    _ => {}
                }
                object
            })
            .collect();
        let mut object = json!({
            "network": output.network.name(),
            "files": output.files.len(),
            "bytes": output.bytes,
            "records": output.records,
            "blocks": chain.len(),
            "tip_hash": tip.map(|t| t.hash.to_string()),
            "tip_height": tip.and_then(|t| t.height),
            "stale": chain.stale(),
            "orphans": chain.orphans(),
            "duplicates": chain.duplicates(),
            "bad_records": output.bad_records.len(),
            "bad_record_list": bad,
        });
        if verify {
            object["invalid"] = json!(
                output
                    .invalid
                    .iter()
                    .map(|i| i.hash.to_string())
                    .collect::<Vec<_>>()
            );
            object["invalid_details"] = json!(
                output
                    .invalid
                    .iter()
                    .map(|i| json!({
                        "hash": i.hash.to_string(),
                        "file": file_name(&output.files, i.file),
                        "offset": i.offset,
                        "error": i.error.to_string(),
                    }))
                    .collect::<Vec<_>>()
            );
        }
        println!("{object}");
    } else {
        println!("network     {}", output.network);
        println!(
            "files       {} ({} bytes)",
            output.files.len(),
            output.bytes
        );
        println!(
            "blocks      {} (stale {}, orphans {}, duplicates {})",
            chain.len(),
            chain.stale(),
            chain.orphans(),
            chain.duplicates()
        );
        match tip {
            Some(tip) => println!(
                "tip         {} at height {}",
                tip.hash,
                tip.height.unwrap_or(0)
            ),
            None => println!("tip         none (genesis not found)"),
        }
        println!("bad records {}", output.bad_records.len());
        for bad in &output.bad_records {
            println!(
                "  {} offset {}: {}, {} bytes skipped",
                file_name(&output.files, bad.file),
                bad.record.offset,
                bad_detail(&bad.record.kind),
                bad.record.skipped
            );
        }
        if verify {
            println!("invalid     {}", output.invalid.len());
            for invalid in &output.invalid {
                println!(
                    "  {} {} offset {}: {}",
                    invalid.hash,
                    file_name(&output.files, invalid.file),
                    invalid.offset,
                    invalid.error
                );
            }
        }
    }
    Ok(if verify && !output.invalid.is_empty() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

fn run_list(source: &Source, as_json: bool) -> Result<ExitCode, String> {
    let (output, chain) = load(source)?;
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for block in chain.best_chain() {
        let (height, file) = (
            block.height.unwrap_or(0),
            file_name(&output.files, block.file),
        );
        let line = if as_json {
            let object = json!({
                "height": height,
                "hash": block.hash.to_string(),
                "file": file,
                "offset": block.offset,
            });
            writeln!(out, "{object}")
        } else {
            writeln!(out, "{height} {} {file} {}", block.hash, block.offset)
        };
        if line.is_err() {
            // A closed pipe (`| head`) is not an error worth reporting.
            return Ok(ExitCode::SUCCESS);
        }
    }
    let _ = out.flush();
    Ok(ExitCode::SUCCESS)
}

fn run_linearize(
    source: &Source,
    dir: &Path,
    options: &LinearizeOptions,
) -> Result<ExitCode, String> {
    let files = block_files(source)?;
    // Refuse a bad output before the scan, not after it.
    check_linearize_output(dir, &files, options).map_err(|e| e.to_string())?;
    let (output, chain) = scan_files(source, files)?;
    let total = chain.best_chain().map(|b| b.size as u64).sum();
    let bar = crate::progress::bytes(total, "linearize");
    let report = linearize(&chain, &output.files, dir, options, &mut |n| bar.inc(n))
        .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    println!(
        "wrote {} ({} bytes) in {} to {}",
        crate::words::count(report.blocks, "block", "blocks"),
        report.bytes,
        crate::words::count(report.files.len() as u64, "file", "files"),
        dir.display()
    );
    Ok(ExitCode::SUCCESS)
}

/// Where `blocks utxo` keeps the coins that do not fit in memory.
struct Store {
    memory: u64,
    dir: Option<PathBuf>,
    /// `--state DIR` and `--undo-blocks`.
    state: Option<(PathBuf, u32)>,
}

impl Store {
    /// The store's directory: `.NAME.utxo-store` beside the output (or in
    /// `--tmp-dir`). One a killed run left there is removed first.
    fn open(&self, output: &Path) -> Result<DiskCoins, String> {
        let name = output.file_name().unwrap_or_default().to_string_lossy();
        let parent = match output.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        let dir = self
            .dir
            .as_deref()
            .unwrap_or(parent)
            .join(format!(".{name}.utxo-store"));
        if dir.exists() {
            std::fs::remove_dir_all(&dir)
                .map_err(|e| format!("removing {} a killed run left: {e}", dir.display()))?;
        }
        DiskCoins::create(&dir, self.memory).map_err(|e| e.to_string())
    }
}

fn run_utxo(
    source: &Source,
    output: &Path,
    height: Option<u32>,
    store: &Store,
    as_json: bool,
) -> Result<ExitCode, String> {
    let inputs: Vec<&Path> = source.paths.iter().map(PathBuf::as_path).collect();
    crate::guard::output_apart(output, &inputs)?;
    if let Some((dir, undo_blocks)) = &store.state {
        // The state refuses a directory holding anything but its own files.
        let options = StateOptions {
            memory: store.memory,
            undo_blocks: *undo_blocks,
        };
        return run_utxo_state(source, output, height, dir, &options, as_json);
    }
    let (scanned, chain) = load(source)?;
    let stop = height.or(chain.tip().and_then(|t| t.height)).unwrap_or(0);
    let total = chain
        .best_chain()
        .take(stop as usize + 1)
        .map(|b| b.size as u64)
        .sum();
    let bar = crate::progress::bytes(total, "connect");
    let mut coins = store.open(output)?;
    let report = connect(&chain, &scanned.files, height, &mut coins, &mut |n| {
        bar.inc(n)
    })
    .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    let bar = crate::progress::counted(coins.len(), "coins");
    let stats = write_snapshot(&coins, chain.network(), report.hash, output, &mut |n| {
        bar.inc(n)
    })
    .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    print_utxo(&report, &stats, output, as_json)
}

/// Prints what `gettxoutsetinfo` prints; exit 1 when a block did not
/// connect.
fn print_utxo(
    report: &ConnectReport,
    stats: &UtxoStats,
    output: &Path,
    as_json: bool,
) -> Result<ExitCode, String> {
    let amount = format!(
        "{}.{:08}",
        stats.total_amount / 100_000_000,
        stats.total_amount % 100_000_000
    );
    let path = output.display().to_string();
    if as_json {
        // total_amount as Core prints it: a number with 8 decimals, which
        // a float would not keep.
        println!(
            "{{\"height\":{},\"bestblock\":\"{}\",\"txouts\":{},\"bogosize\":{},\
             \"total_amount\":{amount},\"muhash\":\"{}\",\"path\":{}}}",
            report.height,
            report.hash,
            stats.coins,
            stats.bogosize,
            stats.muhash_hex(),
            json!(path)
        );
    } else {
        println!("height        {}", report.height);
        println!("bestblock     {}", report.hash);
        println!("txouts        {}", stats.coins);
        println!("bogosize      {}", stats.bogosize);
        println!("total_amount  {amount}");
        println!("muhash        {}", stats.muhash_hex());
        println!("snapshot      {path}");
    }
    Ok(match &report.failure {
        Some(failure) => {
            eprintln!(
                "seekless: {failure}; the snapshot is the set at height {}",
                report.height
            );
            ExitCode::from(1)
        }
        None => ExitCode::SUCCESS,
    })
}

/// `blocks utxo --state DIR`: the state opened (locked) after the scan,
/// brought to the best chain, its set written as the snapshot.
fn run_utxo_state(
    source: &Source,
    output: &Path,
    height: Option<u32>,
    dir: &Path,
    options: &StateOptions,
    as_json: bool,
) -> Result<ExitCode, String> {
    let (scanned, chain) = load(source)?;
    let mut state = ChainState::open(dir, chain.network(), options).map_err(|e| e.to_string())?;
    let stop = height.or(chain.tip().and_then(|t| t.height)).unwrap_or(0);
    let total = chain
        .best_chain()
        .take(stop as usize + 1)
        .skip(state.height() as usize + 1)
        .map(|b| b.size as u64)
        .sum();
    let bar = crate::progress::bytes(total, "connect");
    let update = state
        .update(&chain, &scanned.files, height, &mut |n| bar.inc(n))
        .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    let bar = crate::progress::counted(state.coins().len(), "coins");
    let report = update.connect;
    let stats = write_snapshot(
        state.coins(),
        chain.network(),
        report.hash,
        output,
        &mut |n| bar.inc(n),
    )
    .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    print_utxo(&report, &stats, output, as_json)
}

//! `seekless blocks txindex` and `seekless blocks tx`: build the
//! transaction index, answer txids from it.

use std::io::Write;
use std::path::Path;
use std::process::ExitCode;

use seekless_blocks::{
    BlockHash, Chain, ScanOutput, TxIndex, TxIndexOptions, build_txindex, tx_json,
};

/// Builds the index of `chain` (scanned from `scanned`'s files) into `output`.
pub(super) fn run_txindex(
    scanned: &ScanOutput,
    chain: &Chain,
    output: &Path,
    options: &TxIndexOptions,
) -> Result<ExitCode, String> {
    let total = chain.best_chain().map(|b| b.size as u64).sum();
    let bar = crate::progress::bytes(total, "txindex");
    let report = build_txindex(chain, &scanned.files, output, options, &mut |n| bar.inc(n))
        .map_err(|e| e.to_string())?;
    bar.finish_and_clear();
    let tip = match chain.tip() {
        Some(tip) => format!("tip {} at height {}", tip.hash, tip.height.unwrap_or(0)),
        None => "no best chain".to_string(),
    };
    println!(
        "indexed {} of {} ({tip}) in {} ({} bytes, {:.1} a transaction)",
        crate::words::count(report.transactions, "transaction", "transactions"),
        crate::words::count(report.blocks, "block", "blocks"),
        output.display(),
        report.index_bytes,
        report.index_bytes as f64 / report.transactions.max(1) as f64,
    );
    if report.repeated > 0 {
        println!(
            "{} repeated by a later block: indexed at the later one",
            crate::words::count(report.repeated, "txid", "txids"),
        );
    }
    Ok(ExitCode::SUCCESS)
}

pub(super) fn run_tx(
    index: &Path,
    txids: &[String],
    as_json: bool,
    blocks: Option<&Path>,
) -> Result<ExitCode, String> {
    let wanted: Vec<BlockHash> = txids
        .iter()
        .map(|t| BlockHash::from_hex(t).map_err(|_| format!("{t:?} is not a txid (64 hex digits)")))
        .collect::<Result<_, _>>()?;
    let mut opened = TxIndex::open(index).map_err(|e| e.to_string())?;
    if let Some(dir) = blocks {
        opened = opened.with_blocks_dir(dir);
    }
    let tip_height = opened.tip().map_or(0, |(_, height)| height);
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let mut missing = false;
    for txid in &wanted {
        let Some(found) = opened.get(&txid.0).map_err(|e| e.to_string())? else {
            let _ = out.flush();
            eprintln!("seekless: transaction {txid} is not in {}", index.display());
            missing = true;
            continue;
        };
        let line = if as_json {
            let block = opened
                .block(found.location.height)
                .map_err(|e| e.to_string())?;
            tx_json(&found, &block, tip_height).map_err(|e| e.to_string())?
        } else {
            found.raw.iter().map(|b| format!("{b:02x}")).collect()
        };
        if writeln!(out, "{line}").is_err() {
            // A closed pipe (`| head`) is not an error worth reporting.
            return Ok(ExitCode::SUCCESS);
        }
    }
    let _ = out.flush();
    Ok(if missing {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

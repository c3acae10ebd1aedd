//! `-- --txindex`: `blocks txindex` over the benchmark's chain, then
//! lookups of random txids with the index and the block files evicted from
//! the page cache: the reads a lookup makes (the process's read calls,
//! `syscr` in `/proc/self/io`), the bytes it brings from the disk
//! (`read_bytes`) and its time. `locate` alone reads the index only; `get`
//! then reads the transaction from its block file and hashes it.

use std::fs::File;
use std::path::Path;
use std::time::Instant;

use seekless_blocks::{
    BlockFile, Chain, ScanOptions, Transaction, TxIndex, TxIndexOptions, build_txindex,
    list_block_files, scan,
};
use seekless_testkit::Rng;
use seekless_testkit::measure::{drop_cache, median};

/// Lookups a batch: each at a txid of its own, so each finds its page cold.
const LOOKUPS: usize = 2_000;

/// `(read calls, bytes read from storage)` of this process so far.
fn io_counts() -> (u64, u64) {
    let io = std::fs::read_to_string("/proc/self/io").expect("proc io");
    let field = |name: &str| {
        io.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .expect("io field")
    };
    (field("syscr:"), field("read_bytes:"))
}

/// The txid of one random transaction of each of `n` random best-chain
/// blocks, read from the files as the scan found them.
fn random_txids(chain: &Chain, files: &[BlockFile], n: usize, rng: &mut Rng) -> Vec<[u8; 32]> {
    use std::os::unix::fs::FileExt;
    let best: Vec<_> = chain.best_chain().skip(1).collect();
    (0..n)
        .map(|_| {
            let info = best[(rng.next_u64() % best.len() as u64) as usize];
            let file = &files[info.file];
            let start = info.offset + 8;
            let mut block = vec![0u8; info.size as usize];
            File::open(&file.path)
                .and_then(|f| f.read_exact_at(&mut block, start))
                .expect("read block");
            file.xor.apply(&mut block, start);
            let (count, mut at) = compact_size(&block, 80);
            let pick = rng.next_u64() % count;
            let mut txid = [0; 32];
            for i in 0..=pick {
                let (tx, len) = Transaction::parse(&block[at..], at).expect("tx");
                if i == pick {
                    txid = tx.txid();
                }
                at += len;
            }
            txid
        })
        .collect()
}

fn compact_size(bytes: &[u8], at: usize) -> (u64, usize) {
    let le = |n: usize| {
        let mut v = [0u8; 8];
        v[..n].copy_from_slice(&bytes[at + 1..at + 1 + n]);
        u64::from_le_bytes(v)
    };
    match bytes[at] {
        0xfd => (le(2), at + 3),
        0xfe => (le(4), at + 5),
        0xff => (le(8), at + 9),
        n => (n as u64, at + 1),
    }
}

/// Times `lookup` over `txids` cold: the index and the block files evicted
/// first. Returns reads a lookup, storage bytes a lookup, and the median
/// and 99th-percentile time of one, in µs.
fn cold_batch(
    index_path: &Path,
    files: &[BlockFile],
    txids: &[[u8; 32]],
    lookup: impl Fn(&[u8; 32]),
) -> (f64, f64, f64, f64) {
    drop_cache(index_path);
    for file in files {
        drop_cache(&file.path);
    }
    let (calls, bytes) = io_counts();
    let mut times: Vec<f64> = txids
        .iter()
        .map(|txid| {
            let start = Instant::now();
            lookup(txid);
            start.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    let (calls_after, bytes_after) = io_counts();
    let n = txids.len() as f64;
    times.sort_by(f64::total_cmp);
    let p99 = times[(times.len() * 99 / 100).min(times.len() - 1)];
    (
        (calls_after - calls) as f64 / n,
        (bytes_after - bytes) as f64 / n,
        median(times),
        p99,
    )
}

/// Builds the index of the chain in `dir` under `root` and looks txids up.
pub fn run(root: &Path, dir: &Path) {
    let files = list_block_files(&[dir.to_path_buf()], None).expect("list");
    let mut output = scan(files, &ScanOptions::default(), &mut |_| {}).expect("scan");
    let chain = Chain::build(&mut output);
    let files = output.files;
    let index_path = root.join("txindex.idx");
    for file in &files {
        drop_cache(&file.path);
    }
    let start = Instant::now();
    let report = build_txindex(
        &chain,
        &files,
        &index_path,
        &TxIndexOptions::default(),
        &mut |_| {},
    )
    .expect("txindex");
    let built = start.elapsed().as_secs_f64();
    let index_len = std::fs::metadata(&index_path).expect("index").len();
    println!(
        "== blocks txindex: {} transactions, {} blocks, {} bytes of blocks in {built:.2} s \
         cold ({:.1} MB/s); index {index_len} bytes ({:.1} a transaction)",
        report.transactions,
        report.blocks,
        report.block_bytes,
        report.block_bytes as f64 / built / 1e6,
        index_len as f64 / report.transactions as f64
    );
    let index = TxIndex::open(&index_path).expect("open index");
    let mut rng = Rng::splitmix64(2026);
    let batches = [
        (
            "locate (index only)",
            random_txids(&chain, &files, LOOKUPS, &mut rng),
        ),
        (
            "get (index and block file)",
            random_txids(&chain, &files, LOOKUPS, &mut rng),
        ),
    ];
    for (i, (name, txids)) in batches.iter().enumerate() {
        let (calls, bytes, p50, p99) = cold_batch(&index_path, &files, txids, |txid| {
            if i == 0 {
                let found = index.locate(txid).expect("locate");
                assert!(!found.is_empty(), "every txid asked is in the index");
            } else {
                assert!(index.get(txid).expect("get").is_some());
            }
        });
        println!(
            "{name:28} {LOOKUPS} cold lookups: {calls:.3} reads and {bytes:.0} bytes from \
             storage a lookup; median {p50:.1} µs, p99 {p99:.1} µs"
        );
    }
}

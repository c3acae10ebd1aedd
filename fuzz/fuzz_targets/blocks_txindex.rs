//! Hostile transaction indexes: opening and looking up must return an
//! error or an answer, never panic or read out of bounds; a found
//! transaction's JSON never panics either.
//!
//! An input whose first byte is odd is not a file but edits to a valid
//! one (built once from a generated chain): its bytes xored at the offsets
//! the input names (three bytes an edit: two for the offset, one to xor),
//! then its checksums made right again (header, pages, block table), so
//! that the reader's checks past the checksums are what is tried. Other
//! inputs are opened as they are. Lookups ask for every key the index's
//! pages hold, and for txids taken from the input.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use seekless_blocks::generate::{self, ChainBuilder, SizeMix};
use seekless_blocks::{
    BlockHash, Chain, FoundTx, IndexedBlock, Network, ScanOptions, TxIndex, TxIndexOptions,
    TxLocation, XorKey, build_txindex, list_block_files, scan, tx_json,
};
use sha2::{Digest, Sha256};

const PAGE: usize = 4096;

fuzz_target!(|data: &[u8]| {
    let image = match data.split_first() {
        Some((&mode, edits)) if mode & 1 == 1 => edited(edits),
        _ => data.to_vec(),
    };
    let keys = page_keys(&image);
    if let Ok(index) = TxIndex::from_bytes("fuzz", image) {
        let mut txids: Vec<[u8; 32]> = keys
            .into_iter()
            .map(|key| {
                let mut txid = [0u8; 32];
                txid[..6].copy_from_slice(&key);
                txid
            })
            .collect();
        txids.extend(
            data.chunks_exact(32)
                .take(8)
                .map(|c| <[u8; 32]>::try_from(c).unwrap()),
        );
        for txid in &txids {
            for location in index.locate(txid).unwrap_or_default() {
                assert!(location.file < index.files().len());
                let _ = index.block(location.height);
            }
        }
        let _ = index.tip();
    }
    // Any bytes as a found transaction: JSON or an error.
    let found = FoundTx {
        raw: data.to_vec(),
        location: TxLocation {
            file: 0,
            offset: 0,
            len: data.len() as u32,
            height: 0,
            position: 0,
        },
    };
    let block = IndexedBlock {
        hash: BlockHash::default(),
        height: 0,
        time: 0,
    };
    let _ = tx_json(&found, &block, 0);
});

/// The first 6 bytes of every entry slot in every page.
fn page_keys(image: &[u8]) -> Vec<[u8; 6]> {
    let Some(start) = pages_start(image) else {
        return Vec::new();
    };
    image
        .get(start..)
        .unwrap_or_default()
        .chunks_exact(PAGE)
        .flat_map(|page| page[4..4 + 24 * 170].chunks_exact(24))
        .map(|entry| entry[..6].try_into().unwrap())
        .take(4096)
        .collect()
}

fn u32_at(image: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(image.get(at..at + 4)?.try_into().ok()?))
}

fn pages_start(image: &[u8]) -> Option<usize> {
    let meta_len = u32_at(image, 44)? as usize;
    Some((64 + meta_len).div_ceil(PAGE) * PAGE)
}

fn valid() -> &'static [u8] {
    static VALID: OnceLock<Vec<u8>> = OnceLock::new();
    VALID.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("fuzz-txindex-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut builder = ChainBuilder::new(1, SizeMix::Realistic);
        builder.extend_chain(0, 40);
        let (files, _) = generate::layout_files(
            Network::Regtest,
            builder.blocks.iter().map(|b| b.bytes.as_slice()),
            1 << 20,
            XorKey::default(),
        );
        for (n, bytes) in files.iter().enumerate() {
            std::fs::write(dir.join(format!("blk{n:05}.dat")), bytes).unwrap();
        }
        let files = list_block_files(&[dir.clone()], None).unwrap();
        let mut output = scan(files, &ScanOptions::default(), &mut |_| {}).unwrap();
        let chain = Chain::build(&mut output);
        let out = dir.join("index");
        let options = TxIndexOptions::default();
        build_txindex(&chain, &output.files, &out, &options, &mut |_| {}).unwrap();
        let bytes = std::fs::read(&out).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
        bytes
    })
}

/// The valid index, edited, its checksums made right.
fn edited(edits: &[u8]) -> Vec<u8> {
    let mut image = valid().to_vec();
    for edit in edits.chunks_exact(3) {
        let at = u16::from_le_bytes([edit[0], edit[1]]) as usize % image.len();
        image[at] ^= edit[2];
    }
    let meta_len = (u32_at(&image, 44).unwrap() as usize).min(image.len().saturating_sub(64));
    let sum = Sha256::new()
        .chain_update(&image[..56])
        .chain_update(&image[64..64 + meta_len])
        .finalize();
    image[56..64].copy_from_slice(&sum[..8]);
    let start = pages_start(&image).unwrap_or(image.len()).min(image.len());
    let pages = (image.len() - start) / PAGE;
    for page in image[start..start + pages * PAGE].chunks_exact_mut(PAGE) {
        let check = Sha256::digest(&page[..PAGE - 4]);
        page[PAGE - 4..].copy_from_slice(&check[..4]);
    }
    let table = start + pages * PAGE;
    for (height, record) in image[table..].chunks_exact_mut(40).enumerate() {
        let check = Sha256::new()
            .chain_update((height as u32).to_le_bytes())
            .chain_update(&record[..36])
            .finalize();
        record[36..].copy_from_slice(&check[..4]);
    }
    image
}

//! BEP 52 merkle trees: SHA-256 over 16 KiB blocks, padded with zero hashes.

use sha2::{Digest, Sha256};

/// Size of a v2 leaf block.
pub const BLOCK_SIZE: u64 = 16 * 1024;

/// A SHA-256 hash.
pub type Hash32 = [u8; 32];

/// SHA-256 of one block (the last block of a file may be shorter).
pub fn block_hash(block: &[u8]) -> Hash32 {
    Sha256::digest(block).into()
}

fn pair(a: &Hash32, b: &Hash32) -> Hash32 {
    let mut h = Sha256::new();
    h.update(a);
    h.update(b);
    h.finalize().into()
}

/// The root of a tree whose layer `nodes` is padded with `pad` to `width`
/// nodes (`width` a power of two, at least `nodes.len()`), where `pad` is the
/// hash of an all-padding subtree at that layer.
pub fn reduce(nodes: &[Hash32], mut pad: Hash32, width: usize) -> Hash32 {
    debug_assert!(width.is_power_of_two() && width >= nodes.len());
    if nodes.is_empty() {
        // Only reachable for width 1 callers with no data; the pad stands in.
        let mut w = width;
        while w > 1 {
            pad = pair(&pad, &pad);
            w /= 2;
        }
        return pad;
    }
    let mut layer: Vec<Hash32> = nodes.to_vec();
    let mut w = width;
    while w > 1 {
        let mut next = Vec::with_capacity(layer.len().div_ceil(2));
        for chunk in layer.chunks(2) {
            let right = chunk.get(1).unwrap_or(&pad);
            next.push(pair(&chunk[0], right));
        }
        pad = pair(&pad, &pad);
        layer = next;
        w /= 2;
    }
    layer[0]
}

/// The hash of a subtree of `leaves` zero leaves (`leaves` a power of two):
/// what pads the piece layer.
pub fn zero_root(leaves: usize) -> Hash32 {
    reduce(&[], [0; 32], leaves)
}

/// The hash of one piece from its block hashes (the last piece of a file is
/// padded with zero leaves to `blocks_per_piece`).
pub fn piece_hash(blocks: &[Hash32], blocks_per_piece: usize) -> Hash32 {
    reduce(blocks, [0; 32], blocks_per_piece)
}

/// A file's `pieces root` from all its block hashes.
pub fn root_from_blocks(blocks: &[Hash32]) -> Hash32 {
    reduce(blocks, [0; 32], blocks.len().max(1).next_power_of_two())
}

/// A file's `pieces root` from its piece layer (files larger than a piece).
pub fn root_from_layer(layer: &[Hash32], piece_length: u64) -> Hash32 {
    let blocks_per_piece = (piece_length / BLOCK_SIZE) as usize;
    reduce(
        layer,
        zero_root(blocks_per_piece),
        layer.len().max(1).next_power_of_two(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layer_and_block_roots_agree() {
        // 5 pieces of 2 blocks each, the last one short.
        let blocks: Vec<Hash32> = (0..9u8).map(|i| block_hash(&[i; 100])).collect();
        let layer: Vec<Hash32> = blocks.chunks(2).map(|c| piece_hash(c, 2)).collect();
        assert_eq!(
            root_from_layer(&layer, 2 * BLOCK_SIZE),
            reduce(&blocks, [0; 32], 16)
        );
        assert_eq!(root_from_blocks(&blocks[..1]), blocks[0]);
    }
}

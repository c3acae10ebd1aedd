//! The cache of range bodies (`RangeApi::with_cache`): bodies of recently
//! served ranges, rendered and compressed, kept within a byte budget.

use std::sync::Mutex;

use axum::body::Bytes;

/// Rendered bodies of recently served ranges, within a byte budget,
/// evicted oldest first; sharded to keep lock hold times short.
#[derive(Debug)]
pub(super) struct Cache {
    pub(super) shards: Vec<Mutex<Shard>>,
    pub(super) budget: usize,
}

#[derive(Debug, Default)]
pub(super) struct Shard {
    pub(super) bodies: std::collections::HashMap<u32, Bytes>,
    pub(super) order: std::collections::VecDeque<u32>,
    pub(super) bytes: usize,
}

impl Cache {
    pub(super) const SHARDS: usize = 16;

    pub(super) fn new(bytes: usize) -> Cache {
        Cache {
            shards: (0..Self::SHARDS).map(|_| Default::default()).collect(),
            budget: bytes / Self::SHARDS,
        }
    }

    pub(super) fn shard(&self, key: u32) -> std::sync::MutexGuard<'_, Shard> {
        // Mixed, so that prefixes with common low bits spread out.
        let mixed = key.wrapping_mul(0x9e37_79b9) >> 28;
        let shard = &self.shards[mixed as usize % Self::SHARDS];
        shard.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub(super) fn get(&self, key: u32) -> Option<Bytes> {
        self.shard(key).bodies.get(&key).cloned()
    }

    pub(super) fn insert(&self, key: u32, body: Bytes) {
        if body.len() > self.budget {
            return;
        }
        let mut shard = self.shard(key);
        if shard.bodies.contains_key(&key) {
            return;
        }
        shard.bytes += body.len();
        shard.bodies.insert(key, body);
        shard.order.push_back(key);
        while shard.bytes > self.budget {
            let Some(old) = shard.order.pop_front() else {
                break;
            };
            if let Some(b) = shard.bodies.remove(&old) {
                shard.bytes -= b.len();
            }
        }
    }
}

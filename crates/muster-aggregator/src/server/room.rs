//! Per-session maps: their hasher, and giving back their room after many sessions came and
//! went.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash};

/// A map keyed by session: hashed with foldhash (seeded per process) instead of SipHash.
/// Its keys are muster's own random session ids, looked up several times per request.
pub(super) type SessionMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// Hands back most of the room of `map` once it holds a quarter of what it has room for.
pub(super) fn shrink<K: Hash + Eq, V, S: BuildHasher>(map: &mut HashMap<K, V, S>) {
    if map.len().saturating_mul(4) <= map.capacity() {
        map.shrink_to(map.len().saturating_mul(2));
    }
}

//! Giving back the room of per-session maps after many sessions came and went.

use std::collections::HashMap;

/// Hands back most of the room of `map` once it holds a quarter of what it has room for.
pub(super) fn shrink<K: std::hash::Hash + Eq, V>(map: &mut HashMap<K, V>) {
    if map.len().saturating_mul(4) <= map.capacity() {
        map.shrink_to(map.len().saturating_mul(2));
    }
}

//! Bounding texts that travel far: error messages, event messages, records.
//!
//! A message quoting a nested failure can grow with every level it is quoted at (each level
//! escapes the quotes of the one below). [`truncate_message`] cuts a message to a byte budget
//! at a character boundary and says how much was cut, so every copy stays bounded.

use std::borrow::Cow;

/// The default budget of one error or event message, in bytes (8 KiB).
pub const DEFAULT_MAX_MESSAGE_BYTES: usize = 8 * 1024;

/// The smallest budget [`truncate_message`] honours: enough for the note it appends.
const MIN_BUDGET: usize = 64;

/// `message` cut to at most `max_bytes` bytes (at a character boundary), ending with
/// `… [N bytes truncated]` when it was cut; `message` itself when it fits.
///
/// ```
/// use muster_core::text::truncate_message;
///
/// assert_eq!(truncate_message("short", 100), "short");
/// let long = "x".repeat(1000);
/// let cut = truncate_message(&long, 100);
/// assert!(cut.len() <= 100);
/// assert!(cut.ends_with("bytes truncated]"));
/// ```
pub fn truncate_message(message: &str, max_bytes: usize) -> Cow<'_, str> {
    if message.len() <= max_bytes {
        return Cow::Borrowed(message);
    }
    let max_bytes = max_bytes.max(MIN_BUDGET);
    // The note's length depends on the number it holds: reserve room for the largest.
    let note_room = format!("… [{} bytes truncated]", message.len()).len();
    let mut keep = max_bytes.saturating_sub(note_room);
    while !message.is_char_boundary(keep) {
        keep -= 1;
    }
    let cut = message.len() - keep;
    Cow::Owned(format!("{}… [{cut} bytes truncated]", &message[..keep]))
}

/// Cuts `message` in place to at most `max_bytes` bytes, as [`truncate_message`] does; returns
/// whether it was cut.
pub fn truncate_in_place(message: &mut String, max_bytes: usize) -> bool {
    match truncate_message(message, max_bytes) {
        Cow::Borrowed(_) => false,
        Cow::Owned(cut) => {
            *message = cut;
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_at_char_boundaries_within_budget() {
        let text = "é".repeat(5000);
        for budget in [64, 65, 100, 4097] {
            let cut = truncate_message(&text, budget);
            assert!(cut.len() <= budget, "{budget}: {}", cut.len());
            assert!(cut.starts_with('é'));
            assert!(cut.ends_with("bytes truncated]"));
        }
        let mut s = "abc".to_owned();
        assert!(!truncate_in_place(&mut s, 3));
        assert_eq!(s, "abc");
    }
}

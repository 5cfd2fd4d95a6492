//! The one-line forms of a tool description that listings show.

/// Summaries are cut to this many characters (then `...` is appended).
const SUMMARY_MAX_CHARS: usize = 120;

/// The first line of `description`, trimmed.
pub(super) fn first_line(description: &str) -> &str {
    description.split('\n').next().unwrap_or_default().trim()
}

/// The first line, trimmed, cut to 120 characters (trimmed again) plus `...` when longer.
pub(super) fn summary(description: &str) -> String {
    let line = first_line(description);
    if line.chars().count() <= SUMMARY_MAX_CHARS {
        return line.to_owned();
    }
    let cut: String = line.chars().take(SUMMARY_MAX_CHARS).collect();
    format!("{}...", cut.trim())
}

#[cfg(test)]
mod tests {
    use super::summary;

    #[test]
    fn summaries() {
        let long = "x".repeat(130);
        let table = [
            ("One line.", "One line.".to_owned()),
            ("  First.  \nSecond line", "First.".to_owned()),
            ("", String::new()),
            (long.as_str(), format!("{}...", "x".repeat(120))),
            (
                &*format!("{} tail", "y".repeat(119)),
                format!("{}...", "y".repeat(119)),
            ),
        ];
        for (input, expected) in table {
            assert_eq!(summary(input), expected, "{input}");
        }
    }
}

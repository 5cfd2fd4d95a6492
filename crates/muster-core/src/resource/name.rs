//! The rule every resource name follows, whatever stores it.
//!
//! A name becomes a file name (`mcpservers/<name>.yaml`), part of tool names
//! (`workflow_<name>`), a column of `muster list` and a path segment of the Kubernetes API.
//! So it may not hold what breaks any of those: control characters (a newline writes a file
//! `ok-name\n.yaml`), whitespace, path separators, or a leading dot (a hidden file the loader
//! skips). Everything else the original muster accepts stays accepted in filesystem mode
//! (`special-chars-workflow_123`, upper case, dots inside). Kubernetes mode adds the API
//! server's own rule (DNS-1123) on top.

use super::validate::Violation;

/// Most characters in a resource name (the Kubernetes limit of object names).
pub const MAX_NAME_LEN: usize = 253;

/// The field path of a resource name in errors.
pub const NAME_PATH: &str = "metadata.name";

/// The rule, as errors state it.
pub const NAME_RULE: &str = "must be 1 to 253 characters without whitespace, control \
                             characters, '/' or '\\', and must not start with '.'";

/// Checks `name` against the rule every mode shares; the violation names `metadata.name`,
/// the rule, and the offending character when there is one.
///
/// ```
/// use muster_core::resource::check_name;
///
/// assert!(check_name("special-chars-workflow_123").is_ok());
/// let e = check_name("ok-name\n").unwrap_err();
/// assert_eq!(
///     e.to_string(),
///     "metadata.name: must be 1 to 253 characters without whitespace, control characters, \
///      '/' or '\\', and must not start with '.' (found U+000A)"
/// );
/// ```
pub fn check_name(name: &str) -> Result<(), Violation> {
    let refuse = |detail: Option<String>| {
        let rule = match detail {
            Some(d) => format!("{NAME_RULE} ({d})"),
            None => NAME_RULE.to_owned(),
        };
        Err(Violation::new(NAME_PATH, rule))
    };
    let len = name.chars().count();
    if len == 0 {
        return refuse(Some("it is empty".to_owned()));
    }
    if len > MAX_NAME_LEN {
        return refuse(Some(format!("it has {len}")));
    }
    if name.starts_with('.') {
        return refuse(None);
    }
    if let Some(c) = name
        .chars()
        .find(|c| c.is_control() || c.is_whitespace() || matches!(c, '/' | '\\'))
    {
        let shown = if c.is_control() || c.is_whitespace() {
            format!("found U+{:04X}", u32::from(c))
        } else {
            format!("found {c:?}")
        };
        return refuse(Some(shown));
    }
    Ok(())
}

/// Whether `name` follows [`check_name`]'s rule.
pub fn is_valid_name(name: &str) -> bool {
    check_name(name).is_ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_the_original_accepts_stay_accepted() {
        for ok in [
            "special-chars-workflow_123",
            "a",
            "My.Server",
            "org-team-x",
            "ünïcode",
            "a:b",
            &"x".repeat(MAX_NAME_LEN),
        ] {
            assert!(is_valid_name(ok), "{ok:?}");
        }
    }

    #[test]
    fn names_that_break_files_tools_or_tables_are_refused() {
        for (bad, detail) in [
            ("", "it is empty"),
            ("ok-name\n", "found U+000A"),
            ("a b", "found U+0020"),
            ("tab\there", "found U+0009"),
            ("nbsp\u{a0}x", "found U+00A0"),
            ("bell\u{7}", "found U+0007"),
            ("../etc/passwd", ""),
            ("a/b", "found '/'"),
            ("a\\b", "found '\\\\'"),
            (".hidden", ""),
        ] {
            let e = check_name(bad).expect_err(bad);
            assert_eq!(e.path, NAME_PATH);
            assert!(e.rule.starts_with(NAME_RULE), "{bad:?}: {e}");
            assert!(e.rule.contains(detail), "{bad:?}: {e}");
        }
        let long = "x".repeat(MAX_NAME_LEN + 1);
        assert!(check_name(&long).unwrap_err().rule.contains("it has 254"));
    }
}

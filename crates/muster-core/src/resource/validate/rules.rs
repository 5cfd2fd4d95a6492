//! Small reusable checks behind the validation of every kind.

/// `^[a-zA-Z][a-zA-Z0-9_-]*$`: tool prefixes and family names.
pub(crate) const NAME_PATTERN: &str = "^[a-zA-Z][a-zA-Z0-9_-]*$";
/// `^[a-zA-Z][a-zA-Z0-9_]*$`: a family's instance argument.
pub(crate) const ARG_NAME_PATTERN: &str = "^[a-zA-Z][a-zA-Z0-9_]*$";
/// `^[a-zA-Z0-9_-]+$`: workflow step ids.
pub(crate) const STEP_ID_PATTERN: &str = "^[a-zA-Z0-9_-]+$";

/// Whether `s` matches [`NAME_PATTERN`].
pub(crate) fn is_prefix_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// Whether `s` matches [`ARG_NAME_PATTERN`].
pub(crate) fn is_arg_name(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Whether `s` matches [`STEP_ID_PATTERN`].
pub(crate) fn is_step_id(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

/// The length of `s` in characters, as the CRD's `maxLength` counts.
pub(crate) fn char_len(s: &str) -> usize {
    s.chars().count()
}

/// Checks that `value` is an absolute `https://` URL; returns the rule it breaks.
pub(crate) fn https_url_rule(value: &str) -> Option<&'static str> {
    match url::Url::parse(value) {
        Ok(u) if u.scheme() == "https" && u.host().is_some() => None,
        Ok(_) => Some("must be an https:// URL"),
        Err(_) => Some("must be a valid absolute https:// URL"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        for ok in ["a", "abc", "a-b_c9", "Z"] {
            assert!(is_prefix_name(ok), "{ok}");
        }
        for bad in ["", "9a", "-a", "a.b", "a b", "ä"] {
            assert!(!is_prefix_name(bad), "{bad}");
        }
        assert!(is_arg_name("management_cluster"));
        assert!(!is_arg_name("management-cluster"));
        assert!(is_step_id("0-step_x"));
        assert!(!is_step_id(""));
        assert!(!is_step_id("a.b"));
        assert_eq!(https_url_rule("https://x.example/token"), None);
        assert!(https_url_rule("http://x.example").is_some());
        assert!(https_url_rule("not a url").is_some());
    }
}

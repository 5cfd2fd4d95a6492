//! The `WWW-Authenticate: Bearer ...` challenge of a protected server (RFC 6750 §3,
//! RFC 9728 §5.1): which metadata document describes it and which scope it wants.

/// The parameters of a Bearer challenge muster uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct BearerChallenge {
    /// `resource_metadata`: URL of the RFC 9728 protected-resource metadata.
    pub(crate) resource_metadata: Option<String>,
    /// `scope`: the scope the server asks for.
    pub(crate) scope: Option<String>,
}

/// Parses the Bearer challenge of a `WWW-Authenticate` value; `None` when there is none.
pub(crate) fn parse(header: &str) -> Option<BearerChallenge> {
    let trimmed = header.trim_start();
    let scheme_end = trimmed
        .find(|c: char| c.is_whitespace())
        .unwrap_or(trimmed.len());
    if !trimmed[..scheme_end].eq_ignore_ascii_case("bearer") {
        return None;
    }
    let mut challenge = BearerChallenge::default();
    for (key, value) in params(&trimmed[scheme_end..]) {
        match key.to_ascii_lowercase().as_str() {
            "resource_metadata" => challenge.resource_metadata = Some(value),
            "scope" => challenge.scope = Some(value),
            _ => {}
        }
    }
    Some(challenge)
}

/// `key=value` and `key="quoted \" value"` pairs separated by commas.
fn params(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    loop {
        while chars.peek().is_some_and(|c| c.is_whitespace() || *c == ',') {
            chars.next();
        }
        let key: String = std::iter::from_fn(|| chars.next_if(|c| *c != '=' && *c != ','))
            .collect::<String>()
            .trim()
            .to_owned();
        if key.is_empty() {
            break;
        }
        if chars.next_if_eq(&'=').is_none() {
            continue;
        }
        while chars.next_if(|c| c.is_whitespace()).is_some() {}
        let mut value = String::new();
        if chars.next_if_eq(&'"').is_some() {
            while let Some(c) = chars.next() {
                match c {
                    '\\' => {
                        if let Some(escaped) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            value = std::iter::from_fn(|| chars.next_if(|c| *c != ','))
                .collect::<String>()
                .trim()
                .to_owned();
        }
        out.push((key, value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_metadata_and_scope() {
        let c = parse(
            r#"Bearer resource_metadata="http://idp/.well-known/oauth-protected-resource", error="invalid_token", error_description="Missing \"Authorization\" header", scope=mcp:read"#,
        )
        .unwrap();
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("http://idp/.well-known/oauth-protected-resource")
        );
        assert_eq!(c.scope.as_deref(), Some("mcp:read"));
    }

    #[test]
    fn other_schemes_and_bare_bearer() {
        assert_eq!(parse("Basic realm=\"x\""), None);
        assert_eq!(parse("Bearer"), Some(BearerChallenge::default()));
        assert_eq!(parse("bearer realm=x").unwrap().scope, None);
    }
}

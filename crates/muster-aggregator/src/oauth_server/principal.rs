//! Who a validated bearer belongs to, and the session it maps to.
//!
//! A sign-in to muster itself is one session per refresh-token family: refreshing keeps the
//! session, signing in again starts a new one. An externally issued token maps to its
//! principal (issuer, subject, authorized party or audience, actor chain), so a refreshed
//! token of the same principal keeps its session, while another person, client or actor
//! chain starts signed out.

use muster_core::secret::SecretString;
use muster_core::tool::{CallerIdentity, SessionId};

use super::secrets::digest;

/// What the bearer guard hands to the MCP handler in the request's extensions.
#[derive(Debug, Clone)]
pub(crate) struct Authenticated {
    /// The session the request belongs to.
    pub(crate) session: SessionId,
    /// The caller.
    pub(crate) identity: CallerIdentity,
}

/// The session of a sign-in to muster: its refresh-token family.
pub(crate) fn family_session(family_id: &str) -> SessionId {
    SessionId::new(format!("family-{family_id}"))
}

/// The session of an externally issued token's principal: a digest of issuer, subject,
/// audience and actor chain (fields separated by a byte no claim can hold).
pub(crate) fn principal_session(identity: &CallerIdentity) -> SessionId {
    let mut key = String::new();
    key.push_str(identity.issuer.as_deref().unwrap_or_default());
    key.push('\u{0}');
    key.push_str(&identity.subject);
    key.push('\u{0}');
    key.push_str(identity.audience.as_deref().unwrap_or_default());
    for actor in &identity.actor {
        key.push('\u{0}');
        key.push_str(actor);
    }
    let hash = digest(&key);
    SessionId::new(format!("principal-{}", &hash[..32]))
}

/// An identity with the given fields and no credentials.
pub(crate) fn identity(
    issuer: &str,
    subject: &str,
    email: Option<String>,
    audience: Option<String>,
) -> CallerIdentity {
    CallerIdentity {
        subject: subject.to_owned(),
        email,
        issuer: Some(issuer.to_owned()),
        audience,
        ..CallerIdentity::default()
    }
}

/// Adds the forwardable bearer to `identity`.
pub(crate) fn with_bearer(mut identity: CallerIdentity, bearer: &str) -> CallerIdentity {
    identity.bearer = Some(SecretString::from(bearer.to_owned()));
    identity
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn principals_differ_by_every_part() {
        let base = identity("https://idp", "alice", None, Some("muster".into()));
        let same = identity(
            "https://idp",
            "alice",
            Some("a@x".into()),
            Some("muster".into()),
        );
        assert_eq!(principal_session(&base), principal_session(&same));
        let other_sub = identity("https://idp", "bob", None, Some("muster".into()));
        let other_iss = identity("https://idp2", "alice", None, Some("muster".into()));
        let other_aud = identity("https://idp", "alice", None, Some("portal".into()));
        let mut acted = base.clone();
        acted.actor = vec!["agent".into()];
        for other in [other_sub, other_iss, other_aud, acted] {
            assert_ne!(principal_session(&base), principal_session(&other));
        }
        assert!(family_session("f1").as_str().starts_with("family-"));
    }
}

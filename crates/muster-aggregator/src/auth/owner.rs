//! Whom a grant belongs to (`spec.auth.authorizationServer.grantScope`): the session that
//! signed in (`session`, the default) or the person behind it (`subject`), whose every
//! session reuses the grant until `core_auth_logout` on a server of its issuer.

use muster_core::auth::SessionKey;
use muster_core::resource::mcp_server::{GrantScope, McpServerSpec};
use muster_core::tool::{CallerIdentity, SessionId};
use sha2::{Digest as _, Sha256};

/// The subject of every caller when muster does not authenticate its callers: one person,
/// as the original's `default-user`.
const DEFAULT_USER: &str = "default-user";

/// The grant scope `spec` pins; `session` when it pins none.
pub(crate) fn grant_scope(spec: &McpServerSpec) -> GrantScope {
    spec.transport
        .remote()
        .and_then(|r| r.auth.as_ref())
        .and_then(|a| a.authorization_server.as_ref())
        .and_then(|s| s.grant_scope)
        .unwrap_or(GrantScope::Session)
}

/// The key the grants of `session` (whose caller is `caller`) are filed under for `scope`.
///
/// A subject key is a digest of the caller's issuer and subject, so two people never share
/// one and the key shows neither; without an authenticated caller every session belongs to
/// the one default user.
pub(crate) fn grant_owner(
    session: &SessionId,
    caller: Option<&CallerIdentity>,
    scope: GrantScope,
) -> SessionKey {
    match scope {
        GrantScope::Session => SessionKey::from(session),
        GrantScope::Subject => {
            let (issuer, subject) = caller.map_or(("", DEFAULT_USER), |c| {
                (c.issuer.as_deref().unwrap_or_default(), c.subject.as_str())
            });
            let mut hash = Sha256::new();
            hash.update(issuer.as_bytes());
            hash.update([0]);
            hash.update(subject.as_bytes());
            let digest = hash.finalize();
            let mut key = String::with_capacity(8 + 32);
            key.push_str("subject-");
            for byte in &digest[..16] {
                key.push_str(&format!("{byte:02x}"));
            }
            SessionKey::new(key)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(issuer: &str, subject: &str) -> CallerIdentity {
        CallerIdentity {
            issuer: Some(issuer.to_owned()),
            subject: subject.to_owned(),
            ..CallerIdentity::default()
        }
    }

    #[test]
    fn session_grants_belong_to_the_session() {
        let session = SessionId::new("s-1");
        let alice = caller("https://idp", "alice");
        assert_eq!(
            grant_owner(&session, Some(&alice), GrantScope::Session),
            SessionKey::new("s-1")
        );
    }

    #[test]
    fn subject_grants_belong_to_the_person_across_sessions() {
        let alice = caller("https://idp", "alice");
        let one = grant_owner(&SessionId::new("s-1"), Some(&alice), GrantScope::Subject);
        let two = grant_owner(&SessionId::new("s-2"), Some(&alice), GrantScope::Subject);
        assert_eq!(one, two);
        assert!(!one.as_str().contains("alice"));
        let bob = caller("https://idp", "bob");
        assert_ne!(
            one,
            grant_owner(&SessionId::new("s-1"), Some(&bob), GrantScope::Subject)
        );
        let elsewhere = caller("https://other-idp", "alice");
        assert_ne!(
            one,
            grant_owner(
                &SessionId::new("s-1"),
                Some(&elsewhere),
                GrantScope::Subject
            )
        );
    }

    #[test]
    fn without_authentication_every_session_is_the_default_user() {
        let one = grant_owner(&SessionId::new("s-1"), None, GrantScope::Subject);
        let two = grant_owner(&SessionId::new("s-2"), None, GrantScope::Subject);
        assert_eq!(one, two);
    }
}

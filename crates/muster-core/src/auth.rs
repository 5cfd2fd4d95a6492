//! Sign-in state of muster as OAuth client of protected MCP servers: the contracts every
//! store of it implements, and an in-memory store.
//!
//! Two kinds of state outlive a single request:
//!
//! - [`PendingSignIn`]: a sign-in a session started with `core_auth_login` and has not
//!   finished yet, found again by the OAuth `state` value the authorization server hands back
//!   to muster's callback. Single use, short-lived.
//! - [`Grant`]: the tokens a session obtained from one authorization server (issuer), used
//!   for every MCP server that names that issuer (issuer-level single sign-on).
//!
//! Both are keyed by a [`SessionKey`]: who the state belongs to. Without sign-in to muster
//! itself that is the MCP session; when muster authenticates its callers it is derived from
//! the authenticated principal, so a reconnecting client keeps its grants.
//!
//! [`GrantStore`] and [`PendingSignInStore`] are the seams for shared stores (Redis, Valkey);
//! [`MemoryAuthStore`] implements both, bounded and with time-to-live on every entry.

mod grant;
mod memory;
mod pending;
mod session;

pub use grant::{Grant, GrantStore};
pub use memory::{AuthStoreLimits, MemoryAuthStore};
pub use pending::{PendingSignIn, PendingSignInStore};
pub use session::SessionKey;

/// Why a sign-in store could not answer.
#[derive(Debug, thiserror::Error)]
pub enum AuthStoreError {
    /// The store is unreachable or refused the operation.
    #[error("sign-in store unavailable: {0}")]
    Unavailable(String),
    /// The store is full and cannot take the entry.
    #[error("sign-in store full: {0}")]
    Full(String),
}

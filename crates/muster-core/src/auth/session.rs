//! [`SessionKey`]: whom sign-in state belongs to.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::tool::SessionId;

/// The owner of grants and pending sign-ins: one muster session.
///
/// Without authentication of muster's own callers it is the MCP session id (so two clients
/// never share a sign-in); with it, the front door derives it from the authenticated
/// principal and puts it in [`CallContext::session`](crate::tool::CallContext::session).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct SessionKey(Arc<str>);

impl SessionKey {
    /// A key from its string form.
    pub fn new(key: impl AsRef<str>) -> Self {
        Self(Arc::from(key.as_ref()))
    }

    /// The string form.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&SessionId> for SessionKey {
    fn from(session: &SessionId) -> Self {
        Self::new(session.as_str())
    }
}

/// Only a prefix: session ids are bearer-like values for some transports.
impl fmt::Debug for SessionKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let prefix: String = self.0.chars().take(8).collect();
        write!(f, "SessionKey({prefix}…)")
    }
}

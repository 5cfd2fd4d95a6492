//! A session's sign-ins found again: a session with a grant for a server's issuer but no
//! connection to the server here (the sign-in completed at another replica, or its
//! connection was closed for idleness) is connected on its next request, without another
//! `core_auth_login`. Each session is looked at most once per [`RESTORE_INTERVAL`], and a
//! server the session signed out of stays signed out until its next `core_auth_login`.

use std::collections::{HashMap, HashSet};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use muster_core::tool::{CallerIdentity, SessionId};
use tokio::time::Instant;

use super::BackendAuth;
use super::login::{is_sso, needs_sign_in};
use super::owner::{grant_owner, grant_scope};

/// How often one session's missing connections are looked for.
pub(crate) const RESTORE_INTERVAL: Duration = Duration::from_secs(2);
/// Sessions remembered at once; past it, those not seen for an interval are forgotten.
const MAX_SESSIONS: usize = 10_000;

/// When each session was last looked at, and the servers each signed out of.
#[derive(Debug, Default)]
pub(crate) struct Restores {
    state: Mutex<RestoreState>,
}

#[derive(Debug, Default)]
struct RestoreState {
    looked_at: HashMap<SessionId, Instant>,
    signed_out: HashSet<(SessionId, String)>,
}

impl Restores {
    fn lock(&self) -> MutexGuard<'_, RestoreState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `session` is due for a look now; if so, it is not again for an interval.
    fn due(&self, session: &SessionId) -> bool {
        let now = Instant::now();
        let mut state = self.lock();
        if state
            .looked_at
            .get(session)
            .is_some_and(|at| now.duration_since(*at) < RESTORE_INTERVAL)
        {
            return false;
        }
        if state.looked_at.len() >= MAX_SESSIONS {
            state
                .looked_at
                .retain(|_, at| now.duration_since(*at) < RESTORE_INTERVAL);
        }
        state.looked_at.insert(session.clone(), now);
        true
    }

    /// `session` signed out of `server`: it is not connected again on its own.
    pub(crate) fn signed_out(&self, session: &SessionId, server: &str) {
        let mut state = self.lock();
        if state.signed_out.len() >= MAX_SESSIONS {
            state.signed_out.clear();
        }
        state
            .signed_out
            .insert((session.clone(), server.to_owned()));
    }

    /// `session` signs in to `server` again.
    pub(crate) fn signing_in(&self, session: &SessionId, server: &str) {
        self.lock()
            .signed_out
            .remove(&(session.clone(), server.to_owned()));
    }

    fn is_signed_out(&self, session: &SessionId, server: &str) -> bool {
        self.lock()
            .signed_out
            .contains(&(session.clone(), server.to_owned()))
    }
}

impl BackendAuth {
    /// Whether a call of `caller` may have anything to do before it runs: a token to
    /// forward, or sign-ins to restore (the backend OAuth client is on). Lets the call skip
    /// [`forward_identity`](Self::forward_identity) and
    /// [`restore_sign_ins`](Self::restore_sign_ins) without building their futures.
    pub(crate) fn may_act_before_calls_of(&self, caller: Option<&CallerIdentity>) -> bool {
        self.inner.settings.enabled || caller.is_some_and(|c| c.forwardable_token().is_some())
    }

    /// Connects `session` (whose caller is `caller`) to every server that waits for a
    /// sign-in, that it has a grant for and no connection to here. Cheap between looks: one
    /// map lookup.
    pub async fn restore_sign_ins(&self, session: &SessionId, caller: Option<&CallerIdentity>) {
        if !self.inner.settings.enabled || !self.inner.restores.due(session) {
            return;
        }
        for name in self.inner.services.names() {
            let Some(global) = self.inner.services.backend(&name) else {
                continue;
            };
            if !needs_sign_in(&global)
                || is_sso(global.spec())
                || self.inner.pool.get(session, &name).is_some()
                || self.inner.restores.is_signed_out(session, &name)
            {
                continue;
            }
            let spec = global.spec().clone();
            // Only what is known already: a server never signed in to is not discovered here.
            let Some(issuer) = self.known_issuer(&name, &spec).await else {
                continue;
            };
            let owner = grant_owner(session, caller, grant_scope(&spec));
            let grant = match self.inner.grants.grant(&owner, &issuer).await {
                Ok(Some(grant)) => grant,
                Ok(None) => continue,
                Err(e) => {
                    tracing::debug!(server = %name, error = %e, "cannot look for a session's sign-in");
                    continue;
                }
            };
            match self.connect_session(session, &owner, &global, &grant).await {
                Ok(_) => {
                    tracing::info!(server = %name, "session connected with a sign-in made earlier")
                }
                Err(e) => {
                    tracing::info!(server = %name, error = %e, "connecting a session with a sign-in made earlier failed");
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_session_is_looked_at_once_per_interval() {
        let restores = Restores::default();
        let session = SessionId::new("s-1");
        assert!(restores.due(&session));
        assert!(!restores.due(&session));
        assert!(restores.due(&SessionId::new("s-2")));
        tokio::time::advance(RESTORE_INTERVAL).await;
        assert!(restores.due(&session));
    }

    #[test]
    fn a_server_signed_out_of_stays_so_until_the_next_sign_in() {
        let restores = Restores::default();
        let session = SessionId::new("s-1");
        restores.signed_out(&session, "github");
        assert!(restores.is_signed_out(&session, "github"));
        assert!(!restores.is_signed_out(&session, "gitlab"));
        assert!(!restores.is_signed_out(&SessionId::new("s-2"), "github"));
        restores.signing_in(&session, "github");
        assert!(!restores.is_signed_out(&session, "github"));
    }
}

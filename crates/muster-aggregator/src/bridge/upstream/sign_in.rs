//! The bridge while muster refuses its credentials: it answers the client by itself, offers
//! `authenticate_muster`, and goes back to forwarding once the credentials have a token
//! muster accepts (after that tool's sign-in, or one made elsewhere).

use std::sync::Arc;

use reqwest::header::HeaderValue;
use serde_json::Value;
use tokio::task::JoinSet;

use super::{Failure, SignedOut, Upstream, lock};
use crate::bridge::messages::{self, Kind};
use crate::bridge::signed_out;

impl Upstream {
    /// Marks the bridge signed out after muster refused `rejected` (none when none was
    /// sent): the session is dropped, and with `notify` the client is told that its tool
    /// list changed (to `authenticate_muster`).
    pub(super) fn sign_out(&self, rejected: Option<HeaderValue>, notify: bool) {
        {
            let mut state = lock(&self.signed_out);
            if let Some(state) = state.as_mut() {
                state.rejected = rejected;
                return;
            }
            *state = Some(SignedOut {
                rejected,
                pending: None,
            });
        }
        self.session.send_modify(|s| {
            *s = super::Session {
                generation: s.generation + 1,
                ..super::Session::default()
            }
        });
        tracing::warn!(
            endpoint = %self.endpoint,
            "muster asks for a sign-in: the MCP client is offered the {} tool",
            signed_out::TOOL
        );
        if notify {
            self.out
                .send(messages::notification("notifications/tools/list_changed"));
        }
    }

    /// While signed out: opens a new session when the credentials have a token muster has
    /// not refused yet; whether the bridge forwards again.
    pub(super) async fn resume(&self) -> bool {
        let Some(credentials) = &self.credentials else {
            return false;
        };
        let rejected = match lock(&self.signed_out).as_ref() {
            Some(state) => state.rejected.clone(),
            None => return true,
        };
        let Some(current) = credentials.authorization().await else {
            return false;
        };
        if rejected.as_ref() == Some(&current) {
            return false;
        }
        if lock(&self.init_params).is_none() {
            *lock(&self.signed_out) = None;
            return true;
        }
        let generation = self.session.borrow().generation;
        match self.reinitialize(generation).await {
            Ok(()) => !self.is_signed_out(),
            Err(Failure::SignedOut { rejected, .. }) => {
                if let Some(state) = lock(&self.signed_out).as_mut() {
                    state.rejected = rejected;
                }
                false
            }
            Err(e) => {
                tracing::warn!(error = %e, "muster did not open a session after the sign-in");
                false
            }
        }
    }

    /// Answers the client's `message` while signed out; notifications and responses are
    /// dropped.
    pub(super) fn answer_signed_out(
        self: &Arc<Self>,
        message: &Value,
        kind: Kind,
        tasks: &mut JoinSet<()>,
    ) {
        let Kind::Request { id, method } = kind else {
            return;
        };
        let answer = match method.as_str() {
            "initialize" => signed_out::initialize(&id, message.get("params")),
            "ping" => signed_out::empty(&id),
            "tools/list" => signed_out::tools_list(&id),
            "tools/call" if signed_out::calls_tool(message) => {
                tasks.spawn(Arc::clone(self).authenticate(id));
                return;
            }
            _ => signed_out::refused(&id, &method, self.endpoint.as_str()),
        };
        self.out.send(answer);
    }

    /// `authenticate_muster`: starts a sign-in (or names the one under way) and answers with
    /// its URL at once; when the sign-in completes, the bridge opens a session with the new
    /// token and tells the client that muster's tools are there.
    async fn authenticate(self: Arc<Self>, id: Value) {
        let Some(credentials) = self.credentials.clone() else {
            return;
        };
        let started = {
            let _starting = self.signing_in.lock().await;
            let pending = match lock(&self.signed_out).as_ref() {
                Some(state) => state.pending.clone(),
                None => {
                    self.out.send(signed_out::already_signed_in(&id));
                    return;
                }
            };
            if let Some(url) = pending {
                self.out.send(signed_out::sign_in_started(&id, &url));
                return;
            }
            match credentials.sign_in().await {
                Ok(started) => {
                    if let Some(state) = lock(&self.signed_out).as_mut() {
                        state.pending = Some(started.url.clone());
                    }
                    started
                }
                Err(e) => {
                    tracing::warn!(error = %e, "cannot start a sign-in to muster");
                    self.out
                        .send(signed_out::sign_in_failed(&id, &e.to_string()));
                    return;
                }
            }
        };
        self.out
            .send(signed_out::sign_in_started(&id, &started.url));
        let outcome = started.completion.await;
        if let Some(state) = lock(&self.signed_out).as_mut() {
            state.pending = None;
        }
        match outcome {
            Ok(()) => {
                if !self.resume().await {
                    tracing::warn!(
                        endpoint = %self.endpoint,
                        "muster still refuses the bridge after the sign-in"
                    );
                }
            }
            Err(e) => tracing::warn!(error = %e, "the sign-in to muster did not complete"),
        }
    }
}

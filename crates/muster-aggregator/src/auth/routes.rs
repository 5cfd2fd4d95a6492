//! The browser side of a sign-in on muster's HTTP front door: `/oauth/proxy/start`
//! redirects to the authorization server, the callback finishes the sign-in, and muster's
//! Client ID Metadata Document describes it as a client.

use axum::Router;
use axum::extract::{Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use super::callback::CallbackParams;
use super::{BackendAuth, CallbackError, START_PATH};

#[derive(Debug, serde::Deserialize)]
struct StartParams {
    state: Option<String>,
}

impl BackendAuth {
    /// The sign-in routes: [`START_PATH`], the callback path and (when no client id is
    /// configured) the Client ID Metadata Document.
    pub fn routes(&self) -> Router {
        let settings = self.settings();
        let mut router = Router::new()
            .route(START_PATH, get(start))
            .route(&settings.callback_path, get(callback));
        if settings.client_id.is_empty() {
            router = router.route(&settings.cimd_path, get(client_metadata));
        }
        router.with_state(self.clone())
    }
}

/// Headers of every answer: nothing cached, no referrer carrying a code onwards.
const NO_STORE: [(header::HeaderName, &str); 2] = [
    (header::CACHE_CONTROL, "no-store"),
    (header::REFERRER_POLICY, "no-referrer"),
];

async fn start(State(auth): State<BackendAuth>, Query(params): Query<StartParams>) -> Response {
    let target = match params.state.as_deref() {
        Some(state) if !state.is_empty() => auth.start_target(state).await,
        _ => None,
    };
    match target {
        Some(url) => (StatusCode::FOUND, NO_STORE, [(header::LOCATION, url)]).into_response(),
        None => page(
            StatusCode::BAD_REQUEST,
            "Sign-in failed",
            &CallbackError::UnknownState.to_string(),
        ),
    }
}

async fn callback(
    State(auth): State<BackendAuth>,
    Query(params): Query<CallbackParams>,
) -> Response {
    match auth.complete_sign_in(params).await {
        Ok(done) => {
            let detail = if done.connected {
                format!(
                    "You are signed in to {}; its tools are available in your session. You can \
                     close this window.",
                    done.server
                )
            } else {
                format!(
                    "You are signed in to {}. Run core_auth_login again to connect. You can \
                     close this window.",
                    done.server
                )
            };
            page(StatusCode::OK, "Authentication successful", &detail)
        }
        Err(e) => {
            let status = match e {
                CallbackError::Exchange(_) | CallbackError::Store(_) => StatusCode::BAD_GATEWAY,
                _ => StatusCode::BAD_REQUEST,
            };
            page(status, "Sign-in failed", &e.to_string())
        }
    }
}

async fn client_metadata(State(auth): State<BackendAuth>) -> Response {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "application/json")],
        auth.settings().client_metadata().to_string(),
    )
        .into_response()
}

/// A small HTML page.
fn page(status: StatusCode, title: &str, detail: &str) -> Response {
    let body = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{t}</title></head>\
         <body><h1>{t}</h1><p>{d}</p></body></html>\n",
        t = escape(title),
        d = escape(detail)
    );
    (
        status,
        NO_STORE,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

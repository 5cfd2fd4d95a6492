//! muster as OAuth 2.1 authorization server and resource server (feature `oauth-server`).
//!
//! Users sign in to muster through an upstream OpenID provider (Dex or any provider with
//! discovery); muster then issues its own opaque access tokens, bound to its resource
//! identifier (RFC 8707), and rotating refresh tokens whose reuse revokes the whole family.
//! Externally issued JWTs of `trustedIssuers` are accepted as bearers too, validated
//! against the issuer's JWKS.
//!
//! [`OAuthServer::routes`] serves the endpoints:
//!
//! | path | what |
//! | --- | --- |
//! | `GET /oauth/authorize` | authorization code flow with PKCE `S256`; sends the user to the provider |
//! | `GET /oauth/callback` | the provider's answer; redirects to the client with a code and `iss` (RFC 9207) |
//! | `POST /oauth/token` | `authorization_code` and `refresh_token` grants |
//! | `POST /oauth/revoke` | RFC 7009 revocation (a refresh token ends its family) |
//! | `POST /oauth/register` | RFC 7591 dynamic client registration |
//! | `GET /.well-known/oauth-authorization-server`, `/.well-known/openid-configuration` | RFC 8414 metadata |
//! | `GET /.well-known/oauth-protected-resource` (and `/mcp` under it) | RFC 9728 metadata |
//! | `GET /.well-known/jwks.json` | an empty key set: muster signs no token |
//!
//! and [`OAuthServer::protect`] puts the bearer check in front of MCP routes: without a
//! valid bearer they answer `401` with `WWW-Authenticate: Bearer resource_metadata=...`.
//! A valid bearer's principal becomes the call's [`SessionId`](muster_core::tool::SessionId)
//! and [`CallerIdentity`](muster_core::tool::CallerIdentity), in the request's extensions.

mod bearer;
mod clients;
mod endpoints;
mod error;
mod exposed;
mod fetch;
mod id_token;
mod jwks;
mod principal;
mod rate_limit;
mod secrets;
mod settings;
mod storage;
mod store;
mod trusted;
mod upstream;

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::ConnectInfo;
use muster_core::config::OAuthServerConfig;

pub use error::OAuthSetupError;
pub use storage::SignInStores;

use crate::tls::ExtraRoots;
use rate_limit::RateLimiter;
use settings::Settings;
use store::GrantStore;
use trusted::TrustedIssuers;
use upstream::Upstream;

/// The OAuth server. Cheap to clone.
#[derive(Debug, Clone)]
pub struct OAuthServer {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    settings: Settings,
    store: Arc<dyn GrantStore>,
    /// The sign-ins to protected MCP servers, kept in the same storage when it is shared.
    sign_ins: Option<SignInStores>,
    upstream: Upstream,
    trusted: TrustedIssuers,
    limiter: RateLimiter,
    http: reqwest::Client,
    /// The audiences the servers that receive the caller's identity require (their
    /// `spec.auth.requiredAudiences`), asked for at each sign-in.
    audiences: RequiredAudiences,
    /// Told of each signed-in session that ends (its token family revoked).
    session_end: SessionEndHook,
}

/// What is told of each session whose sign-in to muster ended, once set.
#[derive(Default)]
struct SessionEndHook(std::sync::OnceLock<SessionEnd>);

impl std::fmt::Debug for SessionEndHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = if self.0.get().is_some() {
            "set"
        } else {
            "unset"
        };
        write!(f, "SessionEndHook({state})")
    }
}

/// What the OAuth server tells of a session whose sign-in to muster ended (signed out, or
/// revoked after a refresh token was replayed): the session, as calls see it.
pub type SessionEnd = Box<dyn Fn(muster_core::tool::SessionId) + Send + Sync>;

/// Where the required audiences come from, once set.
#[derive(Default)]
struct RequiredAudiences(std::sync::OnceLock<AudienceSource>);

impl std::fmt::Debug for RequiredAudiences {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = if self.0.get().is_some() {
            "set"
        } else {
            "unset"
        };
        write!(f, "RequiredAudiences({state})")
    }
}

/// What tells the OAuth server, at each sign-in, which extra audiences the forwarded ID
/// token must carry.
pub type AudienceSource = Box<dyn Fn() -> Vec<String> + Send + Sync>;

impl Inner {
    /// Revokes the token family `id` and tells the session-end hook its session ended.
    async fn end_family(&self, id: &str) -> Result<(), store::StoreError> {
        self.store.revoke_family(id).await?;
        if let Some(hook) = self.session_end.0.get() {
            hook(principal::family_session(id));
        }
        Ok(())
    }
}

impl OAuthServer {
    /// The server of `config` (`aggregator.oauth.server`), trusting `roots` in addition to
    /// the system's CAs for its calls to providers. The provider's metadata is fetched on
    /// first use, so muster starts while the provider is down.
    ///
    /// # Errors
    ///
    /// When a setting is missing or malformed, or a secret file cannot be read.
    pub fn new(config: &OAuthServerConfig, roots: &ExtraRoots) -> Result<Self, OAuthSetupError> {
        let settings = Settings::from_config(config)?;
        let storage::Storage { store, sign_ins } = storage::storage_of(config)?;
        let http = fetch::client(roots)?;
        let mut audiences = vec![settings.resource.clone()];
        audiences.extend(settings.trusted_audiences.iter().cloned());
        let trusted = TrustedIssuers::new(&settings.trusted_issuers, &audiences, &http);
        let upstream = Upstream::new(settings.upstream.clone(), http.clone());
        let limiter = RateLimiter::new(settings.rate_limit);
        Ok(Self {
            inner: Arc::new(Inner {
                settings,
                store,
                sign_ins,
                upstream,
                trusted,
                limiter,
                http,
                audiences: RequiredAudiences::default(),
                session_end: SessionEndHook::default(),
            }),
        })
    }

    /// Asks the provider, at every sign-in from now on, for the audiences `source` names
    /// (as Dex's cross-client scopes `audience:server:client_id:<audience>`), so the ID
    /// token forwarded to a server with `spec.auth.requiredAudiences` carries them. Set once;
    /// a later call is ignored.
    pub fn request_audiences_from(&self, source: AudienceSource) {
        let _ = self.inner.audiences.0.set(source);
    }

    /// Tells `hook` of every session whose sign-in to muster ends from now on: its token
    /// family was revoked (`/oauth/revoke` with its refresh token, or a replayed refresh
    /// token). Set once; a later call is ignored.
    pub fn on_session_end(&self, hook: SessionEnd) {
        let _ = self.inner.session_end.0.set(hook);
    }

    /// The audiences to ask for now.
    fn required_audiences(&self) -> Vec<String> {
        self.inner
            .audiences
            .0
            .get()
            .map(|source| source())
            .unwrap_or_default()
    }

    /// The stores for the sign-ins of muster's sessions to OAuth-protected MCP servers
    /// (`core_auth_login`) when this server's storage is shared by replicas
    /// (`storage.type: valkey`): the same Valkey connection, key prefix and encryption key.
    /// `None` with memory storage, where each process keeps its own.
    pub fn shared_sign_in_stores(&self) -> Option<SignInStores> {
        self.inner.sign_ins.clone()
    }

    /// muster's issuer identifier (its base URL).
    pub fn issuer(&self) -> &str {
        &self.inner.settings.base_url
    }

    /// The OAuth endpoints and `.well-known` documents. They are public: merge them next
    /// to the protected MCP routes.
    pub fn routes(&self) -> Router {
        endpoints::router(self.clone())
    }

    /// `routes` behind the bearer check.
    pub fn protect(&self, routes: Router) -> Router {
        routes.layer(axum::middleware::from_fn_with_state(
            self.clone(),
            bearer::require_bearer,
        ))
    }
}

/// The client address of a request: the socket peer when the server records it.
fn client_addr<B>(request: &axum::http::Request<B>) -> IpAddr {
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED), |c| c.0.ip())
}

//! A tool call and the context it runs in.

use std::fmt;
use std::sync::Arc;

use rmcp::model::JsonObject;
use tokio_util::sync::CancellationToken;

use super::{CallerChannel, ToolArguments, ToolError};
use crate::secret::SecretString;

/// The name a tool is called by, e.g. `x_github_search` or `core_service_list`.
///
/// Cheap to clone.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ToolName(Arc<str>);

impl ToolName {
    /// A tool name.
    pub fn new(name: impl AsRef<str>) -> Self {
        Self(Arc::from(name.as_ref()))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ToolName {
    fn from(s: &str) -> Self {
        Self::new(s)
    }
}

impl From<String> for ToolName {
    fn from(s: String) -> Self {
        Self(Arc::from(s))
    }
}

impl From<Arc<str>> for ToolName {
    /// The name `name` holds, sharing its text.
    fn from(name: Arc<str>) -> Self {
        Self(name)
    }
}

/// The session a call belongs to. Without OAuth every request belongs to `default-user`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SessionId(Arc<str>);

impl SessionId {
    /// The session of requests made without authentication.
    pub const DEFAULT_USER: &'static str = "default-user";

    /// A session id.
    pub fn new(id: impl AsRef<str>) -> Self {
        Self(Arc::from(id.as_ref()))
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for SessionId {
    /// [`DEFAULT_USER`](Self::DEFAULT_USER), shared: a default context allocates no id.
    fn default() -> Self {
        static DEFAULT_USER: std::sync::LazyLock<SessionId> =
            std::sync::LazyLock::new(|| SessionId::new(SessionId::DEFAULT_USER));
        DEFAULT_USER.clone()
    }
}

impl From<Arc<str>> for SessionId {
    /// The session `id` names, sharing its text.
    fn from(id: Arc<str>) -> Self {
        Self(id)
    }
}

impl fmt::Display for SessionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Who is calling, as established by muster's front door.
///
/// Without OAuth there is no identity (the call belongs to the `default-user` session).
/// With `aggregator.oauth.server`, every request carries one: the principal of the
/// validated bearer. Credentials in it are [`SecretString`]s and never shown.
#[derive(Debug, Clone, Default)]
pub struct CallerIdentity {
    /// The subject (`sub`, or the configured subject claim) of the caller's token.
    pub subject: String,
    /// The caller's email claim, when the token carried one.
    pub email: Option<String>,
    /// The issuer of the caller's token (muster's upstream provider for sign-ins to muster).
    pub issuer: Option<String>,
    /// The party the token was issued to: `azp`, else the first `aud`, else the OAuth
    /// client that signed in to muster.
    pub audience: Option<String>,
    /// The actor chain of a delegated token (`act.sub`, outermost actor first); empty when
    /// the caller acts for itself.
    pub actor: Vec<String>,
    /// The caller's upstream ID token, for servers with token forwarding.
    pub id_token: Option<SecretString>,
    /// The inbound bearer itself when it is an externally issued token muster validated
    /// (a trusted issuer's JWT): what `forwardToken` sends on byte-identical. `None` for
    /// muster's own opaque access tokens, which never leave muster.
    pub bearer: Option<SecretString>,
}

impl CallerIdentity {
    /// The token a `forwardToken` server receives for this caller: the validated inbound
    /// bearer when there is one, else the upstream ID token of the sign-in to muster.
    pub fn forwardable_token(&self) -> Option<&SecretString> {
        self.bearer.as_ref().or(self.id_token.as_ref())
    }
}

/// One progress report of a running call.
#[derive(Debug, Clone, PartialEq)]
pub struct ProgressUpdate {
    /// Progress so far; increases with every report.
    pub progress: f64,
    /// The total, when known.
    pub total: Option<f64>,
    /// A human-readable message.
    pub message: Option<String>,
}

/// Where a call reports progress: the caller's progress token, in whatever form the caller's
/// transport needs. Cheap to clone.
#[derive(Clone)]
pub struct ProgressSink(Arc<dyn Fn(ProgressUpdate) + Send + Sync>);

impl ProgressSink {
    /// A sink that hands every update to `f`. `f` must not block.
    pub fn new(f: impl Fn(ProgressUpdate) + Send + Sync + 'static) -> Self {
        Self(Arc::new(f))
    }

    /// Reports progress.
    pub fn report(&self, update: ProgressUpdate) {
        (self.0)(update);
    }
}

impl fmt::Debug for ProgressSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProgressSink")
    }
}

/// The function a [`SessionNotifier`] hands `(method, params)` to.
type NotifyFn = dyn Fn(&str, serde_json::Value) + Send + Sync;

/// Sends notifications to the calling session outside of the call's own responses (for
/// `core_events` follow mode), for as long as the session lives. Cheap to clone.
#[derive(Clone)]
pub struct SessionNotifier {
    send: Arc<NotifyFn>,
    closed: Arc<dyn Fn() -> bool + Send + Sync>,
}

impl SessionNotifier {
    /// A notifier that hands `(method, params)` to `send`, and whose session has ended when
    /// `closed` says so. `send` must not block.
    pub fn new(
        send: impl Fn(&str, serde_json::Value) + Send + Sync + 'static,
        closed: impl Fn() -> bool + Send + Sync + 'static,
    ) -> Self {
        Self {
            send: Arc::new(send),
            closed: Arc::new(closed),
        }
    }

    /// Sends the notification `method` with `params`.
    pub fn notify(&self, method: &str, params: serde_json::Value) {
        (self.send)(method, params);
    }

    /// Whether the session has ended.
    pub fn is_closed(&self) -> bool {
        (self.closed)()
    }
}

impl fmt::Debug for SessionNotifier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SessionNotifier")
    }
}

/// Everything about a call besides its name and arguments.
#[derive(Debug, Clone, Default)]
pub struct CallContext {
    /// The caller's session.
    pub session: SessionId,
    /// The caller's identity, when authenticated; shared, as the front door made it for
    /// the request (a call's context is moved and cloned along its way).
    pub caller: Option<Arc<CallerIdentity>>,
    /// Where progress goes, when the caller asked for it.
    pub progress: Option<ProgressSink>,
    /// Notifications to the caller's session beyond this call, when its transport has a
    /// way to deliver them.
    pub notifier: Option<SessionNotifier>,
    /// Cancelled when the caller gives up; services stop work and tell the server.
    pub cancellation: CancellationToken,
    /// How many workflows this call is nested in (0 for a call from a client); the workflow
    /// engine refuses to go deeper than its limit, so `A → B → A` cannot recurse forever.
    pub workflow_depth: u32,
    /// The budget of the workflow call tree this call belongs to: set by the root workflow
    /// run and shared by every run nested under it (`None` outside workflows).
    pub tree: Option<Arc<super::RunTree>>,
    /// The caller, for the requests the tool's server sends it during the call (sampling,
    /// elicitation, roots); `None` when the caller cannot be asked anything.
    pub caller_requests: Option<CallerChannel>,
    /// The `_meta` of the caller's request that goes upstream (see
    /// [`upstream_meta`](super::upstream_meta)): trace context and the caller's own keys.
    pub request_meta: Option<JsonObject>,
}

impl CallContext {
    /// The context of an unauthenticated caller in the `default-user` session.
    pub fn anonymous() -> Self {
        Self::default()
    }

    /// Reports progress when the caller asked for it.
    pub fn report_progress(&self, update: ProgressUpdate) {
        if let Some(sink) = &self.progress {
            sink.report(update);
        }
    }
}

/// A request to call one tool.
#[derive(Debug, Clone)]
pub struct ToolCall {
    /// The tool.
    pub name: ToolName,
    /// Its arguments; `None` when the caller sent none (or `null`).
    pub arguments: Option<ToolArguments>,
    /// Session, caller, progress and cancellation.
    pub context: CallContext,
}

impl ToolCall {
    /// A call of `name` with `arguments` in an anonymous context.
    pub fn new(name: impl Into<ToolName>, arguments: Option<JsonObject>) -> Self {
        Self {
            name: name.into(),
            arguments: arguments.map(ToolArguments::from_object),
            context: CallContext::anonymous(),
        }
    }

    /// A call of `name` with `arguments` in `context` (what [`new`](Self::new) and
    /// [`with_context`](Self::with_context) make, without building the anonymous context
    /// first).
    pub fn in_context(
        name: impl Into<ToolName>,
        arguments: Option<ToolArguments>,
        context: CallContext,
    ) -> Self {
        Self {
            name: name.into(),
            arguments,
            context,
        }
    }

    /// Replaces the context.
    #[must_use]
    pub fn with_context(mut self, context: CallContext) -> Self {
        self.context = context;
        self
    }

    /// A copy of the arguments as an object, or an empty object when there are none.
    ///
    /// # Errors
    ///
    /// [`ToolError::InvalidArguments`] when their text makes no object muster can hold
    /// (see [`ToolArguments`]).
    pub fn arguments_or_empty(&self) -> Result<JsonObject, ToolError> {
        self.arguments
            .as_ref()
            .map_or_else(|| Ok(JsonObject::new()), ToolArguments::to_object)
    }

    /// Takes the arguments out as an object (`None`: there were none).
    ///
    /// # Errors
    ///
    /// As [`arguments_or_empty`](Self::arguments_or_empty).
    pub fn take_arguments(&mut self) -> Result<Option<JsonObject>, ToolError> {
        self.arguments
            .take()
            .map(ToolArguments::into_object)
            .transpose()
    }
}

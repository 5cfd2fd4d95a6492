//! Every rule of the MCPServer spec, checked at once.

use std::collections::BTreeMap;

use super::{
    AuthType, AuthorizationServer, ClientCredentialsSecretRef, DEFAULT_TIMEOUT_SECS, Family,
    HeaderFrom, McpServerAuth, McpServerDefinition, McpServerSpec, RemoteTransport, ServerType,
    StdioTransport, TokenExchange, Transport,
};
use crate::resource::check_name;
use crate::resource::validate::{
    ARG_NAME_PATTERN, NAME_PATTERN, ValidationContext, ValidationErrors, char_len, https_url_rule,
    is_arg_name, is_prefix_name,
};

/// Most characters in `spec.description`.
pub(crate) const MAX_DESCRIPTION: usize = 500;
/// Most characters in `spec.url`.
pub(crate) const MAX_URL: usize = 2048;
/// Most entries in `spec.headers` and in `spec.headersFrom`.
pub(crate) const MAX_HEADERS: usize = 32;
/// Headers that carry credentials and so may not have a value in `spec.headers`.
pub(crate) const CREDENTIAL_HEADERS: [&str; 4] = [
    "authorization",
    "proxy-authorization",
    "cookie",
    "x-api-key",
];

const SUPPORTED: &str = "stdio, streamable-http, sse";
const ORG_PREFIX: &str = "org-";

pub(super) fn validate(
    def: &McpServerDefinition,
    identity: Option<(&str, &str)>,
    ctx: &ValidationContext,
) -> Result<McpServerSpec, ValidationErrors> {
    let mut errs = ValidationErrors::new();
    if let Some((name, _)) = identity
        && let Err(violation) = check_name(name)
    {
        errs.push(violation.path, violation.rule);
    }
    let server_type = check_type(def, ctx, &mut errs);
    check_common(def, identity, ctx, &mut errs);
    let transport = match server_type {
        Some(ServerType::Stdio) => check_stdio(def, &mut errs).map(Transport::Stdio),
        Some(ServerType::StreamableHttp) => {
            check_remote(def, identity, ctx, &mut errs).map(Transport::StreamableHttp)
        }
        Some(ServerType::Sse) => check_remote(def, identity, ctx, &mut errs).map(Transport::Sse),
        None => None,
    };
    let timeout = check_timeout(def, &mut errs);
    let progress_max_duration = check_progress(def, timeout, &mut errs);
    match transport {
        Some(transport) if errs.is_empty() => Ok(McpServerSpec {
            transport,
            tool_prefix: def.tool_prefix.clone(),
            family: def.family.clone(),
            description: def.description.clone(),
            auto_start: def.auto_start.unwrap_or(false),
            timeout,
            progress_max_duration,
            suspended: def.suspended.unwrap_or(false),
            restart_requested_at: def.restart_requested_at,
        }),
        _ => Err(errs),
    }
}

fn check_type(
    def: &McpServerDefinition,
    ctx: &ValidationContext,
    errs: &mut ValidationErrors,
) -> Option<ServerType> {
    let raw = def.type_.as_deref().unwrap_or("");
    if raw.is_empty() {
        errs.push(
            "spec.type",
            "type is required (one of stdio, streamable-http, sse)",
        );
        return None;
    }
    let Some(t) = ServerType::parse(raw) else {
        errs.push(
            "spec.type",
            format!("unsupported MCP server type: {raw} (supported: {SUPPORTED})"),
        );
        return None;
    };
    if t == ServerType::Stdio && ctx.is_kubernetes() {
        errs.push(
            "spec.type",
            "stdio servers are not supported in Kubernetes mode: run the MCP server as its own \
             workload and register it with type streamable-http or sse",
        );
    }
    Some(t)
}

fn check_common(
    def: &McpServerDefinition,
    identity: Option<(&str, &str)>,
    ctx: &ValidationContext,
    errs: &mut ValidationErrors,
) {
    let in_muster_ns = identity.is_some_and(|(_, ns)| ns == ctx.muster_namespace);
    if let Some(prefix) = &def.tool_prefix {
        if !is_prefix_name(prefix) {
            errs.push("spec.toolPrefix", format!("must match {NAME_PATTERN}"));
        } else if in_muster_ns && prefix.starts_with(ORG_PREFIX) {
            errs.push(
                "spec.toolPrefix",
                "must not start with org- in muster's namespace",
            );
        }
    }
    if let Some((name, _)) = identity
        && in_muster_ns
        && name.starts_with(ORG_PREFIX)
    {
        errs.push(
            "metadata.name",
            "must not start with org- in muster's namespace",
        );
    }
    if let Some(family) = &def.family {
        check_family(family, errs);
    }
    if let Some(d) = &def.description
        && char_len(d) > MAX_DESCRIPTION
    {
        errs.push(
            "spec.description",
            format!("must be at most {MAX_DESCRIPTION} characters"),
        );
    }
}

fn check_family(family: &Family, errs: &mut ValidationErrors) {
    if family.name.is_empty() {
        errs.push("spec.family.name", "is required when family is set");
    } else if !is_prefix_name(&family.name) {
        errs.push("spec.family.name", format!("must match {NAME_PATTERN}"));
    }
    if family.instance_arg.is_empty() {
        errs.push("spec.family.instanceArg", "is required when family is set");
    } else if !is_arg_name(&family.instance_arg) {
        errs.push(
            "spec.family.instanceArg",
            format!("must match {ARG_NAME_PATTERN}"),
        );
    }
}

fn check_stdio(def: &McpServerDefinition, errs: &mut ValidationErrors) -> Option<StdioTransport> {
    let command = def.command.clone().unwrap_or_default();
    if command.trim().is_empty() {
        errs.push("spec.command", "command is required for stdio type");
    }
    // A `url` on a stdio server is ignored, as the original's converter and the CRD do.
    let remote_only = "only for streamable-http and sse servers";
    if def.headers.as_ref().is_some_and(|h| !h.is_empty()) {
        errs.push("spec.headers", remote_only);
    }
    if def.headers_from.as_ref().is_some_and(|h| !h.is_empty()) {
        errs.push("spec.headersFrom", remote_only);
    }
    if let Some(auth) = &def.auth
        && *auth
            != (McpServerAuth {
                type_: Some(AuthType::None),
                ..McpServerAuth::default()
            })
        && *auth != McpServerAuth::default()
    {
        errs.push(
            "spec.auth",
            "auth configuration is only supported for remote server types (streamable-http or sse)",
        );
    }
    Some(StdioTransport {
        command,
        args: def.args.clone().unwrap_or_default(),
        env: def.env.clone().unwrap_or_default(),
    })
}

fn check_remote(
    def: &McpServerDefinition,
    identity: Option<(&str, &str)>,
    ctx: &ValidationContext,
    errs: &mut ValidationErrors,
) -> Option<RemoteTransport> {
    let url = def.url.clone().unwrap_or_default();
    check_url(&url, ctx, errs);
    // A `command` on a remote server is ignored, as the original's converter and the CRD do.
    let stdio_only = "only for stdio servers";
    if def.args.as_ref().is_some_and(|a| !a.is_empty()) {
        errs.push("spec.args", stdio_only);
    }
    if def.env.as_ref().is_some_and(|e| !e.is_empty()) {
        let instead = if ctx.is_kubernetes() {
            "put credentials in a Secret referenced by headersFrom"
        } else {
            "send credentials in spec.headers"
        };
        errs.push("spec.env", format!("refused on a remote server: {instead}"));
    }
    let headers = def.headers.clone().unwrap_or_default();
    check_headers(&headers, ctx, errs);
    let headers_from = def.headers_from.clone().unwrap_or_default();
    check_headers_from(&headers_from, errs);
    if !ctx.is_kubernetes() {
        // Kubernetes mode refuses credentials in the URL outright.
        check_basic_and_authorization(&url, &headers, &headers_from, errs);
    }
    if let Some(auth) = &def.auth {
        check_auth(auth, identity, ctx, errs);
    }
    Some(RemoteTransport {
        url,
        headers,
        headers_from,
        auth: def.auth.clone(),
    })
}

fn check_url(url: &str, ctx: &ValidationContext, errs: &mut ValidationErrors) {
    if url.trim().is_empty() {
        errs.push(
            "spec.url",
            "url is required for streamable-http and sse types",
        );
        return;
    }
    if char_len(url) > MAX_URL {
        errs.push("spec.url", format!("must be at most {MAX_URL} characters"));
    }
    match url::Url::parse(url) {
        Ok(u) if matches!(u.scheme(), "http" | "https") && u.host().is_some() => {
            if ctx.is_kubernetes() && (!u.username().is_empty() || u.password().is_some()) {
                errs.push(
                    "spec.url",
                    "must not contain a user name or password: put credentials in a Secret \
                     referenced by headersFrom",
                );
            }
        }
        Ok(_) => errs.push("spec.url", "must be an http:// or https:// URL"),
        Err(e) => errs.push("spec.url", format!("must be a valid absolute URL ({e})")),
    }
}

/// A URL with `user:password@` makes the HTTP client send `Authorization: Basic`, which
/// replaces an `Authorization` header of the spec without a word: refuse the pair.
fn check_basic_and_authorization(
    url: &str,
    headers: &BTreeMap<String, String>,
    headers_from: &[HeaderFrom],
    errs: &mut ValidationErrors,
) {
    let Ok(parsed) = url::Url::parse(url) else {
        return;
    };
    if parsed.username().is_empty() && parsed.password().is_none() {
        return;
    }
    let header = headers
        .keys()
        .find(|k| k.eq_ignore_ascii_case("authorization"))
        .map(|k| format!("spec.headers.{k}"))
        .or_else(|| {
            headers_from
                .iter()
                .position(|h| h.name.eq_ignore_ascii_case("authorization"))
                .map(|i| format!("spec.headersFrom[{i}]"))
        });
    if let Some(header) = header {
        errs.push(
            "spec.url",
            format!(
                "must not contain a user name or password when {header} sets an Authorization \
                 header: the URL's credentials would be sent as Basic authentication in its \
                 place; remove one of the two"
            ),
        );
    }
}

fn check_headers(
    headers: &BTreeMap<String, String>,
    ctx: &ValidationContext,
    errs: &mut ValidationErrors,
) {
    if headers.len() > MAX_HEADERS {
        errs.push(
            "spec.headers",
            format!("must have at most {MAX_HEADERS} entries"),
        );
    }
    let mut seen = std::collections::HashSet::new();
    for (name, value) in headers {
        let path = format!("spec.headers.{name}");
        let lower = name.to_ascii_lowercase();
        if name.is_empty() {
            errs.push("spec.headers", "header names must not be empty");
        } else if !seen.insert(lower.clone()) {
            errs.push(
                path.clone(),
                "header names must be unique (case-insensitive)",
            );
        }
        if ctx.is_kubernetes()
            && CREDENTIAL_HEADERS.contains(&lower.as_str())
            && !value.trim().is_empty()
        {
            errs.push(
                path,
                "must not carry a credential: put it in a Secret referenced by headersFrom",
            );
        }
    }
}

fn check_headers_from(list: &[HeaderFrom], errs: &mut ValidationErrors) {
    if list.len() > MAX_HEADERS {
        errs.push(
            "spec.headersFrom",
            format!("must have at most {MAX_HEADERS} entries"),
        );
    }
    let mut seen = std::collections::HashSet::new();
    for (i, h) in list.iter().enumerate() {
        let path = format!("spec.headersFrom[{i}]");
        let len = char_len(&h.name);
        if !(1..=256).contains(&len) {
            errs.push(format!("{path}.name"), "must be 1 to 256 characters");
        } else if !seen.insert(h.name.to_ascii_lowercase()) {
            errs.push(format!("{path}.name"), "must be unique in the list");
        }
        if h.value_from.type_ != "Secret" {
            errs.push(format!("{path}.valueFrom.type"), "must be Secret");
        }
        if h.value_from.name.is_empty() {
            errs.push(format!("{path}.valueFrom.name"), "is required");
        }
        if h.value_from.key.is_empty() {
            errs.push(format!("{path}.valueFrom.key"), "is required");
        }
    }
}

fn check_timeout(def: &McpServerDefinition, errs: &mut ValidationErrors) -> Option<u32> {
    let t = def.timeout?;
    if (1..=300).contains(&t) {
        u32::try_from(t).ok()
    } else {
        errs.push("spec.timeout", "must be between 1 and 300 seconds");
        None
    }
}

fn check_progress(
    def: &McpServerDefinition,
    timeout: Option<u32>,
    errs: &mut ValidationErrors,
) -> Option<u32> {
    let max = def.progress.as_ref()?.max_duration?;
    let floor = i64::from(timeout.unwrap_or(DEFAULT_TIMEOUT_SECS));
    if (floor..=3600).contains(&max) {
        u32::try_from(max).ok()
    } else {
        errs.push(
            "spec.progress.maxDuration",
            format!("must be between timeout ({floor}) and 3600 seconds"),
        );
        None
    }
}

fn check_auth(
    auth: &McpServerAuth,
    identity: Option<(&str, &str)>,
    ctx: &ValidationContext,
    errs: &mut ValidationErrors,
) {
    let oauth = auth.type_ == Some(AuthType::Oauth);
    let exchange = auth.token_exchange.as_ref().filter(|t| t.enabled);
    if auth.forward_identity && !(oauth && auth.authorization_server.is_some()) {
        errs.push(
            "spec.auth.forwardIdentity",
            "requires type: oauth and authorizationServer",
        );
    }
    if let Some(server) = &auth.authorization_server {
        if !oauth {
            errs.push("spec.auth.authorizationServer", "requires type: oauth");
        }
        if auth.forward_token {
            errs.push(
                "spec.auth.forwardToken",
                "is mutually exclusive with authorizationServer",
            );
        }
        if exchange.is_some() {
            errs.push(
                "spec.auth.tokenExchange.enabled",
                "is mutually exclusive with authorizationServer",
            );
        }
        check_authorization_server(server, identity, ctx, errs);
    }
    if !auth.provider_apps.is_empty() {
        if !(auth.forward_token || auth.forward_identity) {
            errs.push(
                "spec.auth.providerApps",
                "requires forwardToken or forwardIdentity",
            );
        }
        if identity.is_some_and(|(_, ns)| ns != ctx.muster_namespace) {
            errs.push(
                "spec.auth.providerApps",
                "is allowed only in muster's namespace",
            );
        }
    }
    for (i, aud) in auth.required_audiences.iter().enumerate() {
        if aud.is_empty() || aud.chars().any(char::is_whitespace) {
            errs.push(
                format!("spec.auth.requiredAudiences[{i}]"),
                "must be non-empty and contain no whitespace",
            );
        }
    }
    if let Some(te) = exchange {
        check_token_exchange(te, identity, ctx, errs);
    }
}

fn check_token_exchange(
    te: &TokenExchange,
    identity: Option<(&str, &str)>,
    ctx: &ValidationContext,
    errs: &mut ValidationErrors,
) {
    let base = "spec.auth.tokenExchange";
    match te.dex_token_endpoint.as_deref() {
        None | Some("") => errs.push(
            format!("{base}.dexTokenEndpoint"),
            "is required when enabled",
        ),
        Some(e) => push_https(format!("{base}.dexTokenEndpoint"), e, errs),
    }
    if te.connector_id.as_deref().unwrap_or("").is_empty() {
        errs.push(format!("{base}.connectorId"), "is required when enabled");
    }
    if let Some(e) = te.expected_issuer.as_deref() {
        push_https(format!("{base}.expectedIssuer"), e, errs);
    }
    if let Some(r) = &te.client_credentials_secret_ref {
        check_secret_ref(
            r,
            &format!("{base}.clientCredentialsSecretRef"),
            identity,
            ctx,
            errs,
        );
    }
}

fn check_authorization_server(
    server: &AuthorizationServer,
    identity: Option<(&str, &str)>,
    ctx: &ValidationContext,
    errs: &mut ValidationErrors,
) {
    let base = "spec.auth.authorizationServer";
    if server.issuer.is_empty() {
        errs.push(format!("{base}.issuer"), "is required");
    } else {
        push_https(format!("{base}.issuer"), &server.issuer, errs);
        if server.issuer.ends_with('/') || server.issuer.contains(['?', '#']) {
            errs.push(
                format!("{base}.issuer"),
                "must have no trailing slash, query or fragment",
            );
        }
    }
    let pair = (&server.authorization_endpoint, &server.token_endpoint);
    match pair {
        (Some(_), None) | (None, Some(_)) => errs.push(
            format!("{base}.authorizationEndpoint"),
            "authorizationEndpoint and tokenEndpoint must be set together",
        ),
        _ => {}
    }
    if let Some(e) = &server.authorization_endpoint {
        push_https(format!("{base}.authorizationEndpoint"), e, errs);
    }
    if let Some(e) = &server.token_endpoint {
        push_https(format!("{base}.tokenEndpoint"), e, errs);
    }
    if let Some(e) = &server.expected_issuer {
        if pair.0.is_none() || pair.1.is_none() {
            errs.push(
                format!("{base}.expectedIssuer"),
                "needs authorizationEndpoint and tokenEndpoint",
            );
        }
        push_https(format!("{base}.expectedIssuer"), e, errs);
    }
    if let Some(e) = &server.revocation_endpoint {
        push_https(format!("{base}.revocationEndpoint"), e, errs);
    }
    if let Some(r) = &server.client_credentials_secret_ref {
        check_secret_ref(
            r,
            &format!("{base}.clientCredentialsSecretRef"),
            identity,
            ctx,
            errs,
        );
    }
}

fn check_secret_ref(
    r: &ClientCredentialsSecretRef,
    path: &str,
    identity: Option<(&str, &str)>,
    ctx: &ValidationContext,
    errs: &mut ValidationErrors,
) {
    if r.name.is_empty() {
        errs.push(format!("{path}.name"), "is required");
    }
    if let (Some(ns), Some((_, own))) = (r.namespace.as_deref(), identity)
        && own != ctx.muster_namespace
        && ns != own
    {
        errs.push(
            format!("{path}.namespace"),
            "an MCPServer outside muster's namespace may name only its own namespace",
        );
    }
}

fn push_https(path: String, value: &str, errs: &mut ValidationErrors) {
    if let Some(rule) = https_url_rule(value) {
        errs.push(path, rule);
    }
}

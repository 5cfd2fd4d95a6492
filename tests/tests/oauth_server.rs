//! muster as OAuth 2.1 server, against a real OpenID provider (npm `oidc-provider`) as its
//! upstream identity provider, with the browser step scripted as HTTP requests (redirects and
//! cookies): the `401` challenge and metadata documents, dynamic registration, the
//! authorization code flow with PKCE and RFC 9207 `iss`, refresh rotation and replay
//! detection, a sign-in revoked at the provider, trusted issuers' JWTs (and every kind of bad
//! one), the rate limit, and no credential in logs, events or tool output afterwards. With
//! Valkey storage (a real `redis-server`): the OAuth server's state and the sign-ins of
//! muster's sessions to an OAuth-protected MCP server shared by two replicas, sealed.

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use muster_aggregator::oauth_server::{OAuthServer, SignInStores};
use muster_aggregator::tls::ExtraRoots;
use muster_core::auth::{AuthStoreError, Grant, PendingSignIn, SessionKey};
use muster_core::config::OAuthServerConfig;
use muster_core::secret::{ExposeSecret as _, SecretString};
use muster_tests::oidc::{Upstream, UpstreamOptions};
use muster_tests::{ConfigDir, McpClient, MusterConfig, MusterInstance};
use reqwest::blocking::{Client, Response};
use serde_json::{Value, json};
use sha2::Digest as _;

const CLIENT_ID: &str = "muster";
const CLIENT_SECRET: &str = "upstream-client-secret-5f2c9a";
const USER: &str = "alice";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn http() -> Client {
    Client::builder()
        .timeout(Duration::from_secs(20))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

/// The upstream fixture: oidc-provider plus the JWT issuer (and the token-forwarding MCP
/// server on `mcp_port`, unless 0).
type Idp = Upstream;

fn start_idp(idp_port: u16, mint_port: u16, mcp_port: u16, redirect_uri: &str) -> Idp {
    Upstream::start(&UpstreamOptions {
        idp_port,
        mint_port,
        mcp_port,
        client_id: CLIENT_ID,
        client_secret: CLIENT_SECRET,
        redirect_uri,
        user: USER,
    })
    .unwrap()
}

/// muster with its OAuth server in front of an upstream [`Idp`].
struct Setup {
    idp: Idp,
    dir: ConfigDir,
    muster: MusterInstance,
    base: String,
}

fn setup(extra: Value) -> Setup {
    setup_with(extra, false)
}

/// [`setup`], with the fixture's token-forwarding MCP server configured as `fwd` (with
/// `auth.forwardToken`) when `forwarding` is set.
fn setup_with(extra: Value, forwarding: bool) -> Setup {
    setup_full(extra, forwarding, &json!({}), &[])
}

/// [`setup_with`], with `oauth` added to the OAuth settings beside `server` (`mcpClient`)
/// and an MCPServer of each (name, spec) of `servers`.
fn setup_full(extra: Value, forwarding: bool, oauth: &Value, servers: &[(&str, Value)]) -> Setup {
    let (idp_port, mint_port) = (free_port(), free_port());
    let mcp_port = if forwarding { free_port() } else { 0 };
    let issuer = format!("http://127.0.0.1:{idp_port}");
    let minter = format!("http://127.0.0.1:{mint_port}");
    // The port is known once the directory is written: write it with a placeholder base.
    let mut server = json!({
        "enabled": true,
        "dex": { "issuerUrl": issuer, "clientId": CLIENT_ID, "clientSecret": CLIENT_SECRET },
        "allowPublicClientRegistration": true,
        "trustedIssuers": [{
            "issuer": minter, "jwksUrl": format!("{minter}/jwks"), "allowPrivateIPJWKS": true
        }],
    });
    if let (Some(s), Some(e)) = (server.as_object_mut(), extra.as_object()) {
        s.extend(e.clone());
    }
    server["baseUrl"] = json!("BASE_URL");
    let mut settings = json!({ "server": server });
    if let (Some(s), Some(e)) = (settings.as_object_mut(), oauth.as_object()) {
        s.extend(e.clone());
    }
    let mut config = MusterConfig::new()
        .aggregator_setting(&format!("oauth: {settings}"))
        .ready_on_health();
    for (name, spec) in servers {
        config = config.mcp_server(name, spec.clone());
    }
    if forwarding {
        config = config.mcp_server(
            "fwd",
            json!({
                "type": "streamable-http",
                "url": format!("http://127.0.0.1:{mcp_port}/mcp"),
                "autoStart": true,
                "auth": {"forwardToken": true},
            }),
        );
    }
    let dir = config.write().unwrap();
    let base = format!("http://127.0.0.1:{}", dir.port());
    let config = dir.path().join("config.yaml");
    let text = std::fs::read_to_string(&config)
        .unwrap()
        .replace("BASE_URL", &base);
    std::fs::write(&config, text).unwrap();
    let idp = start_idp(
        idp_port,
        mint_port,
        mcp_port,
        &format!("{base}/oauth/callback"),
    );
    let muster = dir.start_with_args(&["--debug"]).unwrap();
    Setup {
        idp,
        dir,
        muster,
        base,
    }
}

/// Everything secret seen during a test, to grep outputs for afterwards.
#[derive(Default)]
struct Seen(Vec<String>);

impl Seen {
    fn add(&mut self, value: &str) {
        if value.len() >= 8 {
            self.0.push(value.to_owned());
        }
    }

    /// Fails when any secret seen appears in one of the named `outputs`.
    fn assert_absent_from(&self, outputs: &[(&str, &str)]) {
        for secret in &self.0 {
            for (what, text) in outputs {
                assert!(!text.contains(secret.as_str()), "a credential is in {what}");
            }
        }
    }
}

/// A browser: follows redirects by hand, keeps cookies per name.
struct Browser {
    http: Client,
    cookies: BTreeMap<String, String>,
}

impl Browser {
    fn new() -> Self {
        Self {
            http: http(),
            cookies: BTreeMap::new(),
        }
    }

    fn get(&mut self, url: &str, seen: &mut Seen) -> Response {
        let mut request = self.http.get(url);
        if !self.cookies.is_empty() {
            let header: Vec<String> = self
                .cookies
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            request = request.header("cookie", header.join("; "));
        }
        let response = request.send().unwrap();
        for value in response.headers().get_all("set-cookie") {
            let text = value.to_str().unwrap();
            let pair = text.split(';').next().unwrap();
            if let Some((name, value)) = pair.split_once('=') {
                seen.add(value);
                if value.is_empty() {
                    self.cookies.remove(name);
                } else {
                    self.cookies.insert(name.to_owned(), value.to_owned());
                }
            }
        }
        response
    }
}

fn location(response: &Response, from: &str) -> String {
    let value = response
        .headers()
        .get("location")
        .unwrap_or_else(|| panic!("no redirect from {from}: {}", response.status()))
        .to_str()
        .unwrap();
    url::Url::parse(from)
        .unwrap()
        .join(value)
        .unwrap()
        .to_string()
}

fn query(url: &str) -> BTreeMap<String, String> {
    url::Url::parse(url)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect()
}

fn pkce() -> (String, String) {
    let verifier = URL_SAFE_NO_PAD.encode(rand_bytes());
    let challenge = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(verifier.as_bytes()));
    (verifier, challenge)
}

fn rand_bytes() -> [u8; 32] {
    let mut out = [0u8; 32];
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    let digest = sha2::Sha256::digest(format!("{nanos}-{:?}", std::thread::current().id()));
    out.copy_from_slice(&digest);
    out
}

fn form(pairs: &[(&str, &str)]) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(pairs)
        .finish()
}

fn post_form(url: &str, pairs: &[(&str, &str)]) -> (u16, Value) {
    let response = http()
        .post(url)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(form(pairs))
        .send()
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().unwrap_or(Value::Null))
}

/// Registers a public client; its id.
fn register(base: &str, redirect: &str) -> String {
    let response = http()
        .post(format!("{base}/oauth/register"))
        .json(&json!({
            "client_name": "muster-tests", "redirect_uris": [redirect],
            "token_endpoint_auth_method": "none",
            "grant_types": ["authorization_code", "refresh_token"], "response_types": ["code"],
        }))
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 201);
    let body: Value = response.json().unwrap();
    body["client_id"].as_str().unwrap().to_owned()
}

/// muster's authorization endpoint for a sign-in of `client` with PKCE `challenge`.
fn authorize_url(base: &str, client: &str, redirect: &str, state: &str, challenge: &str) -> String {
    format!(
        "{base}/oauth/authorize?{}",
        form(&[
            ("response_type", "code"),
            ("client_id", client),
            ("redirect_uri", redirect),
            ("scope", "openid email"),
            ("state", state),
            ("code_challenge", challenge),
            ("code_challenge_method", "S256"),
            ("resource", &format!("{base}/mcp")),
        ])
    )
}

/// The browser part of a sign-in: muster's code for `client`.
fn sign_in(base: &str, client: &str, redirect: &str, challenge: &str, seen: &mut Seen) -> String {
    let mut browser = Browser::new();
    let state = "client-state-1";
    let authorize = authorize_url(base, client, redirect, state, challenge);
    let response = browser.get(&authorize, seen);
    assert_eq!(response.status().as_u16(), 302);
    let mut url = location(&response, &authorize);
    assert!(
        !url.starts_with(base),
        "muster sends the user to the provider: {url}"
    );
    // Through the provider (login, consent) until it sends the user back to muster.
    for _ in 0..20 {
        if url.starts_with(&format!("{base}/oauth/callback")) {
            break;
        }
        let response = browser.get(&url, seen);
        assert!(
            response.status().is_redirection(),
            "{url}: {}",
            response.status()
        );
        url = location(&response, &url);
    }
    assert!(url.starts_with(&format!("{base}/oauth/callback")), "{url}");
    let upstream = query(&url);
    seen.add(&upstream["code"]);
    let response = browser.get(&url, seen);
    assert_eq!(response.status().as_u16(), 302);
    let back = location(&response, &url);
    assert!(back.starts_with(redirect), "{back}");
    let answer = query(&back);
    assert_eq!(answer["state"], state);
    assert_eq!(
        answer["iss"], base,
        "RFC 9207 iss on the authorization response"
    );
    seen.add(&answer["code"]);
    answer["code"].clone()
}

fn redeem(base: &str, client: &str, redirect: &str, code: &str, verifier: &str) -> (u16, Value) {
    post_form(
        &format!("{base}/oauth/token"),
        &[
            ("grant_type", "authorization_code"),
            ("client_id", client),
            ("code", code),
            ("code_verifier", verifier),
            ("redirect_uri", redirect),
        ],
    )
}

fn refresh(base: &str, client: &str, token: &str) -> (u16, Value) {
    post_form(
        &format!("{base}/oauth/token"),
        &[
            ("grant_type", "refresh_token"),
            ("client_id", client),
            ("refresh_token", token),
        ],
    )
}

/// The status of an `initialize` with `bearer` (none when empty), and its challenge.
fn initialize_status(base: &str, bearer: &str) -> (u16, String) {
    let mut request = http()
        .post(format!("{base}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "0"}},
        }));
    if !bearer.is_empty() {
        request = request.bearer_auth(bearer);
    }
    let response = request.send().unwrap();
    let challenge = response
        .headers()
        .get("www-authenticate")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (response.status().as_u16(), challenge)
}

fn client_with(base: &str, bearer: &str) -> McpClient {
    let header = format!("Bearer {bearer}");
    McpClient::connect_with_headers(&format!("{base}/mcp"), &[("authorization", &header)]).unwrap()
}

#[test]
fn sign_in_through_the_provider_refresh_replay_and_revocation() {
    let s = setup(json!({}));
    let base = s.base.as_str();
    let mut seen = Seen::default();
    seen.add(CLIENT_SECRET);

    // Without a bearer: 401 and where to find out more.
    let (status, challenge) = initialize_status(base, "");
    assert_eq!(status, 401);
    assert_eq!(
        challenge,
        format!("Bearer resource_metadata=\"{base}/.well-known/oauth-protected-resource\"")
    );
    for path in [
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let doc: Value = http()
            .get(format!("{base}{path}"))
            .send()
            .unwrap()
            .json()
            .unwrap();
        assert_eq!(doc["resource"], base);
        assert_eq!(doc["authorization_servers"], json!([base]));
    }
    let meta: Value = http()
        .get(format!("{base}/.well-known/oauth-authorization-server"))
        .send()
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(meta["issuer"], base);
    assert_eq!(meta["code_challenge_methods_supported"], json!(["S256"]));
    assert_eq!(meta["authorization_response_iss_parameter_supported"], true);

    // Register, sign in, redeem.
    let redirect = "http://127.0.0.1:9/callback";
    let client = register(base, redirect);
    let (verifier, challenge) = pkce();
    let code = sign_in(base, &client, redirect, &challenge, &mut seen);
    let (status, tokens) = redeem(base, &client, redirect, &code, &verifier);
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh1 = tokens["refresh_token"].as_str().unwrap().to_owned();
    seen.add(&access);
    seen.add(&refresh1);
    assert_ne!(
        access.split('.').count(),
        3,
        "muster's access tokens are opaque"
    );

    // The code is single use; a wrong verifier fails.
    let (status, answer) = redeem(base, &client, redirect, &code, &verifier);
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let (verifier2, challenge2) = pkce();
    let code2 = sign_in(base, &client, redirect, &challenge2, &mut seen);
    let (status, answer) = redeem(base, &client, redirect, &code2, &verifier);
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    drop(verifier2);

    // A wrong state at muster's callback is refused.
    let response = http()
        .get(format!(
            "{base}/oauth/callback?code=abc&state=not-a-state-muster-issued"
        ))
        .send()
        .unwrap();
    assert_eq!(response.status().as_u16(), 400);

    // The bearer works, and the caller is the provider's user.
    let mcp = client_with(base, &access);
    let created = mcp
        .call(
            "core_mcpserver_create",
            json!({"name": "stamped", "type": "stdio", "command": "echo", "autoStart": false}),
        )
        .unwrap();
    assert!(!created.is_error, "{}", created.text());
    let got = mcp
        .call("core_mcpserver_get", json!({"name": "stamped"}))
        .unwrap();
    assert_eq!(got.json().unwrap()["registeredBy"], USER);

    // Refresh rotates; presenting the old refresh token again revokes the whole family.
    let (status, rotated) = refresh(base, &client, &refresh1);
    assert_eq!(status, 200, "{rotated}");
    let access2 = rotated["access_token"].as_str().unwrap().to_owned();
    let refresh2 = rotated["refresh_token"].as_str().unwrap().to_owned();
    seen.add(&access2);
    seen.add(&refresh2);
    assert_ne!(refresh2, refresh1);
    assert_eq!(initialize_status(base, &access2).0, 200);
    let (status, answer) = refresh(base, &client, &refresh1);
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let (status, _) = refresh(base, &client, &refresh2);
    assert_eq!(
        status, 400,
        "the family is revoked: its current refresh token too"
    );
    assert_eq!(initialize_status(base, &access2).0, 401);
    assert_eq!(initialize_status(base, &access).0, 401);

    // A new sign-in works until the provider revokes it.
    let (verifier3, challenge3) = pkce();
    let code3 = sign_in(base, &client, redirect, &challenge3, &mut seen);
    let (status, tokens3) = redeem(base, &client, redirect, &code3, &verifier3);
    assert_eq!(status, 200);
    let access3 = tokens3["access_token"].as_str().unwrap().to_owned();
    seen.add(&access3);
    seen.add(tokens3["refresh_token"].as_str().unwrap());
    assert_eq!(initialize_status(base, &access3).0, 200);
    let revoked = http()
        .post(format!("{}/test/revoke-all", s.idp.issuer))
        .send()
        .unwrap();
    assert!(revoked.status().is_success());
    assert_eq!(
        initialize_status(base, &access3).0,
        401,
        "revoked at the provider"
    );

    // RFC 8693 exchange: muster issues nothing.
    let (status, answer) = post_form(
        &format!("{base}/oauth/token"),
        &[
            (
                "grant_type",
                "urn:ietf:params:oauth:grant-type:token-exchange",
            ),
            ("subject_token", &access2),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:access_token",
            ),
        ],
    );
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_grant"))
    );

    // No credential anywhere: log, events, tool output.
    let events = mcp_events(base, &s);
    let log = s.muster.log();
    seen.assert_absent_from(&[
        ("muster's log", &log),
        ("the events", &events),
        ("tool output", got.text()),
    ]);
    assert!(log.contains("signed in to muster"), "{log}");
    let _ = &s.dir;
}

/// Calls `tool` through `client` until it answers without an error (the server's own
/// connection must have found it protected first).
fn call_until_ok(client: &McpClient, tool: &str) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let answer = client.call(tool, json!({})).unwrap();
        if !answer.is_error {
            return answer.json().unwrap();
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{tool} never answered: {}",
            answer.text()
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn forwarding_servers_receive_the_callers_validated_token() {
    let s = setup_with(json!({}), true);
    let base = s.base.as_str();
    let mut seen = Seen::default();

    // A trusted issuer's JWT goes on byte-identical: the server sees its subject and actor.
    let agent = s
        .idp
        .mint(json!({"sub": "bob", "aud": base, "act": {"sub": "agent-1"}}));
    seen.add(&agent);
    let bob = client_with(base, &agent);
    assert_eq!(
        call_until_ok(&bob, "x_fwd_whoami"),
        json!({"iss": s.idp.minter, "sub": "bob", "act": "agent-1"})
    );
    let login = bob
        .call("core_auth_login", json!({"server": "fwd"}))
        .unwrap();
    assert!(
        login.text().starts_with("Successfully connected to 'fwd'!"),
        "{}",
        login.text()
    );
    let status = bob
        .request("resources/read", json!({"uri": "auth://status"}))
        .unwrap();
    let status: Value =
        serde_json::from_str(status["contents"][0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(
        status["servers"][0],
        json!({"name": "fwd", "status": "connected", "token_forwarding_enabled": true})
    );

    // A sign-in to muster forwards the provider's ID token of that sign-in.
    let redirect = "http://127.0.0.1:9/callback";
    let client = register(base, redirect);
    let (verifier, challenge) = pkce();
    let code = sign_in(base, &client, redirect, &challenge, &mut seen);
    let (status, tokens) = redeem(base, &client, redirect, &code, &verifier);
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    seen.add(&access);
    let alice = client_with(base, &access);
    assert_eq!(
        call_until_ok(&alice, "x_fwd_whoami"),
        json!({"iss": s.idp.issuer, "sub": USER, "act": null})
    );

    // A token the server refuses: no tools for that session, the reason in sign-in and status,
    // no retry storm with the same token.
    let refused = s.idp.mint(json!({"sub": "refused", "aud": base}));
    seen.add(&refused);
    let mallory = client_with(base, &refused);
    let answer = mallory.call("x_fwd_whoami", json!({})).unwrap();
    assert!(answer.is_error, "{}", answer.text());
    assert!(
        !mallory
            .reachable_tools()
            .unwrap()
            .contains(&"x_fwd_whoami".to_owned())
    );
    let login = mallory
        .call("core_auth_login", json!({"server": "fwd"}))
        .unwrap();
    assert!(login.is_error);
    assert!(
        login
            .text()
            .starts_with("Server 'fwd' refused your forwarded muster sign-in"),
        "{}",
        login.text()
    );
    let status = mallory
        .request("resources/read", json!({"uri": "auth://status"}))
        .unwrap();
    let status = status["contents"][0]["text"].as_str().unwrap().to_owned();
    assert!(status.contains("\"sso_attempt_failed\": true"), "{status}");

    let events = mcp_events(base, &s);
    assert!(
        events.contains("MCPServer fwd: ID token successfully forwarded for SSO authentication"),
        "{events}"
    );
    assert!(
        events.contains("MCPServer fwd: ID token forwarding failed"),
        "{events}"
    );
    seen.assert_absent_from(&[("muster's log", &s.muster.log()), ("the events", &events)]);
}

/// The event list as one text, read with a fresh trusted-issuer session.
fn mcp_events(base: &str, s: &Setup) -> String {
    let token = s.idp.mint(json!({"sub": "auditor", "aud": base}));
    let mcp = client_with(base, &token);
    let events = mcp.call("core_events", json!({})).unwrap();
    let list = mcp.call("core_mcpserver_list", json!({})).unwrap();
    format!("{}\n{}", events.text(), list.text())
}

fn forge_none(claims: &Value) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"none","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    format!("{header}.{payload}.")
}

#[test]
fn trusted_issuer_tokens_and_every_bad_one() {
    let s = setup(json!({ "trustedAudiences": ["https://portal.example.com"] }));
    let base = s.base.as_str();
    let now = chrono::Utc::now().timestamp();

    let good = s
        .idp
        .mint(json!({"sub": "bob", "aud": base, "act": {"sub": "agent-1"}}));
    assert_eq!(initialize_status(base, &good).0, 200);
    let portal = s
        .idp
        .mint(json!({"sub": "bob", "aud": "https://portal.example.com"}));
    assert_eq!(initialize_status(base, &portal).0, 200, "trustedAudiences");

    let other_audience = s
        .idp
        .mint(json!({"sub": "bob", "aud": "https://elsewhere.example.com"}));
    let expired = s
        .idp
        .mint(json!({"sub": "bob", "aud": base, "exp": now - 3600, "iat": now - 7200}));
    let not_yet = s
        .idp
        .mint(json!({"sub": "bob", "aud": base, "nbf": now + 3600}));
    let other_issuer = s
        .idp
        .mint(json!({"sub": "bob", "aud": base, "iss": "https://rogue.example.com"}));
    let mut parts: Vec<String> = good.split('.').map(str::to_owned).collect();
    parts[1] = URL_SAFE_NO_PAD.encode(
        json!({"sub": "mallory", "aud": base, "iss": s.idp.minter, "exp": now + 600}).to_string(),
    );
    let forged = parts.join(".");
    let none =
        forge_none(&json!({"sub": "mallory", "aud": base, "iss": s.idp.minter, "exp": now + 600}));
    for (what, token) in [
        ("another audience", other_audience.as_str()),
        ("expired", expired.as_str()),
        ("not yet valid", not_yet.as_str()),
        ("an untrusted issuer", other_issuer.as_str()),
        ("a forged signature", forged.as_str()),
        ("alg none", none.as_str()),
        ("garbage", "not-a-token-at-all"),
    ] {
        let (status, challenge) = initialize_status(base, token);
        assert_eq!(status, 401, "{what} must be refused");
        assert!(
            challenge.contains("error=\"invalid_token\""),
            "{what}: {challenge}"
        );
    }

    // Key rotation: a token signed with a new key is accepted once muster fetches it.
    http()
        .post(format!("{}/rotate", s.idp.minter))
        .send()
        .unwrap();
    let rotated = s.idp.mint(json!({"sub": "bob", "aud": base}));
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let status = initialize_status(base, &rotated).0;
        if status == 200 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the rotated key was never accepted"
        );
        std::thread::sleep(Duration::from_secs(1));
    }

    let log = s.muster.log();
    for token in [&good, &portal, &forged, &rotated] {
        assert!(!log.contains(token.as_str()), "a bearer is in muster's log");
    }
}

#[test]
fn failed_bearers_are_rate_limited() {
    let s = setup(json!({ "rateLimit": { "perMinute": 1, "burst": 2 } }));
    let base = s.base.as_str();
    let statuses: Vec<u16> = (0..6)
        .map(|_| initialize_status(base, "bad.bad.bad").0)
        .collect();
    assert_eq!(&statuses[..3], &[401, 401, 401], "{statuses:?}");
    assert_eq!(statuses[5], 429, "{statuses:?}");
    let (status, _) = post_form(
        &format!("{base}/oauth/token"),
        &[("grant_type", "refresh_token")],
    );
    assert_eq!(
        status, 429,
        "the sign-in endpoints share the address's attempts"
    );
}

#[test]
fn probes_and_metrics_answer_without_a_bearer_and_the_mcp_endpoints_do_not() {
    let s = setup(json!({}));
    let base = s.base.as_str();
    for path in ["/health", "/ready", "/metrics"] {
        let response = http().get(format!("{base}{path}")).send().unwrap();
        assert_eq!(response.status().as_u16(), 200, "{path} without a bearer");
        assert!(
            response.headers().get("www-authenticate").is_none(),
            "{path} challenges"
        );
    }
    let metrics = http()
        .get(format!("{base}/metrics"))
        .send()
        .unwrap()
        .text()
        .unwrap();
    assert!(metrics.contains("muster_sessions_active"), "{metrics}");

    let (status, challenge) = initialize_status(base, "");
    assert_eq!(status, 401);
    assert!(
        challenge.starts_with("Bearer resource_metadata="),
        "{challenge}"
    );
    let sse = http().get(format!("{base}/sse")).send().unwrap();
    assert_eq!(sse.status().as_u16(), 401, "/sse without a bearer");
    assert!(sse.headers().get("www-authenticate").is_some());
    let message = http()
        .post(format!("{base}/message?sessionId=x"))
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}))
        .send()
        .unwrap();
    assert_eq!(message.status().as_u16(), 401, "/message without a bearer");
    assert!(message.headers().get("www-authenticate").is_some());
}

#[test]
fn pages_of_allowed_origins_get_cors_headers_on_the_oauth_endpoints() {
    let s = setup(json!({"allowedOrigins": ["http://app.example:8080"]}));
    let base = s.base.as_str();
    let preflight = |origin: &str| {
        http()
            .request(reqwest::Method::OPTIONS, format!("{base}/oauth/token"))
            .header("origin", origin)
            .header("access-control-request-method", "POST")
            .header("access-control-request-headers", "content-type")
            .send()
            .unwrap()
    };
    let allowed = preflight("http://app.example:8080");
    assert!(allowed.status().is_success(), "{}", allowed.status());
    let headers = allowed.headers();
    assert_eq!(
        headers["access-control-allow-origin"],
        "http://app.example:8080"
    );
    let methods = headers["access-control-allow-methods"].to_str().unwrap();
    assert!(methods.contains("POST"), "{methods}");
    let allowed_headers = headers["access-control-allow-headers"].to_str().unwrap();
    assert!(
        allowed_headers.contains("content-type"),
        "{allowed_headers}"
    );
    assert!(headers.get("access-control-allow-credentials").is_none());

    // A document read from the page carries the header; another origin gets none.
    let metadata = http()
        .get(format!("{base}/.well-known/oauth-authorization-server"))
        .header("origin", "http://app.example:8080")
        .send()
        .unwrap();
    assert_eq!(metadata.status().as_u16(), 200);
    assert_eq!(
        metadata.headers()["access-control-allow-origin"],
        "http://app.example:8080"
    );
    for origin in ["http://evil.example", "http://app.example:8081"] {
        let other = preflight(origin);
        assert!(
            other.headers().get("access-control-allow-origin").is_none(),
            "{origin} was allowed"
        );
    }
}

const VALKEY_PASSWORD: &str = "valkey-password-81c3e7";

/// A `redis-server` of its own (Debian package `redis-server`) on a free port, with a
/// password and without persistence. Killed on drop.
struct Valkey {
    child: Child,
    port: u16,
}

impl Valkey {
    fn start() -> Self {
        let port = free_port();
        let mut child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--requirepass", VALKEY_PASSWORD])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server (Debian package redis-server) must be installed");
        let listening = (0..100).any(|_| {
            let up = std::net::TcpStream::connect(("127.0.0.1", port)).is_ok();
            if !up {
                std::thread::sleep(Duration::from_millis(50));
            }
            up
        });
        if !listening {
            let _ = child.kill();
            let _ = child.wait();
            panic!("redis-server did not listen on {port}");
        }
        Self { child, port }
    }

    /// `redis-cli` with the password, its output.
    fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args([
                "-p",
                &self.port.to_string(),
                "-a",
                VALKEY_PASSWORD,
                "--no-auth-warning",
            ])
            .args(args)
            .output()
            .expect("redis-cli (Debian package redis-tools)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Every key under `prefix` with its value, one `key=value` line each.
    fn dump(&self, prefix: &str) -> String {
        self.cli(&["--scan", "--pattern", &format!("{prefix}*")])
            .lines()
            .filter(|k| !k.is_empty())
            .map(|key| {
                let kind = self.cli(&["TYPE", key]);
                let value = match kind.trim() {
                    "string" => self.cli(&["GET", key]),
                    _ => self.cli(&["SMEMBERS", key]),
                };
                format!("{key}={}", value.trim())
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Drop for Valkey {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A second muster with the OAuth settings and MCP servers of `s` (the same `baseUrl`, as
/// replicas behind one address have) plus `extra`, on a port of its own. Its base URL for
/// requests.
fn replica(s: &Setup, extra: &Value) -> (ConfigDir, MusterInstance, String) {
    let text = std::fs::read_to_string(s.dir.path().join("config.yaml")).unwrap();
    let oauth = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("oauth: "))
        .expect("the setup writes the OAuth settings on one line");
    let mut oauth: Value = serde_json::from_str(oauth).unwrap();
    if let (Some(server), Some(e)) = (oauth["server"].as_object_mut(), extra.as_object()) {
        server.extend(e.clone());
    }
    let mut config = MusterConfig::new()
        .aggregator_setting(&format!("oauth: {oauth}"))
        .ready_on_health();
    if let Ok(servers) = std::fs::read_dir(s.dir.path().join("mcpservers")) {
        for file in servers {
            let path = file.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            let text = std::fs::read_to_string(&path).unwrap();
            config = config.file(format!("mcpservers/{name}"), text);
        }
    }
    let dir = config.write().unwrap();
    let base = format!("http://127.0.0.1:{}", dir.port());
    let muster = dir.start_with_args(&["--debug"]).unwrap();
    (dir, muster, base)
}

#[test]
fn valkey_storage_is_shared_by_replicas_sealed_and_survives_restarts() {
    let valkey = Valkey::start();
    let key = URL_SAFE_NO_PAD.encode(rand_bytes());
    let storage = json!({
        "storage": {"type": "valkey", "valkey": {
            "url": format!("127.0.0.1:{}", valkey.port), "password": VALKEY_PASSWORD,
            "keyPrefix": "team-a:",
        }},
        "encryptionKey": key,
    });
    let mut s = setup(storage.clone());
    let base = s.base.clone();
    let mut seen = Seen::default();
    seen.add(VALKEY_PASSWORD);
    seen.add(&key);
    seen.add(CLIENT_SECRET);

    let redirect = "http://127.0.0.1:9/callback";
    let client = register(&base, redirect);
    let (verifier, challenge) = pkce();
    let code = sign_in(&base, &client, redirect, &challenge, &mut seen);
    let (status, tokens) = redeem(&base, &client, redirect, &code, &verifier);
    assert_eq!(status, 200, "{tokens}");
    let access = tokens["access_token"].as_str().unwrap().to_owned();
    let refresh1 = tokens["refresh_token"].as_str().unwrap().to_owned();
    seen.add(&access);
    seen.add(&refresh1);

    // Another replica accepts the token, and refreshes it.
    let (_b_dir, mut b, b_base) = replica(&s, &json!({}));
    assert_eq!(initialize_status(&b_base, &access).0, 200);
    let (status, tokens) = refresh(&b_base, &client, &refresh1);
    assert_eq!(status, 200, "{tokens}");
    let access2 = tokens["access_token"].as_str().unwrap().to_owned();
    seen.add(&access2);
    seen.add(tokens["refresh_token"].as_str().unwrap());
    assert_eq!(initialize_status(&base, &access2).0, 200);

    // The rotated refresh token, replayed at the first replica, ends the session on both.
    let (status, answer) = refresh(&base, &client, &refresh1);
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    assert_eq!(initialize_status(&b_base, &access2).0, 401);
    assert_eq!(initialize_status(&base, &access2).0, 401);

    // A new sign-in outlives a restart of the replica that issued it.
    let (verifier, challenge) = pkce();
    let code = sign_in(&base, &client, redirect, &challenge, &mut seen);
    let (status, tokens) = redeem(&base, &client, redirect, &code, &verifier);
    assert_eq!(status, 200, "{tokens}");
    let access3 = tokens["access_token"].as_str().unwrap().to_owned();
    seen.add(&access3);
    seen.add(tokens["refresh_token"].as_str().unwrap());
    let first_log = s.muster.log();
    s.muster.kill().unwrap();
    s.muster = s.dir.start_with_args(&["--debug"]).unwrap();
    assert_eq!(initialize_status(&base, &access3).0, 200);

    // What Valkey holds: digests and sealed values under the prefix, nothing readable.
    let dump = valkey.dump("team-a:");
    assert!(dump.contains("team-a:oauth:family:"), "{dump}");
    assert!(dump.contains("team-a:oauth:access:"), "{dump}");
    assert!(
        !dump.contains(USER),
        "the user's identity is sealed: {dump}"
    );
    assert!(
        !dump.contains("redirect_uris"),
        "clients are sealed: {dump}"
    );
    seen.assert_absent_from(&[("Valkey", &dump)]);

    // A replica with another key does not read the sessions: the bearer is refused.
    let other_key = URL_SAFE_NO_PAD.encode(rand_bytes());
    let (_c_dir, mut c, c_base) = replica(&s, &json!({"encryptionKey": other_key}));
    assert_eq!(initialize_status(&c_base, &access3).0, 401);
    c.kill().unwrap();

    // Valkey down: 503, not a 401 that would make the client drop its token.
    drop(valkey);
    assert_eq!(initialize_status(&base, &access3).0, 503);
    let (status, answer) = refresh(&b_base, &client, "any-refresh-token");
    assert_eq!(
        (status, answer["error"].as_str()),
        (503, Some("temporarily_unavailable")),
        "{answer}"
    );
    let b_log = b.log();
    b.kill().unwrap();
    seen.assert_absent_from(&[
        ("the first replica's log", &first_log),
        ("the restarted replica's log", &s.muster.log()),
        ("the second replica's log", &b_log),
        ("the refusal", &answer.to_string()),
    ]);
}

/// The hex SHA-256 of `text`: how the sign-in store names sessions, issuers and states.
fn sha(text: &str) -> String {
    sha2::Sha256::digest(text.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The stores of muster's sign-ins to protected MCP servers, as an OAuth server with Valkey
/// storage on `valkey` under `prefix` (sealed with `key`, when given) hands them out. Each
/// call is another replica, with a connection of its own.
fn sign_in_stores(valkey: &Valkey, prefix: &str, key: Option<&str>) -> SignInStores {
    let mut config = json!({
        "enabled": true,
        "baseUrl": "https://muster.example.com",
        "dex": {"issuerUrl": "https://dex.example.com", "clientId": CLIENT_ID},
        "storage": {"type": "valkey", "valkey": {
            "url": format!("127.0.0.1:{}", valkey.port), "password": VALKEY_PASSWORD,
            "keyPrefix": prefix,
        }},
    });
    if let Some(key) = key {
        config["encryptionKey"] = json!(key);
    }
    let config: OAuthServerConfig = serde_json::from_value(config).unwrap();
    OAuthServer::new(&config, &ExtraRoots::default())
        .unwrap()
        .shared_sign_in_stores()
        .expect("Valkey storage keeps the sign-ins to protected servers")
}

/// A grant at `issuer` with these tokens, for the sign-in store tests.
fn backend_grant(issuer: &str, access: &str, refresh: Option<&str>) -> Grant {
    Grant {
        issuer: issuer.to_owned(),
        access_token: SecretString::from(access.to_owned()),
        refresh_token: refresh.map(|r| SecretString::from(r.to_owned())),
        scope: Some("mcp:read".to_owned()),
        expires_at: Some(chrono::Utc::now() + chrono::Duration::hours(1)),
        token_endpoint: format!("{issuer}/token"),
        client_id: "muster-test".to_owned(),
        obtained_at: chrono::Utc::now(),
    }
}

/// A sign-in of `session` started now, valid for `ttl`.
fn backend_pending(session: &SessionKey, ttl: chrono::Duration) -> PendingSignIn {
    PendingSignIn {
        session: session.clone(),
        grant_owner: None,
        server: "protected".to_owned(),
        issuer: "https://login.example.com".to_owned(),
        expected_issuer: "https://login.example.com".to_owned(),
        authorization_url: "https://login.example.com/authorize?state=x".to_owned(),
        token_endpoint: "https://login.example.com/token".to_owned(),
        client_id: "muster-test".to_owned(),
        redirect_uri: "https://muster.example.com/oauth/proxy/callback".to_owned(),
        code_verifier: SecretString::from("pkce-verifier-secret-".repeat(3)),
        expires_at: chrono::Utc::now() + ttl,
    }
}

/// The remaining lifetime of `key`, in milliseconds.
fn pttl(valkey: &Valkey, key: &str) -> i64 {
    valkey.cli(&["PTTL", key]).trim().parse().unwrap()
}

#[tokio::test]
async fn backend_sign_ins_in_valkey_are_shared_sealed_bounded_and_fail_when_it_is_down() {
    const X: &str = "https://login.example.com";
    const Y: &str = "https://github.example.com";
    const THIRTY_DAYS_MS: i64 = 30 * 24 * 3600 * 1000;
    let valkey = Valkey::start();
    let key = URL_SAFE_NO_PAD.encode(rand_bytes());
    let a = sign_in_stores(&valkey, "team-b:", Some(&key));
    let b = sign_in_stores(&valkey, "team-b:", Some(&key));
    let memory: OAuthServerConfig = serde_json::from_value(json!({
        "enabled": true, "baseUrl": "https://muster.example.com",
        "dex": {"issuerUrl": "https://dex.example.com", "clientId": CLIENT_ID},
    }))
    .unwrap();
    assert!(
        OAuthServer::new(&memory, &ExtraRoots::default())
            .unwrap()
            .shared_sign_in_stores()
            .is_none(),
        "memory storage keeps sign-ins in each process"
    );

    // Grants per (session, issuer); what one replica stores, the other reads.
    let alice = SessionKey::new("family-alice-6f1d0c");
    let bob = SessionKey::new("family-bob-93aa41");
    a.grants
        .put_grant(
            &alice,
            backend_grant(X, "access-token-alice-1", Some("refresh-token-alice-1")),
        )
        .await
        .unwrap();
    let got = b.grants.grant(&alice, X).await.unwrap().expect("shared");
    assert_eq!(got.access_token.expose_secret(), "access-token-alice-1");
    assert_eq!(
        got.refresh_token.as_ref().map(|t| t.expose_secret()),
        Some("refresh-token-alice-1")
    );
    assert_eq!(
        (got.scope.as_deref(), got.client_id.as_str()),
        (Some("mcp:read"), "muster-test")
    );
    assert_eq!(got.token_endpoint, format!("{X}/token"));
    assert!(b.grants.grant(&bob, X).await.unwrap().is_none());
    assert!(b.grants.grant(&alice, Y).await.unwrap().is_none());
    b.grants
        .put_grant(&alice, backend_grant(X, "access-token-alice-2", None))
        .await
        .unwrap();
    let replaced = a.grants.grant(&alice, X).await.unwrap().unwrap();
    assert_eq!(
        replaced.access_token.expose_secret(),
        "access-token-alice-2"
    );
    assert!(replaced.refresh_token.is_none());

    // Digests under the prefix, sealed values: no token, session, issuer or scope readable.
    let grants_of_alice = format!("team-b:auth:grant:{}:", sha(alice.as_str()));
    let grant_x = format!("{grants_of_alice}{}", sha(X));
    let set_of_alice = format!("team-b:auth:session:{}", sha(alice.as_str()));
    let dump = valkey.dump("team-b:");
    assert!(dump.contains(&format!("{grant_x}=v1.")), "{dump}");
    assert!(
        dump.contains(&format!("{set_of_alice}={}", sha(X))),
        "{dump}"
    );
    for plain in [
        "access-token-alice",
        "refresh-token",
        alice.as_str(),
        X,
        "mcp:read",
    ] {
        assert!(!dump.contains(plain), "{plain} readable in Valkey: {dump}");
    }

    // Grants live 30 days without use; reading any grant of a session renews all of them.
    let fresh = pttl(&valkey, &grant_x);
    assert!(
        fresh > THIRTY_DAYS_MS - 60_000 && fresh <= THIRTY_DAYS_MS,
        "{fresh}"
    );
    a.grants
        .put_grant(&alice, backend_grant(Y, "access-token-alice-y", None))
        .await
        .unwrap();
    let grant_y = format!("{grants_of_alice}{}", sha(Y));
    for k in [&grant_x, &grant_y, &set_of_alice] {
        valkey.cli(&["PEXPIRE", k, "60000"]);
    }
    assert!(b.grants.grant(&alice, X).await.unwrap().is_some());
    for k in [&grant_x, &grant_y, &set_of_alice] {
        let left = pttl(&valkey, k);
        assert!(left > THIRTY_DAYS_MS - 60_000, "{k} not renewed: {left}");
    }
    // An idle grant expires.
    valkey.cli(&["PEXPIRE", &grant_x, "1"]);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(a.grants.grant(&alice, X).await.unwrap().is_none());
    assert!(a.grants.grant(&alice, Y).await.unwrap().is_some());

    // A pending sign-in: readable by every replica until its callback takes it, once.
    a.pending
        .put_pending(
            "state-value-one",
            backend_pending(&alice, chrono::Duration::minutes(10)),
        )
        .await
        .unwrap();
    let pending_key = format!("team-b:auth:pending:{}", sha("state-value-one"));
    let left = pttl(&valkey, &pending_key);
    assert!(left > 590_000 && left <= 600_000, "{left}");
    let dump = valkey.dump("team-b:auth:pending:");
    assert!(dump.contains(&format!("{pending_key}=v1.")), "{dump}");
    assert!(!dump.contains("pkce-verifier-secret"), "{dump}");
    assert!(!dump.contains("state-value-one"), "{dump}");
    let seen = b.pending.pending("state-value-one").await.unwrap().unwrap();
    assert_eq!(
        (seen.session.as_str(), seen.server.as_str()),
        (alice.as_str(), "protected")
    );
    assert!(
        b.pending
            .pending("state-value-one")
            .await
            .unwrap()
            .is_some()
    );
    let (one, two) = tokio::join!(
        a.pending.take_pending("state-value-one"),
        b.pending.take_pending("state-value-one")
    );
    let (one, two) = (one.unwrap(), two.unwrap());
    assert!(one.is_some() != two.is_some(), "taken exactly once");
    let taken = one.or(two).unwrap();
    assert_eq!(
        taken.code_verifier.expose_secret(),
        "pkce-verifier-secret-".repeat(3)
    );
    assert_eq!(
        taken.redirect_uri,
        "https://muster.example.com/oauth/proxy/callback"
    );
    assert!(
        a.pending
            .pending("state-value-one")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        b.pending
            .take_pending("state-value-one")
            .await
            .unwrap()
            .is_none()
    );
    // Pending sign-ins expire with their `expires_at`.
    a.pending
        .put_pending(
            "state-short",
            backend_pending(&alice, chrono::Duration::seconds(1)),
        )
        .await
        .unwrap();
    a.pending
        .put_pending(
            "state-past",
            backend_pending(&alice, chrono::Duration::seconds(-1)),
        )
        .await
        .unwrap();
    assert!(b.pending.pending("state-short").await.unwrap().is_some());
    assert!(b.pending.pending("state-past").await.unwrap().is_none());
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert!(
        b.pending
            .take_pending("state-short")
            .await
            .unwrap()
            .is_none()
    );

    // At most 64 grants per session, one per issuer, across replicas.
    let carol = SessionKey::new("family-carol-2b7e55");
    let issuer = |i: usize| format!("https://idp-{i}.example.com");
    for i in 0..64 {
        let store = if i % 2 == 0 { &a } else { &b };
        store
            .grants
            .put_grant(&carol, backend_grant(&issuer(i), "t", None))
            .await
            .unwrap();
    }
    let full = b
        .grants
        .put_grant(&carol, backend_grant(&issuer(64), "t", None))
        .await
        .unwrap_err();
    assert!(matches!(full, AuthStoreError::Full(_)), "{full}");
    assert_eq!(
        full.to_string(),
        "sign-in store full: a session holds at most 64 grants"
    );
    a.grants
        .put_grant(&carol, backend_grant(&issuer(0), "t2", None))
        .await
        .expect("replacing a grant needs no room");
    assert!(b.grants.remove_grant(&carol, &issuer(0)).await.unwrap());
    assert!(!a.grants.remove_grant(&carol, &issuer(0)).await.unwrap());
    a.grants
        .put_grant(&carol, backend_grant(&issuer(64), "t", None))
        .await
        .expect("room again");
    // Signing out of muster drops every grant of the session, and nothing else.
    assert_eq!(b.grants.remove_session(&carol).await.unwrap(), 64);
    assert_eq!(a.grants.remove_session(&carol).await.unwrap(), 0);
    assert!(a.grants.grant(&carol, &issuer(5)).await.unwrap().is_none());
    assert!(!valkey.dump("team-b:").contains(&sha(carol.as_str())));
    assert!(a.grants.grant(&alice, Y).await.unwrap().is_some());

    // Another key reads nothing; no key is an error naming the setting.
    let other = sign_in_stores(&valkey, "team-b:", Some(&URL_SAFE_NO_PAD.encode([7u8; 32])));
    assert!(other.grants.grant(&alice, Y).await.unwrap().is_none());
    let unsealed = sign_in_stores(&valkey, "team-b:", None);
    let err = unsealed.grants.grant(&alice, Y).await.unwrap_err();
    assert!(
        matches!(err, AuthStoreError::Unavailable(_)) && err.to_string().contains("encryptionKey"),
        "{err}"
    );

    // Valkey down: every operation says so, naming the address and not the password.
    let port = valkey.port;
    drop(valkey);
    let errors = [
        a.grants.grant(&alice, Y).await.err(),
        a.grants
            .put_grant(&alice, backend_grant(X, "t", None))
            .await
            .err(),
        a.grants.remove_grant(&alice, Y).await.err(),
        a.grants.remove_session(&alice).await.err(),
        b.pending
            .put_pending("s", backend_pending(&alice, chrono::Duration::minutes(1)))
            .await
            .err(),
        b.pending.pending("s").await.err(),
        b.pending.take_pending("s").await.err(),
    ];
    for err in errors {
        let err = err.expect("an error while Valkey is down");
        let text = err.to_string();
        assert!(matches!(err, AuthStoreError::Unavailable(_)), "{text}");
        assert!(
            text.starts_with(&format!(
                "sign-in store unavailable: Valkey at 127.0.0.1:{port}"
            )),
            "{text}"
        );
        assert!(!text.contains(VALKEY_PASSWORD), "{text}");
    }
}

/// The client muster signs in as at the protected server's provider.
const PROTECTED_CLIENT: &str = "muster-test";

/// Starts `idp.mjs` with muster's proxy callback `redirect_uri`; every token its MCP server
/// accepts is appended to `tokens`.
fn start_protected(
    redirect_uri: &str,
    tokens: &std::path::Path,
) -> muster_tests::oidc::ProtectedIdp {
    muster_tests::oidc::ProtectedIdp::start(&muster_tests::oidc::ProtectedIdpOptions {
        client_id: PROTECTED_CLIENT,
        redirect_uri,
        user: USER,
        // Longer than muster's refresh margin: no refresh races between the replicas.
        access_token_ttl: 3600,
        tokens_file: tokens,
        extra: &[],
    })
    .unwrap()
}

/// The state of `server` in `client`'s `core_mcpserver_list`.
fn state_of(client: &McpClient, server: &str) -> Value {
    let list = client
        .call("core_mcpserver_list", json!({}))
        .unwrap()
        .json()
        .unwrap();
    list["mcpServers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == server)
        .map(|s| s["state"].clone())
        .unwrap_or(Value::Null)
}

/// Waits until `check` holds, for 30 seconds at most.
fn wait_for(what: &str, check: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while !check() {
        assert!(tokio::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn backend_sign_ins_are_shared_by_replicas_through_valkey() {
    // The replicas sit behind one public address (no one listens there: the test plays the
    // load balancer and picks the replica of each request).
    let public = format!("http://127.0.0.1:{}", free_port());
    let proxy_callback = format!("{public}/oauth/proxy/callback");
    let tokens = tempfile::NamedTempFile::new().unwrap();
    let protected = start_protected(&proxy_callback, tokens.path());
    let valkey = Valkey::start();
    let key = URL_SAFE_NO_PAD.encode(rand_bytes());
    let storage = json!({
        "storage": {"type": "valkey", "valkey": {
            "url": format!("127.0.0.1:{}", valkey.port), "password": VALKEY_PASSWORD,
            "keyPrefix": "team-c:",
        }},
        "encryptionKey": key,
    });
    let client_settings = json!({"mcpClient": {
        "enabled": true, "clientId": PROTECTED_CLIENT, "publicUrl": public,
    }});
    let server = (
        "protected",
        json!({"type": "streamable-http", "url": protected.mcp, "autoStart": true}),
    );
    let s = setup_full(storage, false, &client_settings, &[server]);
    let base = s.base.clone();
    let (_b_dir, b, b_base) = replica(&s, &json!({}));
    let mut seen = Seen::default();
    seen.add(VALKEY_PASSWORD);
    seen.add(&key);
    seen.add(CLIENT_SECRET);

    // alice signs in to muster (at replica A); bob comes with a trusted issuer's token.
    let redirect = "http://127.0.0.1:9/callback";
    let client = register(&base, redirect);
    let (verifier, challenge) = pkce();
    let code = sign_in(&base, &client, redirect, &challenge, &mut seen);
    let (status, signed_in) = redeem(&base, &client, redirect, &code, &verifier);
    assert_eq!(status, 200, "{signed_in}");
    let alice_token = signed_in["access_token"].as_str().unwrap().to_owned();
    seen.add(&alice_token);
    let alice_refresh = signed_in["refresh_token"].as_str().unwrap().to_owned();
    seen.add(&alice_refresh);
    let bob_token = s.idp.mint(json!({"sub": "bob", "aud": base}));
    seen.add(&bob_token);
    let alice_a = client_with(&base, &alice_token);
    let alice_b = client_with(&b_base, &alice_token);
    let bob_a = client_with(&base, &bob_token);
    let bob_b = client_with(&b_base, &bob_token);
    for (replica, client) in [("A", &alice_a), ("B", &alice_b)] {
        wait_for(
            &format!("the server is never Auth Required at {replica}"),
            || state_of(client, "protected") == "Auth Required",
        );
    }

    // alice starts the sign-in at A; the browser's requests reach B.
    let login = alice_a
        .call("core_auth_login", json!({"server": "protected"}))
        .unwrap();
    assert!(
        login.text().starts_with("Authentication Required"),
        "{}",
        login.text()
    );
    let auth_url = login.raw["structuredContent"]["authUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        auth_url.starts_with(&format!("{public}/oauth/proxy/start?state=")),
        "{auth_url}"
    );
    let mut browser = Browser::new();
    let mut url = auth_url.replace(&public, &b_base);
    for _ in 0..12 {
        let response = browser.get(&url, &mut seen);
        assert!(
            response.status().is_redirection(),
            "{url}: {}",
            response.status()
        );
        url = location(&response, &url);
        if url.starts_with(&proxy_callback) {
            break;
        }
    }
    assert!(url.starts_with(&proxy_callback), "{url}");
    let answer = query(&url);
    seen.add(&answer["code"]);
    seen.add(&answer["state"]);
    let done = http().get(url.replace(&public, &b_base)).send().unwrap();
    assert_eq!(done.status().as_u16(), 200);
    assert!(done.text().unwrap().contains("Authentication successful"));
    // The state was taken at B: A refuses it.
    let replayed = http().get(url.replace(&public, &base)).send().unwrap();
    assert_eq!(replayed.status().as_u16(), 400);

    // B connected alice's session when the sign-in completed; A connects it on one of her
    // next requests, with the grant B filed, without core_auth_login or a browser.
    let whoami = "x_protected_whoami".to_owned();
    wait_for("the session's tool never appeared at B", || {
        alice_b.reachable_tools().unwrap().contains(&whoami)
    });
    let at_b = alice_b.call("x_protected_whoami", json!({})).unwrap();
    assert!(!at_b.is_error, "{}", at_b.text());
    assert_eq!(at_b.json().unwrap()["sub"], USER);
    wait_for("the session's tool never appeared at A", || {
        alice_a.reachable_tools().unwrap().contains(&whoami)
    });
    let again = alice_a
        .call("core_auth_login", json!({"server": "protected"}))
        .unwrap();
    assert_eq!(again.text(), "Server 'protected' is already authenticated.");
    let at_a = alice_a.call("x_protected_whoami", json!({})).unwrap();
    assert!(!at_a.is_error, "{}", at_a.text());
    assert_eq!(at_a.json().unwrap()["sub"], USER);
    assert!(alice_a.reachable_tools().unwrap().contains(&whoami));
    let at_b = alice_b.call("x_protected_whoami", json!({})).unwrap();
    assert!(!at_b.is_error, "{}", at_b.text());

    // bob, signed in to muster too, is signed in to the protected server at neither.
    for (replica, bob) in [("A", &bob_a), ("B", &bob_b)] {
        assert!(
            !bob.reachable_tools().unwrap().contains(&whoami),
            "bob sees the tool at {replica}"
        );
        let refused = bob.call("x_protected_whoami", json!({})).unwrap();
        assert!(refused.is_error, "{replica}: {}", refused.text());
        let login = bob
            .call("core_auth_login", json!({"server": "protected"}))
            .unwrap();
        assert!(
            login.text().starts_with("Authentication Required"),
            "{replica}: {}",
            login.text()
        );
    }

    // Valkey holds alice's grant under digests, sealed; no token, code or state anywhere.
    let dump = valkey.dump("team-c:");
    assert!(dump.contains("team-c:auth:grant:"), "{dump}");
    assert!(dump.contains("team-c:auth:session:"), "{dump}");
    assert!(
        !dump.contains(&protected.issuer),
        "grants are sealed: {dump}"
    );

    // alice signs out of muster at B: her sign-ins to protected servers end with it, for
    // every replica.
    let (status, _) = post_form(
        &format!("{b_base}/oauth/revoke"),
        &[("token", &alice_refresh), ("client_id", &client)],
    );
    assert_eq!(status, 200);
    wait_for("alice's grant outlived her sign-in to muster", || {
        !valkey.dump("team-c:").contains("team-c:auth:grant:")
    });
    assert_eq!(
        alice_a.reachable_tools().ok(),
        None,
        "A still accepts alice's token"
    );
    let accepted = std::fs::read_to_string(tokens.path()).unwrap();
    assert!(
        accepted.lines().filter(|l| !l.is_empty()).count() >= 2,
        "{accepted}"
    );
    for token in accepted.lines() {
        seen.add(token);
    }
    let (a_log, b_log) = (s.muster.log(), b.log());
    for log in [&a_log, &b_log] {
        assert!(
            log.contains(
                "sign-ins to protected MCP servers are kept in the OAuth server's Valkey storage"
            ),
            "{log}"
        );
    }
    assert!(b_log.contains("sign-in completed"), "{b_log}");
    seen.assert_absent_from(&[
        ("Valkey", &dump),
        ("replica A's log", &a_log),
        ("replica B's log", &b_log),
    ]);
}

/// The provider's authorization URL muster sends a browser to for a new sign-in of `client`.
fn provider_authorization_url(base: &str, client: &str, redirect: &str) -> String {
    let (_, challenge) = pkce();
    let authorize = authorize_url(base, client, redirect, "s", &challenge);
    let response = http().get(&authorize).send().unwrap();
    assert_eq!(response.status().as_u16(), 302);
    location(&response, &authorize)
}

#[test]
fn sign_in_asks_the_provider_for_the_audiences_forwarding_servers_require() {
    let s = setup(json!({}));
    let base = s.base.as_str();
    let redirect = "http://127.0.0.1:9/callback";
    let client = register(base, redirect);
    let own = "openid profile email groups offline_access";
    let scope = |url: &str| query(url)["scope"].clone();
    assert_eq!(
        scope(&provider_authorization_url(base, &client, redirect)),
        own
    );

    // A server that receives the caller's ID token and needs two audiences in it.
    let server = |name: &str, auth: Value| {
        muster_tests::mcp_server_document(
            name,
            json!({"type": "streamable-http", "url": "http://127.0.0.1:9/mcp", "auth": auth}),
        )
    };
    let servers = s.dir.path().join("mcpservers");
    std::fs::create_dir_all(&servers).unwrap();
    std::fs::write(
        servers.join("k8s.yaml"),
        server(
            "k8s",
            json!({"forwardToken": true, "requiredAudiences": ["kubernetes", "dex-k8s-authenticator"]}),
        ),
    )
    .unwrap();
    let wanted = format!(
        "{own} audience:server:client_id:dex-k8s-authenticator audience:server:client_id:kubernetes"
    );
    // The definition is picked up within moments of being written (or removed).
    let scope_becomes = |expected: &str| {
        let mut asked = String::new();
        for _ in 0..100 {
            asked = scope(&provider_authorization_url(base, &client, redirect));
            if asked == expected {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert_eq!(asked, expected);
    };
    scope_becomes(&wanted);

    // The provider signs the person in with the extra scopes asked for.
    let mut seen = Seen::default();
    let (verifier, challenge) = pkce();
    let code = sign_in(base, &client, redirect, &challenge, &mut seen);
    let (status, tokens) = redeem(base, &client, redirect, &code, &verifier);
    assert_eq!(status, 200, "{tokens}");

    // Once the server is gone, sign-ins ask for muster's own scopes again.
    std::fs::remove_file(servers.join("k8s.yaml")).unwrap();
    scope_becomes(own);
}

/// Runs the `muster` CLI with `HOME` at `home`; its exit status and both outputs.
fn cli(home: &std::path::Path, args: &[&str]) -> (bool, String, String) {
    let out = Command::new(muster_tests::muster_bin().unwrap())
        .args(args)
        .env("HOME", home)
        .env_remove("MUSTER_ENDPOINT")
        .env_remove("MUSTER_CONTEXT")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The one stored sign-in under `home`.
fn stored_sign_in(home: &std::path::Path) -> (std::path::PathBuf, Value) {
    let dir = home.join(".config/muster/tokens");
    let files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let text = std::fs::read_to_string(&files[0]).unwrap();
    (files[0].clone(), serde_json::from_str(&text).unwrap())
}

/// The browser part of a native sign-in that starts at muster's authorization `url`: through
/// muster and the provider, back to the loopback listener of the CLI or bridge.
fn complete_native_sign_in(s: &Setup, url: &str, seen: &mut Seen) {
    let mut browser = Browser::new();
    let mut next = url.to_owned();
    for _ in 0..25 {
        if url::Url::parse(&next).unwrap().path() == "/callback" {
            break;
        }
        let response = browser.get(&next, seen);
        assert!(
            response.status().is_redirection(),
            "{next}: {}",
            response.status()
        );
        next = location(&response, &next);
    }
    let answer = query(&next);
    assert_eq!(answer["iss"], s.base);
    seen.add(&answer["code"]);
    let page = http().get(&next).send().unwrap();
    assert_eq!(page.status().as_u16(), 200);
}

/// `muster auth login` with `HOME` at `home`, the browser step scripted; what it printed.
fn cli_sign_in(s: &Setup, home: &std::path::Path, seen: &mut Seen) -> String {
    use std::io::BufRead as _;

    let endpoint = format!("{}/mcp", s.base);
    let mut login = Command::new(muster_tests::muster_bin().unwrap())
        .args(["auth", "login", "--no-browser", "--callback-port", "0"])
        .args(["--endpoint", &endpoint])
        .env("HOME", home)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(login.stderr.take().unwrap());
    let mut printed = String::new();
    let url = loop {
        let mut line = String::new();
        assert!(stderr.read_line(&mut line).unwrap() > 0, "{printed}");
        printed.push_str(&line);
        if let Some(url) = line
            .trim()
            .strip_prefix(&format!("{}/oauth/authorize?", s.base))
        {
            break format!("{}/oauth/authorize?{url}", s.base);
        }
    };
    complete_native_sign_in(s, &url, seen);
    assert!(login.wait().unwrap().success(), "{printed}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(rest.contains("Signed in to muster"), "{rest}");
    printed + &rest
}

#[test]
fn the_cli_signs_in_refreshes_and_signs_out() {
    use std::os::unix::fs::PermissionsExt as _;

    let s = setup(json!({}));
    let home = tempfile::tempdir().unwrap();
    let endpoint = format!("{}/mcp", s.base);
    let target = ["--endpoint", endpoint.as_str()];
    let mut seen = Seen::default();

    // Signed out: client commands say what to run.
    let (ok, _, err) = cli(home.path(), &[&["list", "tool"][..], &target].concat());
    assert!(!ok);
    assert!(err.contains("run: muster auth login"), "{err}");

    // Sign in: the CLI prints the URL; the browser goes through muster and the provider
    // and comes back to the CLI's loopback listener.
    let printed = cli_sign_in(&s, home.path(), &mut seen);

    // The tokens are private to the user.
    let (file, record) = stored_sign_in(home.path());
    let mode = |p: &std::path::Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&file), 0o600);
    assert_eq!(mode(file.parent().unwrap()), 0o700);
    let access = record["accessToken"].as_str().unwrap().to_owned();
    let refresh_token = record["refreshToken"].as_str().unwrap().to_owned();
    seen.add(&access);
    seen.add(&refresh_token);

    // Client commands now carry the bearer.
    let (ok, out, err) = cli(home.path(), &[&["list", "tool"][..], &target].concat());
    assert!(ok, "{err}");
    let (ok, status, _) = cli(home.path(), &[&["auth", "status"][..], &target].concat());
    assert!(ok && status.contains("signed in: yes"), "{status}");

    // An access token about to expire is refreshed (the refresh token rotates).
    let mut expired = record.clone();
    expired["expiresAt"] = json!("2000-01-01T00:00:00Z");
    std::fs::write(&file, expired.to_string()).unwrap();
    let (ok, _, err) = cli(home.path(), &[&["list", "tool"][..], &target].concat());
    assert!(ok, "{err}");
    let (_, refreshed) = stored_sign_in(home.path());
    let new_refresh = refreshed["refreshToken"].as_str().unwrap().to_owned();
    assert_ne!(refreshed["accessToken"].as_str().unwrap(), access);
    assert_ne!(new_refresh, refresh_token);
    seen.add(refreshed["accessToken"].as_str().unwrap());
    seen.add(&new_refresh);
    assert_eq!(mode(&file), 0o600);

    // Sign out: the refresh token is revoked at muster and the file is gone.
    let (ok, _, err) = cli(home.path(), &[&["auth", "logout"][..], &target].concat());
    assert!(ok && err.contains("Signed out"), "{err}");
    assert!(!file.exists());
    let client_id = refreshed["clientId"].as_str().unwrap();
    let (code, _) = refresh(&s.base, client_id, &new_refresh);
    assert_eq!(code, 400, "a revoked refresh token is refused");
    let (ok, _, err) = cli(home.path(), &[&["list", "tool"][..], &target].concat());
    assert!(!ok && err.contains("muster auth login"), "{err}");

    seen.assert_absent_from(&[
        ("the CLI's output", &format!("{printed}{out}{status}{err}")),
        ("muster's log", &s.muster.log()),
    ]);
    drop(s.idp);
}

/// The `_meta` key of the auth notice on tool results.
const AUTH_META: &str = "giantswarm.io/auth_required";

/// An IDE on the other end of `muster agent --mcp-server`: JSON-RPC lines to its stdin, its
/// stdout lines back through a channel; its stderr is kept.
struct Ide {
    child: Child,
    stdin: Option<std::process::ChildStdin>,
    lines: std::sync::mpsc::Receiver<Value>,
    stderr: Option<std::thread::JoinHandle<String>>,
    next_id: u64,
    /// Every message the bridge wrote, in order.
    received: Vec<Value>,
}

impl Ide {
    /// Starts the bridge to `endpoint` with `HOME` at `home` and `env` set.
    fn start(home: &std::path::Path, endpoint: &str, env: &[(&str, &str)]) -> Self {
        use std::io::BufRead as _;

        let mut child = Command::new(muster_tests::muster_bin().unwrap())
            .args(["agent", "--mcp-server", "--endpoint", endpoint])
            .env("HOME", home)
            .env_remove("MUSTER_ENDPOINT")
            .env_remove("MUSTER_CONTEXT")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                let message: Value = serde_json::from_str(&line)
                    .unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
                if tx.send(message).is_err() {
                    break;
                }
            }
        });
        let mut stderr = child.stderr.take().unwrap();
        let stderr = std::thread::spawn(move || {
            let mut text = String::new();
            let _ = std::io::Read::read_to_string(&mut stderr, &mut text);
            text
        });
        Self {
            stdin: child.stdin.take(),
            child,
            lines,
            stderr: Some(stderr),
            next_id: 0,
            received: Vec::new(),
        }
    }

    fn send(&mut self, message: &Value) {
        use std::io::Write as _;

        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    }

    /// The next message of the bridge, within 60 seconds.
    fn next(&mut self) -> Value {
        let message = self
            .lines
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| {
                panic!("the bridge wrote nothing more; so far: {:?}", self.received)
            });
        self.received.push(message.clone());
        message
    }

    /// Sends the request `method` and waits for its response (the whole message).
    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = json!(self.next_id);
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        loop {
            let message = self.next();
            if message.get("method").is_none() && message["id"] == id {
                return message;
            }
        }
    }

    /// `tools/call` of `name`; the whole response.
    fn call(&mut self, name: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": name, "arguments": arguments}))
    }

    /// `initialize` and `notifications/initialized`; the result.
    fn initialize(&mut self) -> Value {
        let init = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "ide", "version": "0"}}),
        );
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        init["result"].clone()
    }

    /// The names `tools/list` lists.
    fn tool_names(&mut self) -> Vec<String> {
        let list = self.request("tools/list", json!({}));
        list["result"]["tools"]
            .as_array()
            .unwrap_or_else(|| panic!("{list}"))
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_owned())
            .collect()
    }

    /// Waits for the notification `method` (or finds it among those already received).
    fn notification(&mut self, method: &str) {
        if self.received.iter().any(|m| m["method"] == method) {
            return;
        }
        while self.next()["method"] != method {}
    }

    /// Closes stdin and waits for the bridge to end; its stderr.
    fn close(mut self) -> String {
        drop(self.stdin.take());
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                assert!(status.success(), "the bridge failed: {status}");
                break;
            }
            if tokio::time::Instant::now() > deadline {
                let _ = self.child.kill();
                panic!("the bridge did not end with its stdin");
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        self.stderr.take().unwrap().join().unwrap()
    }
}

impl Drop for Ide {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The text blocks of a `tools/call` response, joined.
fn result_text(response: &Value) -> String {
    response["result"]["content"]
        .as_array()
        .unwrap_or_else(|| panic!("{response}"))
        .iter()
        .filter_map(|c| c["text"].as_str())
        .collect::<Vec<_>>()
        .join("")
}

#[test]
fn the_bridge_refreshes_its_token_while_it_runs() {
    // Sign-in to protected servers is on, and none needs one: results carry no notice.
    let s = setup_full(
        json!({}),
        false,
        &json!({"mcpClient": {"enabled": true, "clientId": PROTECTED_CLIENT}}),
        &[],
    );
    let home = tempfile::tempdir().unwrap();
    let endpoint = format!("{}/mcp", s.base);
    let mut seen = Seen::default();
    cli_sign_in(&s, home.path(), &mut seen);
    let (file, record) = stored_sign_in(home.path());
    seen.add(record["accessToken"].as_str().unwrap());
    seen.add(record["refreshToken"].as_str().unwrap());

    let mut ide = Ide::start(home.path(), &endpoint, &[]);
    let init = ide.initialize();
    assert_eq!(init["serverInfo"]["name"], "muster-aggregator", "{init}");
    assert_eq!(ide.tool_names(), muster_tests::META_TOOLS);
    let listed = ide.call("list_tools", json!({}));
    assert_eq!(listed["result"]["isError"], false, "{listed}");
    assert!(
        listed["result"]["_meta"].get(AUTH_META).is_none(),
        "{listed}"
    );
    assert!(
        !result_text(&listed).contains("Authentication Required"),
        "{listed}"
    );
    let status = ide.request("resources/read", json!({"uri": "auth://status"}));
    assert!(
        status["result"]["contents"][0]["text"].is_string(),
        "{status}"
    );

    // The access token expires: the bridge refreshes it before its next request and goes on
    // in the same session.
    let mut expired = record.clone();
    expired["expiresAt"] = json!("2000-01-01T00:00:00Z");
    std::fs::write(&file, expired.to_string()).unwrap();
    let listed = ide.call("list_tools", json!({}));
    assert_eq!(listed["result"]["isError"], false, "{listed}");
    let (_, refreshed) = stored_sign_in(home.path());
    assert_ne!(refreshed["accessToken"], record["accessToken"]);
    assert_ne!(refreshed["refreshToken"], record["refreshToken"]);
    seen.add(refreshed["accessToken"].as_str().unwrap());
    seen.add(refreshed["refreshToken"].as_str().unwrap());

    // muster refuses the token the bridge sends (401): it refreshes the sign-in and sends the
    // request again.
    let mut refused = refreshed.clone();
    refused["accessToken"] = json!("a-token-muster-never-issued-0123456789");
    refused["expiresAt"] = json!("2999-01-01T00:00:00Z");
    std::fs::write(&file, refused.to_string()).unwrap();
    let listed = ide.call("list_tools", json!({}));
    assert_eq!(listed["result"]["isError"], false, "{listed}");
    let (_, again) = stored_sign_in(home.path());
    assert_ne!(again["accessToken"], refused["accessToken"]);
    assert_ne!(again["refreshToken"], refreshed["refreshToken"]);
    seen.add(again["accessToken"].as_str().unwrap());
    seen.add(again["refreshToken"].as_str().unwrap());
    let listed = ide.call("list_tools", json!({}));
    assert_eq!(listed["result"]["isError"], false, "{listed}");
    assert!(
        listed["result"]["_meta"].get(AUTH_META).is_none(),
        "{listed}"
    );

    let stderr = ide.close();
    seen.assert_absent_from(&[
        ("the bridge's stderr", &stderr),
        ("muster's log", &s.muster.log()),
    ]);
    drop(s.idp);
}

#[test]
fn bridge_tool_results_name_the_servers_that_wait_for_a_sign_in() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    // The sign-in to the protected server is never completed: its callback goes nowhere.
    let protected = start_protected("http://127.0.0.1:9/oauth/proxy/callback", tokens.path());
    let server = (
        "protected",
        json!({"type": "streamable-http", "url": protected.mcp, "autoStart": true}),
    );
    let s = setup_full(
        json!({}),
        false,
        &json!({"mcpClient": {"enabled": true, "clientId": PROTECTED_CLIENT}}),
        &[server],
    );
    let endpoint = format!("{}/mcp", s.base);
    let mut seen = Seen::default();
    let bob = s.idp.mint(json!({"sub": "bob", "aud": s.base}));
    seen.add(&bob);
    let bob = client_with(&s.base, &bob);
    wait_for("the protected server is never Auth Required", || {
        state_of(&bob, "protected") == "Auth Required"
    });
    let home = tempfile::tempdir().unwrap();
    cli_sign_in(&s, home.path(), &mut seen);
    let (_, record) = stored_sign_in(home.path());
    seen.add(record["accessToken"].as_str().unwrap());
    seen.add(record["refreshToken"].as_str().unwrap());

    let mut ide = Ide::start(home.path(), &endpoint, &[]);
    ide.initialize();
    // What the IDE's own read of auth://status says (passed through, never decorated).
    let status = ide.request("resources/read", json!({"uri": "auth://status"}));
    assert!(status["result"].get("_meta").is_none(), "{status}");
    let document: Value =
        serde_json::from_str(status["result"]["contents"][0]["text"].as_str().unwrap()).unwrap();
    let entry = document["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "protected")
        .unwrap_or_else(|| panic!("{document}"))
        .clone();
    assert_eq!(entry["status"], "auth_required", "{document}");
    let mut expected = json!({
        "server": "protected",
        "issuer": entry.get("issuer").cloned().unwrap_or(json!("")),
        "auth_tool": "core_auth_login",
    });
    if let Some(scope) = entry["scope"].as_str().filter(|s| !s.is_empty()) {
        expected["scope"] = json!(scope);
    }

    // The bridge read the status right after initialize: tool results name the server.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(45);
    let noted = loop {
        let listed = ide.call("list_tools", json!({}));
        assert_eq!(listed["result"]["isError"], false, "{listed}");
        if listed["result"]["_meta"].get(AUTH_META).is_some() {
            break listed;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no auth notice: {listed}"
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert_eq!(
        noted["result"]["_meta"][AUTH_META],
        json!([expected]),
        "{noted}"
    );
    let content = noted["result"]["content"].as_array().unwrap();
    assert_eq!(
        content.last().unwrap(),
        &json!({"type": "text", "text": "\n---\nAuthentication Required:\n\
            - protected: call 'core_auth_login' with server='protected' to sign in\n"}),
        "{noted}"
    );
    assert!(
        content[0]["text"].as_str().unwrap().contains("\"tools\""),
        "the tool's own result comes first: {noted}"
    );
    // Only tool results are decorated, and the bridge's own reads never reach the IDE.
    let listed = ide.request("tools/list", json!({}));
    assert!(listed["result"].get("_meta").is_none(), "{listed}");
    assert!(
        !ide.received.iter().any(|m| m["id"]
            .as_str()
            .is_some_and(|id| id.starts_with("muster-bridge"))),
        "{:?}",
        ide.received
    );

    let stderr = ide.close();
    seen.assert_absent_from(&[
        ("the bridge's stderr", &stderr),
        ("muster's log", &s.muster.log()),
    ]);
    drop(protected);
    drop(s.idp);
}

#[test]
fn a_bridge_without_a_sign_in_offers_authenticate_muster() {
    let s = setup(json!({}));
    let endpoint = format!("{}/mcp", s.base);
    let mut seen = Seen::default();
    let home = tempfile::tempdir().unwrap();

    // Not signed in: the bridge answers as a server with one tool.
    let mut ide = Ide::start(
        home.path(),
        &endpoint,
        &[("MUSTER_OAUTH_CALLBACK_PORT", "0"), ("BROWSER", "true")],
    );
    let init = ide.initialize();
    assert_eq!(
        init["capabilities"],
        json!({"tools": {"listChanged": true}}),
        "{init}"
    );
    assert_eq!(ide.tool_names(), ["authenticate_muster"]);
    for refused in [
        ide.request("resources/list", json!({})),
        ide.call("list_tools", json!({})),
    ] {
        assert!(
            refused["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains("call the authenticate_muster tool")),
            "{refused}"
        );
    }

    // authenticate_muster answers with the sign-in URL at once; the browser completes it.
    let started = ide.call("authenticate_muster", json!({}));
    assert_eq!(started["result"]["isError"], false, "{started}");
    let url = started["result"]["structuredContent"]["authUrl"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned();
    assert!(
        url.starts_with(&format!("{}/oauth/authorize?", s.base)),
        "{url}"
    );
    assert!(result_text(&started).contains(&url), "{started}");
    complete_native_sign_in(&s, &url, &mut seen);

    // The tokens are stored as `muster auth login` stores them, and the IDE is told that its
    // tools changed: muster's meta-tools, which work.
    ide.notification("notifications/tools/list_changed");
    let (_, record) = stored_sign_in(home.path());
    seen.add(record["accessToken"].as_str().unwrap());
    seen.add(record["refreshToken"].as_str().unwrap());
    assert_eq!(ide.tool_names(), muster_tests::META_TOOLS);
    let listed = ide.call("list_tools", json!({}));
    assert_eq!(listed["result"]["isError"], false, "{listed}");
    let (ok, status, _) = cli(home.path(), &["auth", "status", "--endpoint", &endpoint]);
    assert!(ok && status.contains("signed in: yes"), "{status}");

    // Signed out elsewhere (the sign-in is revoked): the bridge offers authenticate_muster
    // again instead of failing.
    let changes = ide
        .received
        .iter()
        .filter(|m| m["method"] == "notifications/tools/list_changed")
        .count();
    let (ok, _, err) = cli(home.path(), &["auth", "logout", "--endpoint", &endpoint]);
    assert!(ok, "{err}");
    let refused = ide.call("list_tools", json!({}));
    assert!(
        refused["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("call the authenticate_muster tool")),
        "{refused}"
    );
    let changed = ide
        .received
        .iter()
        .filter(|m| m["method"] == "notifications/tools/list_changed")
        .count();
    assert_eq!(changed, changes + 1, "{:?}", ide.received);
    assert_eq!(ide.tool_names(), ["authenticate_muster"]);

    let stderr = ide.close();
    seen.assert_absent_from(&[
        ("the bridge's stderr", &stderr),
        ("muster's log", &s.muster.log()),
    ]);
    drop(s.idp);
}

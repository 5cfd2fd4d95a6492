//! Signing in to an OAuth-protected MCP server through muster, against a real OpenID
//! provider (npm `oidc-provider`) as the server's authorization server, with the browser
//! step scripted as plain HTTP requests (redirects and cookies). Checks the whole flow
//! (`Auth Required`, `core_auth_login`, `/oauth/proxy/start`, login and consent, the
//! callback, the session's own connection, token refresh, `auth://status`,
//! `core_auth_logout`) and the security properties: a wrong or replayed `state` is refused,
//! another session sees neither the server's tools nor its token, no token or code reaches
//! muster's log.

#![allow(missing_docs, clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::time::Duration;

use muster_tests::oidc::{ProtectedIdp, ProtectedIdpOptions};
use muster_tests::{McpClient, MusterConfig};
use serde_json::{Value, json};
use tokio::time::Instant;

const CLIENT_ID: &str = "muster-test";
const USER: &str = "alice";

fn start_idp(redirect_uri: &str, tokens_file: &std::path::Path) -> ProtectedIdp {
    start_idp_with(redirect_uri, tokens_file, &[])
}

/// [`start_idp`] with more environment for the fixture (TLS, the revocations file).
fn start_idp_with(
    redirect_uri: &str,
    tokens_file: &std::path::Path,
    extra: &[(&str, &std::path::Path)],
) -> ProtectedIdp {
    ProtectedIdp::start(&ProtectedIdpOptions {
        client_id: CLIENT_ID,
        redirect_uri,
        user: USER,
        // Shorter than muster's refresh margin: every request refreshes the token first.
        access_token_ttl: 30,
        tokens_file,
        extra,
    })
    .unwrap()
}

/// A browser: follows redirects by hand, keeping cookies, until a `Location` starts with
/// `stop_at`; returns that location.
fn browse_until(start: &str, stop_at: &str) -> String {
    browse_trusting(start, stop_at, None)
}

/// [`browse_until`], trusting the CA certificate at `ca` besides the system's.
fn browse_trusting(start: &str, stop_at: &str, ca: Option<&std::path::Path>) -> String {
    let mut builder =
        reqwest::blocking::Client::builder().redirect(reqwest::redirect::Policy::none());
    if let Some(ca) = ca {
        let pem = std::fs::read(ca).unwrap();
        builder = builder.add_root_certificate(reqwest::Certificate::from_pem(&pem).unwrap());
    }
    let http = builder.build().unwrap();
    let mut cookies: BTreeMap<String, String> = BTreeMap::new();
    let mut url = url::Url::parse(start).unwrap();
    for _ in 0..12 {
        let cookie = cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ");
        let response = http
            .get(url.clone())
            .header("cookie", cookie)
            .send()
            .unwrap();
        for value in response.headers().get_all("set-cookie") {
            let pair = value.to_str().unwrap().split(';').next().unwrap();
            if let Some((k, v)) = pair.split_once('=') {
                cookies.insert(k.trim().to_owned(), v.trim().to_owned());
            }
        }
        let status = response.status();
        assert!(
            status.is_redirection(),
            "{url} answered {status}: {:?}",
            response.text()
        );
        let location = response.headers()["location"].to_str().unwrap().to_owned();
        let next = url.join(&location).unwrap();
        if next.as_str().starts_with(stop_at) {
            return next.to_string();
        }
        url = next;
    }
    panic!("no redirect to {stop_at}");
}

fn server_entry(client: &McpClient, server: &str) -> Value {
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
        .cloned()
        .unwrap_or_else(|| panic!("{server} not listed: {list}"))
}

/// Writes the MCPServer `name` with `spec` into the config directory of `dir`.
fn write_server(dir: &muster_tests::ConfigDir, name: &str, spec: Value) {
    std::fs::create_dir_all(dir.path().join("mcpservers")).unwrap();
    std::fs::write(
        dir.path().join(format!("mcpservers/{name}.yaml")),
        muster_tests::mcp_server_document(name, spec),
    )
    .unwrap();
}

/// Waits until `server` is `Auth Required` (a 401 at initialize: reachable, waiting for
/// sign-ins).
fn wait_for_auth_required(client: &McpClient, server: &str) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while server_entry(client, server)["state"] != "Auth Required" {
        assert!(
            Instant::now() < deadline,
            "{}",
            server_entry(client, server)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn auth_status(client: &McpClient) -> Value {
    let read = client
        .request("resources/read", json!({"uri": "auth://status"}))
        .unwrap();
    serde_json::from_str(read["contents"][0]["text"].as_str().unwrap()).unwrap()
}

#[test]
fn sign_in_to_a_server_protected_by_a_real_openid_provider() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    // The MCP server's URL is known only once the IdP runs; the definition is written after.
    let dir = MusterConfig::new()
        .aggregator_setting(&format!(
            "oauth: {{mcpClient: {{enabled: true, clientId: {CLIENT_ID}}}}}"
        ))
        .write()
        .unwrap();
    let callback = format!("http://127.0.0.1:{}/oauth/proxy/callback", dir.port());
    let idp = start_idp(&callback, tokens.path());
    write_server(
        &dir,
        "protected",
        json!({"type": "streamable-http", "url": idp.mcp, "autoStart": true}),
    );
    let muster = dir.start_with_args(&["--debug"]).unwrap();
    let alice = muster.client().unwrap();
    let other = muster.client().unwrap();

    // A 401 at initialize: Auth Required, never Failed; nobody sees its tools yet.
    wait_for_auth_required(&alice, "protected");
    assert_eq!(
        server_entry(&alice, "protected")["sessionStatus"],
        "auth_required"
    );
    assert!(
        !alice
            .reachable_tools()
            .unwrap()
            .contains(&"x_protected_whoami".to_owned())
    );

    // core_auth_login answers a challenge with the sign-in link as structured content.
    let login = alice
        .call("core_auth_login", json!({"server": "protected"}))
        .unwrap();
    assert!(!login.is_error, "{}", login.text());
    assert!(
        login.text().starts_with("Authentication Required"),
        "{}",
        login.text()
    );
    let auth_url = login.raw["structuredContent"]["authUrl"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(login.text().contains(&auth_url));
    assert!(auth_url.contains("/oauth/proxy/start?state="), "{auth_url}");

    // A state muster did not issue is refused.
    let http = reqwest::blocking::Client::new();
    let forged = http
        .get(format!("{callback}?code=forged&state=not-issued-by-muster"))
        .send()
        .unwrap();
    assert_eq!(forged.status(), 400);

    // The browser: start link -> IdP -> login and consent -> muster's callback.
    let redirect = browse_until(&auth_url, &callback);
    let query: BTreeMap<String, String> = url::Url::parse(&redirect)
        .unwrap()
        .query_pairs()
        .into_owned()
        .collect();
    assert!(
        query.contains_key("code") && query.contains_key("iss"),
        "{redirect}"
    );
    let done = http.get(&redirect).send().unwrap();
    assert_eq!(done.status(), 200);
    assert!(done.text().unwrap().contains("Authentication successful"));

    // The same state is accepted once.
    assert_eq!(http.get(&redirect).send().unwrap().status(), 400);

    // The session that signed in sees and calls the server's tool, with its own token,
    // refreshed before each use (the tokens live 30 s, less than muster's refresh margin).
    let deadline = Instant::now() + Duration::from_secs(10);
    while !alice
        .reachable_tools()
        .unwrap()
        .contains(&"x_protected_whoami".to_owned())
    {
        assert!(
            Instant::now() < deadline,
            "the session's tools did not appear"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    let first = alice.call("x_protected_whoami", json!({})).unwrap();
    assert!(!first.is_error, "{}", first.text());
    let first = first.json().unwrap();
    assert_eq!(first["sub"], USER);
    let second = alice
        .call("x_protected_whoami", json!({}))
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(second["sub"], USER);
    assert_ne!(first["jti"], second["jti"], "the token was not refreshed");
    let again = alice
        .call("core_auth_login", json!({"server": "protected"}))
        .unwrap();
    assert_eq!(again.text(), "Server 'protected' is already authenticated.");
    assert_eq!(
        server_entry(&alice, "protected")["sessionStatus"],
        "connected"
    );
    assert_eq!(server_entry(&alice, "protected")["toolsCount"], 1);
    let status = auth_status(&alice);
    assert_eq!(status["servers"][0]["name"], "protected", "{status}");
    assert_eq!(status["servers"][0]["status"], "connected", "{status}");

    // Another session is signed out: no tool, no call, its own status.
    assert!(
        !other
            .reachable_tools()
            .unwrap()
            .contains(&"x_protected_whoami".to_owned())
    );
    let refused = other.call("x_protected_whoami", json!({})).unwrap();
    assert!(refused.is_error, "{}", refused.text());
    assert_eq!(
        server_entry(&other, "protected")["sessionStatus"],
        "auth_required"
    );
    assert_eq!(auth_status(&other)["servers"][0]["status"], "auth_required");
    assert_eq!(
        auth_status(&other)["servers"][0]["auth_tool"],
        "core_auth_login"
    );

    // Sign-out closes the session's connection.
    let logout = alice
        .call("core_auth_logout", json!({"server": "protected"}))
        .unwrap();
    assert!(!logout.is_error, "{}", logout.text());
    assert!(
        logout
            .text()
            .starts_with("Successfully logged out from 'protected'.")
    );
    assert!(
        !alice
            .reachable_tools()
            .unwrap()
            .contains(&"x_protected_whoami".to_owned())
    );
    let relogin = alice
        .call("core_auth_login", json!({"server": "protected"}))
        .unwrap();
    assert!(
        relogin.text().starts_with("Authentication Required"),
        "{}",
        relogin.text()
    );

    // No token, code or state ever reached muster's log.
    let log = muster.log();
    let seen = std::fs::read_to_string(tokens.path()).unwrap();
    let mut secrets: Vec<&str> = seen.lines().filter(|l| !l.is_empty()).collect();
    assert!(
        secrets.len() >= 3,
        "the server saw {} tokens",
        secrets.len()
    );
    secrets.push(&query["code"]);
    secrets.push(&query["state"]);
    for secret in secrets {
        assert!(
            !log.contains(secret),
            "a secret value is in muster's log:\n{log}"
        );
    }
}

/// Signs `client` in to `server`: `core_auth_login`, the browser to the authorization server
/// (trusting `ca`) and back to muster's `callback`.
fn sign_in_in_browser(
    client: &McpClient,
    server: &str,
    callback: &str,
    ca: Option<&std::path::Path>,
) {
    let login = client
        .call("core_auth_login", json!({"server": server}))
        .unwrap();
    let auth_url = login.raw["structuredContent"]["authUrl"]
        .as_str()
        .unwrap_or_else(|| panic!("{}", login.text()))
        .to_owned();
    let redirect = browse_trusting(&auth_url, callback, ca);
    let done = reqwest::blocking::get(&redirect).unwrap();
    let status = done.status();
    assert_eq!(status, 200, "{}", done.text().unwrap());
}

/// Waits until `client` sees the tool `tool` (`true`) or no longer sees it (`false`).
fn wait_for_tool(client: &McpClient, tool: &str, visible: bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while client.reachable_tools().unwrap().contains(&tool.to_owned()) != visible {
        assert!(
            Instant::now() < deadline,
            "{tool} did not become {}",
            if visible { "visible" } else { "hidden" }
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_subject_grant_serves_every_session_of_the_person_until_sign_out_revokes_it() {
    let certificates = tempfile::tempdir().unwrap();
    let ca = certificates.path().join("ca.pem");
    let leaf = certificates.path().join("leaf.pem");
    let key = certificates.path().join("leaf-key.pem");
    muster_tests::oidc::make_certificates(certificates.path(), &ca, &leaf, &key).unwrap();
    let tokens = tempfile::NamedTempFile::new().unwrap();
    let revocations = tempfile::NamedTempFile::new().unwrap();
    let dir = MusterConfig::new()
        .aggregator_setting(&format!(
            "oauth: {{mcpClient: {{enabled: true, clientId: {CLIENT_ID}}}}}"
        ))
        .aggregator_setting(&format!("extraCaFile: {}", ca.display()))
        .write()
        .unwrap();
    let callback = format!("http://127.0.0.1:{}/oauth/proxy/callback", dir.port());
    let idp = start_idp_with(
        &callback,
        tokens.path(),
        &[
            ("TLS_CERT_FILE", leaf.as_path()),
            ("TLS_KEY_FILE", key.as_path()),
            ("REVOCATIONS_FILE", revocations.path()),
        ],
    );
    assert!(idp.issuer.starts_with("https://"), "{}", idp.issuer);
    write_server(
        &dir,
        "protected",
        json!({
            "type": "streamable-http",
            "url": idp.mcp,
            "autoStart": true,
            "auth": {
                "type": "oauth",
                "authorizationServer": {
                    "issuer": idp.issuer,
                    "scopes": "mcp:read",
                    "grantScope": "subject",
                },
            },
        }),
    );
    let muster = dir.start_with_args(&["--debug"]).unwrap();
    // Without sign-in to muster itself every session is the same person.
    let first = muster.client().unwrap();
    let second = muster.client().unwrap();
    wait_for_auth_required(&first, "protected");

    // The first session signs in in the browser.
    sign_in_in_browser(&first, "protected", &callback, Some(&ca));
    wait_for_tool(&first, "x_protected_whoami", true);
    let called = first.call("x_protected_whoami", json!({})).unwrap();
    assert!(!called.is_error, "{}", called.text());
    assert_eq!(called.json().unwrap()["sub"], USER);

    // The second session reuses the person's grant: connected on its next request, without
    // core_auth_login or a browser.
    wait_for_tool(&second, "x_protected_whoami", true);
    let reused = second
        .call("core_auth_login", json!({"server": "protected"}))
        .unwrap();
    assert_eq!(
        reused.text(),
        "Server 'protected' is already authenticated."
    );
    let called = second.call("x_protected_whoami", json!({})).unwrap();
    assert!(!called.is_error, "{}", called.text());
    assert_eq!(called.json().unwrap()["sub"], USER);

    // Sign-out revokes the grant at the provider and ends it for every session.
    let logout = first
        .call("core_auth_logout", json!({"server": "protected"}))
        .unwrap();
    assert!(!logout.is_error, "{}", logout.text());
    assert!(
        logout.text().starts_with(
            "Successfully logged out from 'protected'. Your sign-in was revoked at the \
             authorization server and ended for all your sessions."
        ),
        "{}",
        logout.text()
    );
    let revoked = std::fs::read_to_string(revocations.path()).unwrap();
    assert_eq!(revoked.lines().count(), 1, "grants revoked: {revoked:?}");
    wait_for_tool(&second, "x_protected_whoami", false);
    for client in [&first, &second] {
        let again = client
            .call("core_auth_login", json!({"server": "protected"}))
            .unwrap();
        assert!(
            again.text().starts_with("Authentication Required"),
            "{}",
            again.text()
        );
    }

    // No token reached muster's log.
    let log = muster.log();
    let seen = std::fs::read_to_string(tokens.path()).unwrap();
    assert!(seen.lines().count() >= 2);
    for token in seen.lines().filter(|l| !l.is_empty()) {
        assert!(!log.contains(token), "a token is in muster's log:\n{log}");
    }
}

#[test]
fn sign_in_to_a_legacy_sse_server() {
    let tokens = tempfile::NamedTempFile::new().unwrap();
    let dir = MusterConfig::new()
        .aggregator_setting(&format!(
            "oauth: {{mcpClient: {{enabled: true, clientId: {CLIENT_ID}}}}}"
        ))
        .write()
        .unwrap();
    let callback = format!("http://127.0.0.1:{}/oauth/proxy/callback", dir.port());
    let idp = start_idp(&callback, tokens.path());
    let sse_url = idp.mcp.replace("/mcp", "/sse");
    write_server(
        &dir,
        "legacy",
        json!({"type": "sse", "url": sse_url, "autoStart": true}),
    );
    let muster = dir.start_with_args(&["--debug"]).unwrap();
    let alice = muster.client().unwrap();
    let other = muster.client().unwrap();
    wait_for_auth_required(&alice, "legacy");

    // The sign-in finds the authorization server through the event stream's 401.
    sign_in_in_browser(&alice, "legacy", &callback, None);
    wait_for_tool(&alice, "x_legacy_whoami", true);
    // Each call carries a fresh token (they live 30 s, less than muster's refresh margin):
    // the event stream and every message carry the session's current one.
    let first = alice.call("x_legacy_whoami", json!({})).unwrap();
    assert!(!first.is_error, "{}", first.text());
    let first = first.json().unwrap();
    assert_eq!(first["sub"], USER);
    let second = alice
        .call("x_legacy_whoami", json!({}))
        .unwrap()
        .json()
        .unwrap();
    assert_ne!(first["jti"], second["jti"], "the token was not refreshed");
    assert_eq!(server_entry(&alice, "legacy")["sessionStatus"], "connected");

    // Another session is signed out.
    assert!(other.call("x_legacy_whoami", json!({})).unwrap().is_error);
    assert_eq!(
        server_entry(&other, "legacy")["sessionStatus"],
        "auth_required"
    );

    let logout = alice
        .call("core_auth_logout", json!({"server": "legacy"}))
        .unwrap();
    assert!(!logout.is_error, "{}", logout.text());
    wait_for_tool(&alice, "x_legacy_whoami", false);

    let log = muster.log();
    let seen = std::fs::read_to_string(tokens.path()).unwrap();
    assert!(seen.lines().count() >= 3);
    for token in seen.lines().filter(|l| !l.is_empty()) {
        assert!(!log.contains(token), "a token is in muster's log:\n{log}");
    }
}

#[test]
fn a_forward_identity_server_gets_the_callers_token_next_to_the_grant() {
    use muster_tests::oidc::{Upstream, UpstreamOptions};

    let certificates = tempfile::tempdir().unwrap();
    let ca = certificates.path().join("ca.pem");
    let leaf = certificates.path().join("leaf.pem");
    let key = certificates.path().join("leaf-key.pem");
    muster_tests::oidc::make_certificates(certificates.path(), &ca, &leaf, &key).unwrap();
    let tokens = tempfile::NamedTempFile::new().unwrap();
    // muster's own provider, whose minter issues the callers' tokens (a trusted issuer).
    let upstream = Upstream::start(&UpstreamOptions {
        idp_port: muster_tests::free_port().unwrap(),
        mint_port: muster_tests::free_port().unwrap(),
        mcp_port: 0,
        client_id: "muster",
        client_secret: "upstream-s3cret-for-muster",
        redirect_uri: "http://127.0.0.1:9/oauth/callback",
        user: "carol",
    })
    .unwrap();
    let oauth = json!({
        "mcpClient": {"enabled": true, "clientId": CLIENT_ID},
        "server": {
            "enabled": true,
            "baseUrl": "BASE_URL",
            "dex": {
                "issuerUrl": upstream.issuer,
                "clientId": "muster",
                "clientSecret": "upstream-s3cret-for-muster",
            },
            "trustedIssuers": [{
                "issuer": upstream.minter,
                "jwksUrl": format!("{}/jwks", upstream.minter),
                "allowPrivateIPJWKS": true,
            }],
        },
    });
    let dir = MusterConfig::new()
        .aggregator_setting(&format!("oauth: {oauth}"))
        .aggregator_setting(&format!("extraCaFile: {}", ca.display()))
        .ready_on_health()
        .write()
        .unwrap();
    let base = format!("http://127.0.0.1:{}", dir.port());
    let config = dir.path().join("config.yaml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&config, text.replace("BASE_URL", &base)).unwrap();
    let callback = format!("{base}/oauth/proxy/callback");
    let idp = start_idp_with(
        &callback,
        tokens.path(),
        &[
            ("TLS_CERT_FILE", leaf.as_path()),
            ("TLS_KEY_FILE", key.as_path()),
        ],
    );
    write_server(
        &dir,
        "two-hats",
        json!({
            "type": "streamable-http",
            "url": idp.mcp,
            "autoStart": true,
            "auth": {
                "type": "oauth",
                "authorizationServer": {"issuer": idp.issuer, "scopes": "mcp:read"},
                "forwardIdentity": true,
            },
        }),
    );
    let muster = dir.start_with_args(&["--debug"]).unwrap();
    let bearer = |token: &str| {
        McpClient::connect_with_headers(
            &format!("{base}/mcp"),
            &[("authorization", &format!("Bearer {token}"))],
        )
        .unwrap()
    };
    let first_token = upstream.mint(json!({"sub": "carol", "aud": base}));
    let carol = bearer(&first_token);
    wait_for_auth_required(&carol, "two-hats");

    // The grant of the pinned authorization server goes in Authorization; the caller's own
    // token in X-Muster-Id-Token.
    sign_in_in_browser(&carol, "two-hats", &callback, Some(&ca));
    wait_for_tool(&carol, "x_two-hats_whoami", true);
    let seen = carol.call("x_two-hats_whoami", json!({})).unwrap();
    assert!(!seen.is_error, "{}", seen.text());
    let seen = seen.json().unwrap();
    assert_eq!(seen["sub"], USER, "the grant's person at the pinned server");
    assert_eq!(seen["id_token"], first_token.as_str());

    // A refreshed token of the same caller keeps the session, and is sent from then on.
    let second_token = upstream.mint(json!({"sub": "carol", "aud": base, "jti": "second"}));
    assert_ne!(first_token, second_token);
    let refreshed = bearer(&second_token);
    let seen = refreshed
        .call("x_two-hats_whoami", json!({}))
        .unwrap()
        .json()
        .unwrap();
    assert_eq!(seen["id_token"], second_token.as_str());

    let log = muster.log();
    for token in [&first_token, &second_token] {
        assert!(
            !log.contains(token.as_str()),
            "a token is in muster's log:\n{log}"
        );
    }
}

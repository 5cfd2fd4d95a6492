//! The OpenID provider fixtures (npm `oidc-provider`, `tests/fixtures/oidc/*.mjs`) as child
//! processes: [`Upstream`], muster's upstream identity provider with a JWT issuer beside it,
//! [`ProtectedIdp`], the authorization server of an OAuth-protected MCP server muster signs
//! in to, and [`ExchangeIdp`], a remote identity provider that exchanges tokens (RFC 8693, as
//! Dex does) with an MCP server that trusts only its tokens.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use anyhow::{Context as _, anyhow};
use serde_json::{Value, json};

use crate::deps;

/// A fixture process, killed when dropped, and the JSON line it printed when ready.
#[derive(Debug)]
struct NodeFixture {
    child: Child,
    ready: Value,
}

impl Drop for NodeFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl NodeFixture {
    /// Runs `tests/fixtures/oidc/<script>` with `env` and waits for its ready line.
    fn start(script: &str, env: &BTreeMap<&str, String>) -> anyhow::Result<Self> {
        let node = deps::dir().join("node_modules/.bin/node");
        let node = if node.exists() { node } else { "node".into() };
        let mut command = Command::new(node);
        command
            .arg(crate::fixture(&format!("oidc/{script}")))
            .env("OIDC_PROVIDER_DIR", deps::oidc_provider_dir()?)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (key, value) in env {
            command.env(key, value);
        }
        let mut fixture = Self {
            child: command
                .spawn()
                .with_context(|| format!("starting {script}"))?,
            ready: Value::Null,
        };
        let stdout = fixture
            .child
            .stdout
            .take()
            .context("the fixture's stdout")?;
        let (tx, rx) = mpsc::channel();
        // Keeps reading after the first line: the provider may print more, and a closed pipe
        // would end it.
        std::thread::spawn(move || {
            let mut reader = BufReader::new(stdout);
            let mut line = String::new();
            let _ = reader.read_line(&mut line);
            let _ = tx.send(line);
            let _ = std::io::copy(&mut reader, &mut std::io::sink());
        });
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .map_err(|_| anyhow!("{script} printed no ready line in 30 s"))?;
        fixture.ready =
            serde_json::from_str(&line).with_context(|| format!("{script} ready line {line:?}"))?;
        Ok(fixture)
    }

    fn field(&self, name: &str) -> String {
        self.ready[name].as_str().unwrap_or_default().to_owned()
    }
}

fn http() -> reqwest::blocking::Client {
    reqwest::blocking::Client::builder()
        .timeout(Duration::from_secs(20))
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_else(|_| reqwest::blocking::Client::new())
}

/// `idp.mjs`: oidc-provider as the authorization server of an OAuth-protected MCP server
/// (streamable HTTP at `mcp`, legacy SSE beside it at `/sse`) with one public client; the
/// browser step approves at once. Killed when dropped.
#[derive(Debug)]
pub struct ProtectedIdp {
    /// The provider's issuer (`https://` when started with TLS).
    pub issuer: String,
    /// The protected MCP server's streamable-HTTP URL.
    pub mcp: String,
    _fixture: NodeFixture,
}

/// How to start a [`ProtectedIdp`].
#[derive(Debug, Clone, Copy)]
pub struct ProtectedIdpOptions<'a> {
    /// The client muster signs in as.
    pub client_id: &'a str,
    /// muster's `/oauth/proxy/callback`.
    pub redirect_uri: &'a str,
    /// The account every sign-in logs in as.
    pub user: &'a str,
    /// Lifetime of the access tokens, in seconds.
    pub access_token_ttl: u64,
    /// Where every token the MCP server accepted is appended.
    pub tokens_file: &'a Path,
    /// More environment for the fixture (`TLS_CERT_FILE`, `TLS_KEY_FILE`,
    /// `REVOCATIONS_FILE`).
    pub extra: &'a [(&'a str, &'a Path)],
}

impl ProtectedIdp {
    /// Starts the fixture.
    ///
    /// # Errors
    ///
    /// When node cannot run it or it prints no ready line.
    pub fn start(options: &ProtectedIdpOptions<'_>) -> anyhow::Result<Self> {
        let mut env = BTreeMap::from([
            ("IDP_PORT", crate::free_port()?.to_string()),
            ("MCP_PORT", crate::free_port()?.to_string()),
            ("CLIENT_ID", options.client_id.to_owned()),
            ("REDIRECT_URI", options.redirect_uri.to_owned()),
            ("USER_ID", options.user.to_owned()),
            ("ACCESS_TOKEN_TTL", options.access_token_ttl.to_string()),
            ("TOKENS_FILE", options.tokens_file.display().to_string()),
        ]);
        for (key, path) in options.extra {
            env.insert(key, path.display().to_string());
        }
        let fixture = NodeFixture::start("idp.mjs", &env)?;
        Ok(Self {
            issuer: fixture.field("issuer"),
            mcp: fixture.field("mcp"),
            _fixture: fixture,
        })
    }
}

/// `upstream.mjs`: oidc-provider as muster's upstream identity provider (a confidential
/// client, account `user`), a JWT issuer (the "minter") and, when asked, an MCP server that
/// accepts tokens of either.
#[derive(Debug)]
pub struct Upstream {
    fixture: NodeFixture,
    /// The provider's issuer URL.
    pub issuer: String,
    /// The JWT issuer's URL (its keys at `/jwks`).
    pub minter: String,
}

/// What [`Upstream::start`] runs with.
#[derive(Debug, Clone)]
pub struct UpstreamOptions<'a> {
    /// The provider's port.
    pub idp_port: u16,
    /// The JWT issuer's port.
    pub mint_port: u16,
    /// The token-forwarding MCP server's port; 0 runs none.
    pub mcp_port: u16,
    /// The client muster signs in as.
    pub client_id: &'a str,
    /// Its secret.
    pub client_secret: &'a str,
    /// muster's callback.
    pub redirect_uri: &'a str,
    /// The account every sign-in logs in as.
    pub user: &'a str,
}

impl Upstream {
    /// Starts the fixture.
    ///
    /// # Errors
    ///
    /// When node or oidc-provider is missing or the fixture does not get ready.
    pub fn start(options: &UpstreamOptions<'_>) -> anyhow::Result<Self> {
        let env = BTreeMap::from([
            ("IDP_PORT", options.idp_port.to_string()),
            ("MINT_PORT", options.mint_port.to_string()),
            ("MCP_PORT", options.mcp_port.to_string()),
            ("CLIENT_ID", options.client_id.to_owned()),
            ("CLIENT_SECRET", options.client_secret.to_owned()),
            ("REDIRECT_URI", options.redirect_uri.to_owned()),
            ("USER_ID", options.user.to_owned()),
        ]);
        let fixture = NodeFixture::start("upstream.mjs", &env)?;
        Ok(Self {
            issuer: fixture.field("issuer"),
            minter: fixture.field("minter"),
            fixture,
        })
    }

    /// A JWT of the minter with `claims` (`iss`, `iat` and `exp` added when missing).
    ///
    /// # Panics
    ///
    /// When the minter does not answer.
    #[allow(clippy::unwrap_used, reason = "a test fixture fails loudly")]
    pub fn mint(&self, claims: Value) -> String {
        let answer: Value = http()
            .post(format!("{}/mint", self.minter))
            .json(&json!({ "claims": claims }))
            .send()
            .unwrap()
            .json()
            .unwrap();
        answer["token"].as_str().unwrap().to_owned()
    }

    /// The fixture's ready line.
    pub fn ready(&self) -> &Value {
        &self.fixture.ready
    }
}

/// `exchange.mjs`: a remote identity provider that exchanges tokens of a trusted issuer
/// (RFC 8693, with a connector id, as Dex does) over HTTPS, and an MCP server that accepts
/// only the tokens it issued.
#[derive(Debug)]
pub struct ExchangeIdp {
    _fixture: NodeFixture,
    /// The provider's issuer (`https://127.0.0.1:<port>`).
    pub issuer: String,
    /// Its token endpoint.
    pub token_endpoint: String,
    /// The MCP server's URL.
    pub mcp: String,
    /// The PEM certificate of the CA that signed the provider's (trust it with
    /// `--extra-ca-file`).
    pub certificate: PathBuf,
}

/// What [`ExchangeIdp::start`] runs with.
#[derive(Debug, Clone)]
pub struct ExchangeOptions<'a> {
    /// A directory for the certificate, its key and the tokens file.
    pub dir: &'a Path,
    /// The exchanging client.
    pub client_id: &'a str,
    /// Its secret; empty for a public client.
    pub client_secret: &'a str,
    /// The connector id the exchange must name.
    pub connector_id: &'a str,
    /// The issuer whose tokens are exchanged, and its JWKS.
    pub trusted_issuer: &'a str,
    /// The JWKS of `trusted_issuer`.
    pub trusted_jwks: &'a str,
    /// The lifetime of issued tokens, in seconds.
    pub token_ttl: u64,
    /// An audience the MCP server requires of tokens, if any.
    pub required_audience: Option<&'a str>,
}

impl ExchangeIdp {
    /// Starts the fixture on two free ports, with a certificate for 127.0.0.1 signed by a CA
    /// of its own, both made by `openssl`.
    ///
    /// # Errors
    ///
    /// When `openssl`, node or oidc-provider is missing or the fixture does not get ready.
    pub fn start(options: &ExchangeOptions<'_>) -> anyhow::Result<Self> {
        let certificate = options.dir.join("exchange-ca.pem");
        let leaf = options.dir.join("exchange-cert.pem");
        let key = options.dir.join("exchange-key.pem");
        make_certificates(options.dir, &certificate, &leaf, &key)?;
        let mut env = BTreeMap::from([
            ("IDP_PORT", crate::free_port()?.to_string()),
            ("MCP_PORT", crate::free_port()?.to_string()),
            ("CLIENT_ID", options.client_id.to_owned()),
            ("CLIENT_SECRET", options.client_secret.to_owned()),
            ("CONNECTOR_ID", options.connector_id.to_owned()),
            ("TRUSTED_ISSUER", options.trusted_issuer.to_owned()),
            ("TRUSTED_JWKS", options.trusted_jwks.to_owned()),
            ("TOKEN_TTL", options.token_ttl.to_string()),
            ("TLS_CERT_FILE", leaf.display().to_string()),
            ("TLS_KEY_FILE", key.display().to_string()),
            ("NODE_EXTRA_CA_CERTS", certificate.display().to_string()),
            (
                "TOKENS_FILE",
                options.dir.join("exchanged-tokens").display().to_string(),
            ),
        ]);
        if let Some(audience) = options.required_audience {
            env.insert("REQUIRED_AUDIENCE", audience.to_owned());
        }
        let fixture = NodeFixture::start("exchange.mjs", &env)?;
        Ok(Self {
            issuer: fixture.field("issuer"),
            token_endpoint: fixture.field("token_endpoint"),
            mcp: fixture.field("mcp"),
            certificate,
            _fixture: fixture,
        })
    }

    fn client(&self) -> reqwest::blocking::Client {
        let trusted = std::fs::read(&self.certificate)
            .ok()
            .and_then(|pem| reqwest::Certificate::from_pem(&pem).ok());
        let mut builder = reqwest::blocking::Client::builder().timeout(Duration::from_secs(20));
        if let Some(certificate) = trusted {
            builder = builder.add_root_certificate(certificate);
        }
        builder.build().unwrap_or_else(|_| http())
    }

    /// `GET /test/exchanges`: `{count, subjects, failures}`.
    ///
    /// # Errors
    ///
    /// When the provider does not answer.
    pub fn exchanges(&self) -> anyhow::Result<Value> {
        Ok(self
            .client()
            .get(format!("{}/test/exchanges", self.issuer))
            .send()?
            .json()?)
    }

    /// `POST /test/fail-next`: the next exchange answers `error` with `status`.
    ///
    /// # Errors
    ///
    /// When the provider does not answer.
    pub fn fail_next(&self, error: &str, status: u16) -> anyhow::Result<()> {
        self.client()
            .post(format!("{}/test/fail-next", self.issuer))
            .json(&json!({"error": error, "status": status}))
            .send()?
            .error_for_status()?;
        Ok(())
    }

    /// `POST /test/revoke-issued`: the MCP server refuses every token issued so far.
    ///
    /// # Errors
    ///
    /// When the provider does not answer.
    pub fn revoke_issued(&self) -> anyhow::Result<()> {
        self.client()
            .post(format!("{}/test/revoke-issued", self.issuer))
            .send()?
            .error_for_status()?;
        Ok(())
    }

    /// Every token the MCP server accepted, one per line.
    pub fn accepted_tokens(&self, dir: &Path) -> Vec<String> {
        std::fs::read_to_string(dir.join("exchanged-tokens"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// A CA (`ca`) and a certificate it signed for 127.0.0.1 (`leaf`, with `key`), made by
/// `openssl` in `dir`.
pub fn make_certificates(dir: &Path, ca: &Path, leaf: &Path, key: &Path) -> anyhow::Result<()> {
    let ca_key = dir.join("exchange-ca-key.pem");
    let request = dir.join("exchange-cert.csr");
    let extensions = dir.join("exchange-cert.ext");
    std::fs::write(
        &extensions,
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n",
    )?;
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:P-256",
        "-nodes",
    ];
    let steps: [Vec<std::ffi::OsString>; 3] = [
        args(
            &["req", "-x509", "-days", "2", "-subj", "/CN=muster test CA"],
            &ec,
        )
        .chain(paths(&[("-keyout", &ca_key), ("-out", ca)]))
        .collect(),
        args(&["req", "-subj", "/CN=127.0.0.1"], &ec)
            .chain(paths(&[("-keyout", key), ("-out", &request)]))
            .collect(),
        args(&["x509", "-req", "-days", "2", "-CAcreateserial"], &[])
            .chain(paths(&[
                ("-in", &request),
                ("-CA", ca),
                ("-CAkey", &ca_key),
                ("-extfile", &extensions),
                ("-out", leaf),
            ]))
            .collect(),
    ];
    for step in steps {
        let status = Command::new("openssl")
            .args(&step)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .context("running openssl")?;
        anyhow::ensure!(status.success(), "openssl {step:?} failed");
    }
    Ok(())
}

fn args<'a>(
    first: &'a [&'a str],
    more: &'a [&'a str],
) -> impl Iterator<Item = std::ffi::OsString> + 'a {
    first.iter().chain(more).map(std::ffi::OsString::from)
}

fn paths<'a>(pairs: &'a [(&'a str, &'a Path)]) -> impl Iterator<Item = std::ffi::OsString> + 'a {
    pairs
        .iter()
        .flat_map(|(flag, path)| [std::ffi::OsString::from(flag), path.as_os_str().to_owned()])
}

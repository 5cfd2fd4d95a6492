//! `muster auth login|status|logout`: sign-ins to a muster protected by its OAuth server
//! (kept in `~/.config/muster/tokens`, see [`store`]) and, with `--server`, to its MCP
//! servers through `core_auth_login` / `core_auth_logout`.

pub(crate) mod store;

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use muster_aggregator::client::signin::{self, Loopback, SignIn};
use muster_core::secret::SecretString;
use serde_json::{Value, json};

use super::remote;
use crate::cli::{AuthCommand, AuthLoginArgs, AuthLogoutArgs, AuthStatusArgs};

/// Runs one `auth` subcommand.
pub(crate) fn run(command: &AuthCommand) -> anyhow::Result<ExitCode> {
    remote::block_on(async {
        match command {
            AuthCommand::Login(args) => login(args).await,
            AuthCommand::Status(args) => status(args).await,
            AuthCommand::Logout(args) => logout(args).await,
        }
    })
}

async fn login(args: &AuthLoginArgs) -> anyhow::Result<ExitCode> {
    if let Some(server) = &args.server {
        return login_to_server(args, server).await;
    }
    let endpoint = store::normalize(&remote::endpoint(&args.target)?);
    let started =
        MusterSignIn::start(&endpoint, args.callback_port, args.client_id.as_deref()).await?;
    let Some(sign_in) = started else {
        eprintln!("muster at {endpoint} does not ask for a sign-in.");
        return Ok(ExitCode::SUCCESS);
    };
    open_in_browser(sign_in.url(), args.no_browser);
    eprintln!("Waiting for the sign-in to complete...");
    sign_in.finish(Duration::from_secs(args.timeout)).await?;
    eprintln!("Signed in to muster at {endpoint}.");
    Ok(ExitCode::SUCCESS)
}

/// A sign-in to muster under way, as `muster auth login` and the IDE bridge's
/// `authenticate_muster` make it: the authorization server discovered, the CLI registered (or
/// `client_id`), a loopback listener waiting for the browser, the PKCE flow started.
pub(crate) struct MusterSignIn {
    endpoint: String,
    revocation_endpoint: Option<String>,
    loopback: Loopback,
    sign_in: SignIn,
}

impl MusterSignIn {
    /// Starts a sign-in to `endpoint` answered on the loopback `callback_port` (any free port
    /// when 0); `None` when muster asks for no sign-in.
    pub(crate) async fn start(
        endpoint: &str,
        callback_port: u16,
        client_id: Option<&str>,
    ) -> anyhow::Result<Option<Self>> {
        let endpoint = store::normalize(endpoint);
        let Some(server) = signin::discover(&endpoint).await? else {
            return Ok(None);
        };
        let loopback = Loopback::bind(callback_port).await.map_err(|e| {
            anyhow::anyhow!(
                "{e} (choose another with --callback-port or MUSTER_OAUTH_CALLBACK_PORT)"
            )
        })?;
        let redirect_uri = loopback.redirect_uri();
        let client_id = match client_id {
            Some(id) => id.to_owned(),
            None => {
                let token = std::env::var("MUSTER_OAUTH_REGISTRATION_TOKEN")
                    .ok()
                    .filter(|t| !t.is_empty())
                    .map(SecretString::from);
                server
                    .register(&redirect_uri, token.as_ref())
                    .await
                    .context(
                        "cannot register the CLI with muster: pass a registered client id with \
                         --client-id, set MUSTER_OAUTH_REGISTRATION_TOKEN, or enable \
                         aggregator.oauth.server.allowPublicClientRegistration",
                    )?
            }
        };
        let sign_in = SignIn::start(&server, &endpoint, &client_id, &redirect_uri)?;
        Ok(Some(Self {
            revocation_endpoint: server.revocation_endpoint().map(str::to_owned),
            endpoint,
            loopback,
            sign_in,
        }))
    }

    /// The URL the user opens in a browser.
    pub(crate) fn url(&self) -> &str {
        self.sign_in.authorization_url()
    }

    /// Waits up to `timeout` for the browser, redeems the code and stores the tokens.
    pub(crate) async fn finish(self, timeout: Duration) -> anyhow::Result<()> {
        let answer = self.loopback.wait(timeout).await?;
        let grant = self.sign_in.finish(&answer).await?;
        store::save(&store::StoredSignIn::new(
            &self.endpoint,
            &grant,
            self.revocation_endpoint.as_deref(),
        ))
    }
}

/// Prints `url` and, unless `no_browser`, opens it with `$BROWSER` or the desktop's opener.
pub(crate) fn open_in_browser(url: &str, no_browser: bool) {
    eprintln!("Open this URL in your browser to sign in:\n\n  {url}\n");
    if no_browser {
        return;
    }
    let opener = std::env::var("BROWSER")
        .ok()
        .filter(|b| !b.is_empty())
        .unwrap_or_else(|| {
            if cfg!(target_os = "macos") {
                "open".to_owned()
            } else {
                "xdg-open".to_owned()
            }
        });
    let started = std::process::Command::new(&opener)
        .arg(url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
    if started.is_err() {
        eprintln!("(could not start {opener}; open the URL by hand)");
    }
}

/// `core_auth_login` for `server`, then its sign-in URL in the browser.
async fn login_to_server(args: &AuthLoginArgs, server: &str) -> anyhow::Result<ExitCode> {
    let mut client = remote::connect(&args.target).await?;
    let result = client
        .call_tool("core_auth_login", json!({ "server": server }), |_| {})
        .await?;
    client.close().await;
    if result.is_error {
        return Ok(remote::failed(&result.text()));
    }
    let url = result
        .structured
        .as_ref()
        .and_then(|s| s.get("authUrl"))
        .and_then(Value::as_str);
    match url {
        Some(url) => {
            open_in_browser(url, args.no_browser);
            eprintln!("muster connects to {server} once the sign-in completes in the browser.");
        }
        None => println!("{}", result.text().trim()),
    }
    Ok(ExitCode::SUCCESS)
}

async fn status(args: &AuthStatusArgs) -> anyhow::Result<ExitCode> {
    let endpoint = store::normalize(&remote::endpoint(&args.target)?);
    match store::load(&endpoint)? {
        Some(record) => {
            println!("muster:    {endpoint}");
            println!("signed in: yes, at {}", record.issuer);
            match record.expires_at {
                Some(at) => println!("expires:   {} (access token)", at.to_rfc3339()),
                None => println!("expires:   unknown"),
            }
            println!(
                "refresh:   {}",
                if record.refresh_token.is_some() {
                    "yes"
                } else {
                    "no"
                }
            );
        }
        None => {
            println!("muster:    {endpoint}");
            println!("signed in: no");
        }
    }
    let mut client = match remote::connect(&args.target).await {
        Ok(client) => client,
        Err(e) => {
            println!("servers:   unknown ({e})");
            return Ok(ExitCode::SUCCESS);
        }
    };
    let result = client
        .call_meta("get_resource", json!({ "uri": "auth://status" }))
        .await?;
    client.close().await;
    let parsed: Value = serde_json::from_str(result.text().trim()).unwrap_or(Value::Null);
    let servers: Vec<&Value> = parsed
        .get("servers")
        .and_then(Value::as_array)
        .map(|list| {
            list.iter()
                .filter(|s| {
                    args.server
                        .as_deref()
                        .is_none_or(|wanted| s.get("name").and_then(Value::as_str) == Some(wanted))
                })
                .collect()
        })
        .unwrap_or_default();
    if servers.is_empty() {
        println!("servers:   none needs a sign-in");
        return Ok(ExitCode::SUCCESS);
    }
    println!();
    println!("{:<24} {:<16} ISSUER", "SERVER", "STATUS");
    for server in servers {
        let field = |key: &str| server.get(key).and_then(Value::as_str).unwrap_or("-");
        println!(
            "{:<24} {:<16} {}",
            field("name"),
            field("status"),
            field("issuer")
        );
    }
    Ok(ExitCode::SUCCESS)
}

async fn logout(args: &AuthLogoutArgs) -> anyhow::Result<ExitCode> {
    if let Some(server) = &args.server {
        let mut client = remote::connect(&args.target).await?;
        let result = client
            .call_tool("core_auth_logout", json!({ "server": server }), |_| {})
            .await?;
        client.close().await;
        if result.is_error {
            return Ok(remote::failed(&result.text()));
        }
        println!("{}", result.text().trim());
        return Ok(ExitCode::SUCCESS);
    }
    let records = if args.all {
        store::all()?.into_iter().map(|(_, r)| r).collect()
    } else {
        let endpoint = store::normalize(&remote::endpoint(&args.target)?);
        match store::load(&endpoint)? {
            Some(record) => vec![record],
            None => {
                eprintln!("Not signed in to muster at {endpoint}.");
                return Ok(ExitCode::SUCCESS);
            }
        }
    };
    for record in records {
        if let Some(refresh) = &record.refresh_token {
            let token = SecretString::from(refresh.clone());
            if let Err(e) = signin::revoke(
                record.revocation_endpoint.as_deref(),
                &record.client_id,
                &token,
            )
            .await
            {
                eprintln!(
                    "warning: muster at {} did not revoke the sign-in ({e}); the local tokens are removed anyway",
                    record.endpoint
                );
            }
        }
        store::remove(&record.endpoint)?;
        eprintln!("Signed out of muster at {}.", record.endpoint);
    }
    Ok(ExitCode::SUCCESS)
}

//! The CLI's sign-ins to muster servers: one file per endpoint under
//! `~/.config/muster/tokens` (directory mode 0700, files 0600, written atomically), and the
//! bearer token for an endpoint, refreshed when it is about to expire. A refresh holds a lock
//! on the endpoint's file, so two commands never spend the same rotating refresh token.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, bail};
use chrono::{DateTime, Utc};
use http::HeaderValue;
use muster_aggregator::client::signin;
use muster_core::auth::Grant;
use muster_core::secret::{ExposeSecret as _, SecretString};
use serde::{Deserialize, Serialize};
use sha2::Digest as _;

/// How long before expiry an access token is refreshed.
const REFRESH_MARGIN_SECONDS: i64 = 60;

/// One sign-in, as stored.
#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct StoredSignIn {
    /// The MCP endpoint signed in to.
    pub(crate) endpoint: String,
    /// The authorization server.
    pub(crate) issuer: String,
    /// The client id used.
    pub(crate) client_id: String,
    /// Where refreshes go.
    pub(crate) token_endpoint: String,
    /// Where sign-out revokes the refresh token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) revocation_endpoint: Option<String>,
    /// The bearer token.
    pub(crate) access_token: String,
    /// The refresh token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) refresh_token: Option<String>,
    /// The scope granted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) scope: Option<String>,
    /// When the access token expires.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) expires_at: Option<DateTime<Utc>>,
    /// When the tokens were obtained or last refreshed.
    pub(crate) obtained_at: DateTime<Utc>,
}

impl std::fmt::Debug for StoredSignIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoredSignIn")
            .field("endpoint", &self.endpoint)
            .field("issuer", &self.issuer)
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl StoredSignIn {
    /// The record of `grant`, obtained for `endpoint`.
    pub(crate) fn new(endpoint: &str, grant: &Grant, revocation_endpoint: Option<&str>) -> Self {
        Self {
            endpoint: normalize(endpoint),
            issuer: grant.issuer.clone(),
            client_id: grant.client_id.clone(),
            token_endpoint: grant.token_endpoint.clone(),
            revocation_endpoint: revocation_endpoint.map(str::to_owned),
            access_token: grant.access_token.expose_secret().to_owned(),
            refresh_token: grant
                .refresh_token
                .as_ref()
                .map(|t| t.expose_secret().to_owned()),
            scope: grant.scope.clone(),
            expires_at: grant.expires_at,
            obtained_at: grant.obtained_at,
        }
    }

    /// The grant this record holds.
    pub(crate) fn grant(&self) -> Grant {
        Grant {
            issuer: self.issuer.clone(),
            access_token: SecretString::from(self.access_token.clone()),
            refresh_token: self.refresh_token.clone().map(SecretString::from),
            scope: self.scope.clone(),
            expires_at: self.expires_at,
            token_endpoint: self.token_endpoint.clone(),
            client_id: self.client_id.clone(),
            obtained_at: self.obtained_at,
        }
    }

    /// Whether the access token has expired or will within the refresh margin.
    pub(crate) fn needs_refresh(&self) -> bool {
        self.expires_at
            .is_some_and(|at| at - chrono::Duration::seconds(REFRESH_MARGIN_SECONDS) <= Utc::now())
    }
}

/// The endpoint as sign-ins are filed: without a trailing `/`.
pub(crate) fn normalize(endpoint: &str) -> String {
    endpoint.trim().trim_end_matches('/').to_owned()
}

/// `~/.config/muster/tokens`.
pub(crate) fn directory() -> anyhow::Result<PathBuf> {
    let Some(home) = std::env::var_os("HOME") else {
        bail!("HOME is not set: cannot find ~/.config/muster/tokens");
    };
    Ok(PathBuf::from(home).join(".config/muster/tokens"))
}

/// The file of `endpoint`'s sign-in.
fn file_of(endpoint: &str) -> anyhow::Result<PathBuf> {
    let digest = sha2::Sha256::digest(normalize(endpoint).as_bytes());
    let name: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    Ok(directory()?.join(format!("{name}.json")))
}

/// The sign-in to `endpoint`, if there is one.
pub(crate) fn load(endpoint: &str) -> anyhow::Result<Option<StoredSignIn>> {
    read(&file_of(endpoint)?)
}

fn read(path: &Path) -> anyhow::Result<Option<StoredSignIn>> {
    match std::fs::read(path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .with_context(|| format!("{} is not a sign-in record", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// Every stored sign-in; unreadable files are skipped.
pub(crate) fn all() -> anyhow::Result<Vec<(PathBuf, StoredSignIn)>> {
    let dir = directory()?;
    let entries = match std::fs::read_dir(&dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", dir.display())),
    };
    let mut out = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        if path.extension().is_some_and(|e| e == "json")
            && let Ok(Some(record)) = read(&path)
        {
            out.push((path, record));
        }
    }
    out.sort_by(|a, b| a.1.endpoint.cmp(&b.1.endpoint));
    Ok(out)
}

/// Writes `record` (mode 0600, through a temporary file and a rename).
pub(crate) fn save(record: &StoredSignIn) -> anyhow::Result<()> {
    let path = file_of(&record.endpoint)?;
    let dir = directory()?;
    create_private_dir(&dir)?;
    let text = serde_json::to_vec_pretty(record).context("cannot encode the sign-in")?;
    let mut temporary = tempfile::NamedTempFile::new_in(&dir)
        .with_context(|| format!("cannot write in {}", dir.display()))?;
    // NamedTempFile creates the file with mode 0600.
    temporary
        .write_all(&text)
        .and_then(|()| temporary.as_file().sync_all())
        .with_context(|| format!("cannot write {}", path.display()))?;
    temporary
        .persist(&path)
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(())
}

/// Removes the sign-in to `endpoint`; whether there was one.
pub(crate) fn remove(endpoint: &str) -> anyhow::Result<bool> {
    let path = file_of(endpoint)?;
    match std::fs::remove_file(&path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e).with_context(|| format!("cannot remove {}", path.display())),
    }
}

fn create_private_dir(dir: &Path) -> anyhow::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt as _;
        builder.mode(0o700);
    }
    builder
        .create(dir)
        .with_context(|| format!("cannot create {}", dir.display()))
}

/// An exclusive lock on `endpoint`'s sign-in, held while it is refreshed.
fn lock(endpoint: &str) -> anyhow::Result<File> {
    let dir = directory()?;
    create_private_dir(&dir)?;
    let path = file_of(endpoint)?.with_extension("lock");
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    file.lock()
        .with_context(|| format!("cannot lock {}", path.display()))?;
    Ok(file)
}

/// The `Authorization: Bearer` header for `endpoint` (marked sensitive), from [`bearer`].
///
/// # Errors
///
/// As [`bearer`], or when the stored token is not a valid header value.
pub(crate) async fn authorization(endpoint: &str) -> anyhow::Result<Option<HeaderValue>> {
    bearer(endpoint).await?.map(|t| header_of(&t)).transpose()
}

/// The `Authorization` header for `endpoint` after muster refused `rejected` with `401`: the
/// stored token when another command already replaced the refused one, else the token of a
/// refresh (stored); none when not signed in.
///
/// # Errors
///
/// When the sign-in has no refresh token or the refresh is refused: the sign-in has ended and
/// `muster auth login` is needed.
pub(crate) async fn refreshed_authorization(
    endpoint: &str,
    rejected: &HeaderValue,
) -> anyhow::Result<Option<HeaderValue>> {
    if std::env::var_os("HOME").is_none() {
        return Ok(None);
    }
    let _lock = lock(endpoint)?;
    let Some(record) = load(endpoint)? else {
        return Ok(None);
    };
    let stored = header_of(&SecretString::from(record.access_token.clone()))?;
    if stored != rejected {
        return Ok(Some(stored));
    }
    header_of(&refresh_locked(endpoint, &record).await?).map(Some)
}

/// `Bearer <token>`, marked sensitive.
fn header_of(token: &SecretString) -> anyhow::Result<HeaderValue> {
    let mut value = HeaderValue::try_from(format!("Bearer {}", token.expose_secret()))
        .map_err(|_| anyhow::anyhow!("the stored token is not a valid header value"))?;
    value.set_sensitive(true);
    Ok(value)
}

/// The bearer token for `endpoint`: none when not signed in; refreshed (and stored) first
/// when it is about to expire.
///
/// # Errors
///
/// When the refresh is refused: the sign-in has ended and `muster auth login` is needed.
async fn bearer(endpoint: &str) -> anyhow::Result<Option<SecretString>> {
    // Without a home directory there is nowhere a sign-in could be kept.
    if std::env::var_os("HOME").is_none() {
        return Ok(None);
    }
    let Some(record) = load(endpoint)? else {
        return Ok(None);
    };
    if !record.needs_refresh() {
        return Ok(Some(SecretString::from(record.access_token)));
    }
    if record.refresh_token.is_none() {
        bail!(
            "your sign-in to muster at {endpoint} has expired: run `muster auth login --endpoint {endpoint}`"
        );
    }
    let _lock = lock(endpoint)?;
    // Another command may have refreshed it while this one waited for the lock.
    let Some(record) = load(endpoint)? else {
        return Ok(None);
    };
    if !record.needs_refresh() {
        return Ok(Some(SecretString::from(record.access_token)));
    }
    refresh_locked(endpoint, &record).await.map(Some)
}

/// Refreshes `record`, the sign-in to `endpoint`, and stores the new tokens; the new access
/// token. The caller holds the endpoint's [`lock`].
async fn refresh_locked(endpoint: &str, record: &StoredSignIn) -> anyhow::Result<SecretString> {
    if record.refresh_token.is_none() {
        bail!(
            "your sign-in to muster at {endpoint} has ended: run `muster auth login --endpoint {endpoint}`"
        );
    }
    let fresh = match signin::refresh(&record.grant()).await {
        Ok(fresh) => fresh,
        Err(e) => bail!(
            "your sign-in to muster at {endpoint} has ended ({e}): run `muster auth login --endpoint {endpoint}`"
        ),
    };
    let updated = StoredSignIn::new(endpoint, &fresh, record.revocation_endpoint.as_deref());
    save(&updated)?;
    Ok(fresh.access_token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_shows_no_token() {
        let record = StoredSignIn {
            endpoint: "http://x/mcp".into(),
            issuer: "http://x".into(),
            client_id: "c".into(),
            token_endpoint: "http://x/oauth/token".into(),
            revocation_endpoint: None,
            access_token: "access-secret-1".into(),
            refresh_token: Some("refresh-secret-1".into()),
            scope: None,
            expires_at: None,
            obtained_at: Utc::now(),
        };
        let text = format!("{record:?}");
        assert!(!text.contains("secret"), "{text}");
        assert!(!record.needs_refresh());
        assert_eq!(normalize("http://x/mcp/ "), "http://x/mcp");
    }
}

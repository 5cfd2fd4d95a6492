//! The signing keys of a trusted issuer: fetched from its JWKS URL, kept for a while, and
//! fetched again when a token names a key not seen yet (key rotation), at most every few
//! seconds so unknown key ids cannot make muster hammer the issuer.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use jsonwebtoken::jwk::JwkSet;
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::fetch;

/// How long fetched keys are used before they are fetched again.
const KEYS_TTL: Duration = Duration::from_secs(600);
/// The shortest pause between two fetches caused by an unknown key id.
const REFETCH_PAUSE: Duration = Duration::from_secs(10);

/// The keys of one issuer.
#[derive(Debug)]
pub(crate) struct Jwks {
    url: String,
    allow_private: bool,
    http: reqwest::Client,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    keys: Option<Arc<JwkSet>>,
    fetched: Option<Instant>,
}

impl Jwks {
    /// The keys at `url`; `allow_private` permits a URL resolving to a non-public address.
    pub(crate) fn new(url: String, allow_private: bool, http: reqwest::Client) -> Self {
        Self {
            url,
            allow_private,
            http,
            state: Mutex::default(),
        }
    }

    /// The key set, fetched again when it is older than its lifetime, or when `kid` is not
    /// in it and the last fetch is a few seconds old.
    pub(crate) async fn keys(&self, kid: Option<&str>) -> Result<Arc<JwkSet>, String> {
        let mut state = self.state.lock().await;
        let age = state.fetched.map(|t| t.elapsed());
        let stale = age.is_none_or(|a| a >= KEYS_TTL);
        let missing = match (&state.keys, kid) {
            (Some(keys), Some(kid)) => keys.find(kid).is_none(),
            (None, _) => true,
            (Some(_), None) => false,
        };
        let may_refetch = age.is_none_or(|a| a >= REFETCH_PAUSE);
        if stale || (missing && may_refetch) {
            match self.fetch().await {
                Ok(keys) => {
                    state.keys = Some(Arc::new(keys));
                    state.fetched = Some(Instant::now());
                }
                Err(e) if state.keys.is_none() || stale => return Err(e),
                Err(e) => tracing::warn!(url = %self.url, error = %e, "refreshing JWKS failed"),
            }
        }
        state
            .keys
            .clone()
            .ok_or_else(|| "the issuer's keys are not available".to_owned())
    }

    async fn fetch(&self) -> Result<JwkSet, String> {
        if !self.allow_private {
            refuse_private(&self.url).await.map_err(|e| {
                format!("{e}; set allowPrivateIPJWKS on the trusted issuer to allow it")
            })?;
        }
        fetch::json(self.http.get(&self.url))
            .await
            .map_err(|e| format!("fetching JWKS from {}: {e}", self.url))
    }
}

/// Refuses a URL (a JWKS or a client metadata document) whose host resolves to a loopback, private, link-local or otherwise
/// non-public address.
pub(crate) async fn refuse_private(url: &str) -> Result<(), String> {
    let parsed = url::Url::parse(url).map_err(|e| format!("URL {url}: {e}"))?;
    let host = parsed
        .host_str()
        .ok_or_else(|| format!("URL {url} has no host"))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_owned();
    let port = parsed.port_or_known_default().unwrap_or(443);
    let addrs: Vec<IpAddr> = match host.parse::<IpAddr>() {
        Ok(ip) => vec![ip],
        Err(_) => tokio::net::lookup_host((host.as_str(), port))
            .await
            .map_err(|e| format!("URL {url}: cannot resolve {host}: {e}"))?
            .map(|a| a.ip())
            .collect(),
    };
    if let Some(ip) = addrs.iter().find(|ip| !is_public(**ip)) {
        return Err(format!("URL {url} resolves to the non-public address {ip}"));
    }
    Ok(())
}

/// Whether `ip` is a globally routable address.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            !(v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_broadcast()
                || v4.is_documentation()
                || a == 0
                || (a == 100 && (64..128).contains(&b)))
        }
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_public(IpAddr::V4(v4));
            }
            let first = v6.segments()[0];
            !(v6.is_loopback()
                || v6.is_unspecified()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_addresses() {
        for private in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fd00::1",
            "fe80::1",
            "::ffff:10.0.0.1",
        ] {
            assert!(!is_public(private.parse().unwrap()), "{private}");
        }
        for public in ["8.8.8.8", "2001:4860:4860::8888"] {
            assert!(is_public(public.parse().unwrap()), "{public}");
        }
    }

    #[tokio::test]
    async fn loopback_jwks_is_refused_unless_allowed() {
        let jwks = Jwks::new(
            "http://127.0.0.1:1/jwks".into(),
            false,
            reqwest::Client::new(),
        );
        let err = jwks.keys(None).await.unwrap_err();
        assert!(err.contains("allowPrivateIPJWKS"), "{err}");
    }
}

//! The OAuth parts of `muster serve`: the extra CA certificates, and muster's OAuth server
//! when `aggregator.oauth.server.enabled` (or `--oauth-server`) asks for it.

use std::sync::Arc;

use anyhow::Context as _;
use muster_aggregator::oauth_server::OAuthServer;
use muster_aggregator::server::FrontDoorAuth;
use muster_aggregator::services::Services;
use muster_aggregator::tls::ExtraRoots;
use muster_core::config::MusterConfig;

use super::expand_home;
use crate::cli::ServeArgs;

/// Applies the OAuth flags of `args` to `config`.
pub(super) fn apply_flags(args: &ServeArgs, config: &mut MusterConfig) {
    let server = &mut config.aggregator.oauth.server;
    if args.oauth_server {
        server.enabled = true;
    }
    if let Some(url) = &args.oauth_server_base_url {
        server.base_url.clone_from(url);
    }
    if let Some(file) = &args.extra_ca_file {
        config.aggregator.extra_ca_file = Some(file.clone());
    }
}

/// The extra CA certificates of `aggregator.extraCaFile` (none when unset).
pub(super) fn extra_roots(config: &MusterConfig) -> anyhow::Result<ExtraRoots> {
    match &config.aggregator.extra_ca_file {
        None => Ok(ExtraRoots::default()),
        Some(path) => {
            let roots = ExtraRoots::from_pem_file(&expand_home(path))?;
            tracing::info!(certificates = roots.len(), "extra CA certificates trusted");
            Ok(roots)
        }
    }
}

/// muster's OAuth server, when enabled.
pub(super) fn front_door(
    config: &MusterConfig,
    roots: &ExtraRoots,
) -> anyhow::Result<Option<OAuthServer>> {
    let settings = &config.aggregator.oauth.server;
    if !settings.enabled {
        return Ok(None);
    }
    let server = OAuthServer::new(settings, roots).context("cannot start the OAuth server")?;
    tracing::info!(issuer = %server.issuer(), "MCP endpoints require OAuth bearer tokens");
    Ok(Some(server))
}

/// `server` as the front door, asking its provider at each sign-in for the audiences the
/// servers of `services` that receive the caller's identity require.
pub(super) fn with_required_audiences(
    server: OAuthServer,
    services: &Services,
) -> Arc<dyn FrontDoorAuth> {
    let services = services.clone();
    server.request_audiences_from(Box::new(move || services.required_audiences()));
    Arc::new(server)
}

//! The JSON-RPC front door: any body POSTed to `/mcp` (as a new client, then inside an
//! initialized session) gets an HTTP answer, never a panic or a hang.

#![no_main]

use std::sync::LazyLock;

use axum::Router;
use axum::body::Body;
use axum::http::{Request, header};
use http_body_util::BodyExt as _;
use libfuzzer_sys::fuzz_target;
use muster_aggregator::registry::Registry;
use muster_aggregator::server::Aggregator;
use tower::ServiceExt as _;

struct Door {
    runtime: tokio::runtime::Runtime,
    router: Router,
    session: Option<String>,
}

static DOOR: LazyLock<Door> = LazyLock::new(|| {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let router = runtime.block_on(async { Aggregator::builder(Registry::new()).build().router() });
    let session = runtime.block_on(initialize(&router));
    Door {
        runtime,
        router,
        session,
    }
});

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}"#;

fn request(body: Vec<u8>, session: Option<&str>) -> Request<Body> {
    let mut builder = Request::post("/mcp")
        .header(header::HOST, "localhost")
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::ACCEPT, "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18");
    if let Some(session) = session {
        builder = builder.header("mcp-session-id", session);
    }
    builder.body(Body::from(body)).expect("a request")
}

/// Opens a session and says `initialized`, so that fuzzed messages reach the handlers.
async fn initialize(router: &Router) -> Option<String> {
    let response = router
        .clone()
        .oneshot(request(INITIALIZE.as_bytes().to_vec(), None))
        .await
        .ok()?;
    let session = response
        .headers()
        .get("mcp-session-id")?
        .to_str()
        .ok()?
        .to_owned();
    let _ = response.into_body().collect().await;
    let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_vec();
    let response = router
        .clone()
        .oneshot(request(initialized, Some(&session)))
        .await
        .ok()?;
    let _ = response.into_body().collect().await;
    Some(session)
}

async fn post(router: &Router, body: Vec<u8>, session: Option<&str>) {
    let Ok(response) = router.clone().oneshot(request(body, session)).await else {
        return;
    };
    // A request gets its answer on the response stream; reading it to the end must finish.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), response.into_body().collect())
        .await
        .expect("the answer ends");
}

fuzz_target!(|data: &[u8]| {
    let door = &*DOOR;
    door.runtime.block_on(async {
        post(&door.router, data.to_vec(), None).await;
        post(&door.router, data.to_vec(), door.session.as_deref()).await;
    });
});

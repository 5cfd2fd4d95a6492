//! The loopback redirect of a native sign-in (RFC 8252 §7.3): a listener on `127.0.0.1`
//! that takes one `GET /callback?…` from the browser, answers it with a short page and hands
//! its query parameters over. Anything else gets a 404; a request larger than 16 KiB is
//! dropped.

use std::collections::BTreeMap;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

use super::error::SignInError;

/// The path the browser is sent back to.
const CALLBACK_PATH: &str = "/callback";
/// The largest request head read.
const MAX_REQUEST_BYTES: usize = 16 * 1024;
/// How long one browser connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A listener for the browser's answer to one sign-in.
#[derive(Debug)]
pub struct Loopback {
    listener: TcpListener,
    port: u16,
}

impl Loopback {
    /// Listens on `127.0.0.1:port` (any free port when 0).
    ///
    /// # Errors
    ///
    /// When the port is taken or cannot be bound.
    pub async fn bind(port: u16) -> Result<Self, SignInError> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.map_err(|e| {
            SignInError::Callback(format!(
                "cannot listen on 127.0.0.1:{port} for the sign-in's answer: {e}"
            ))
        })?;
        let port = listener
            .local_addr()
            .map_err(|e| SignInError::Callback(format!("the listener has no address: {e}")))?
            .port();
        Ok(Self { listener, port })
    }

    /// `http://127.0.0.1:<port>/callback`.
    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    /// Waits up to `timeout` for the browser's `GET /callback`; its query parameters.
    ///
    /// # Errors
    ///
    /// When nothing comes back in time.
    pub async fn wait(self, timeout: Duration) -> Result<BTreeMap<String, String>, SignInError> {
        let answer = async {
            loop {
                let Ok((stream, _)) = self.listener.accept().await else {
                    // Out of descriptors, say: wait instead of spinning.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                if let Some(query) = serve(stream).await {
                    return query;
                }
            }
        };
        tokio::time::timeout(timeout, answer).await.map_err(|_| {
            SignInError::Callback(format!(
                "no answer from the browser within {} s",
                timeout.as_secs()
            ))
        })
    }
}

/// Reads one request; answers it; the query of a `GET /callback`.
async fn serve(mut stream: TcpStream) -> Option<BTreeMap<String, String>> {
    let head = tokio::time::timeout(READ_TIMEOUT, read_head(&mut stream))
        .await
        .ok()??;
    let target = head
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("GET "))
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_default();
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if path != CALLBACK_PATH {
        let _ = respond(&mut stream, "404 Not Found", "Not found.").await;
        return None;
    }
    let params: BTreeMap<String, String> = form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let page = if params.contains_key("error") {
        "The sign-in to muster failed. The terminal says why; you can close this window."
    } else {
        "Signed in to muster. You can close this window and return to the terminal."
    };
    let _ = respond(&mut stream, "200 OK", page).await;
    Some(params)
}

/// The request line and headers, up to the blank line.
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut buffer = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    while !buffer.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 || buffer.len() + n > MAX_REQUEST_BYTES {
            return None;
        }
        buffer.extend_from_slice(&chunk[..n]);
    }
    String::from_utf8(buffer).ok()
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) -> std::io::Result<()> {
    let body = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>muster</title></head>\
         <body><p>{text}</p></body></html>"
    );
    let response = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/html; charset=utf-8\r\ncontent-length: {}\r\n\
         cache-control: no-store\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn takes_the_callback_query_and_ignores_other_paths() {
        let loopback = Loopback::bind(0).await.unwrap();
        let uri = loopback.redirect_uri();
        let port: u16 = uri
            .trim_start_matches("http://127.0.0.1:")
            .trim_end_matches("/callback")
            .parse()
            .unwrap();
        let waiting = tokio::spawn(loopback.wait(Duration::from_secs(10)));
        let mut other = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        other
            .write_all(b"GET /favicon.ico HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut reply = String::new();
        other.read_to_string(&mut reply).await.unwrap();
        assert!(reply.starts_with("HTTP/1.1 404"), "{reply}");
        let mut browser = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
        browser
            .write_all(b"GET /callback?code=c%2B1&state=s HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let mut reply = String::new();
        browser.read_to_string(&mut reply).await.unwrap();
        assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
        let query = waiting.await.unwrap().unwrap();
        assert_eq!(query["code"], "c+1");
        assert_eq!(query["state"], "s");
    }

    #[tokio::test]
    async fn gives_up_after_the_timeout() {
        let loopback = Loopback::bind(0).await.unwrap();
        let error = loopback.wait(Duration::from_millis(50)).await.unwrap_err();
        assert!(error.to_string().contains("no answer"), "{error}");
    }
}

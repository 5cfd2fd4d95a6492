//! `tcp-relay`, the floor rows of `tests/benches/transport_variants.py`: it relays bytes both
//! ways unchanged, a half-close and a close on either side reach the other, every accepted
//! connection gets its own upstream connection, and a legacy SSE session works through it
//! as it does directly.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::Duration;

use muster_tests::{eventually, free_port};

const RELAY: &str = env!("CARGO_BIN_EXE_tcp-relay");
const SSE_BENCH: &str = env!("CARGO_BIN_EXE_sse-bench");

/// A running child process, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `program args` and waits until `port` accepts connections.
fn start(program: &str, args: &[&str], port: u16) -> Running {
    let child = Command::new(program)
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("starts");
    let running = Running(child);
    eventually("listening", Duration::from_secs(10), || {
        TcpStream::connect(("127.0.0.1", port)).ok()
    })
    .expect("listening");
    running
}

/// A relay from a free port to `upstream`, and that port.
fn relay_to(upstream: u16) -> (Running, u16) {
    let port = free_port().expect("free port");
    let listen = format!("127.0.0.1:{port}");
    let to = format!("127.0.0.1:{upstream}");
    (
        start(RELAY, &["--listen", &listen, "--to", &to], port),
        port,
    )
}

#[test]
fn bytes_go_both_ways_unchanged_and_a_half_close_reaches_the_server() {
    let upstream = TcpListener::bind("127.0.0.1:0").expect("bind");
    let upstream_port = upstream.local_addr().expect("addr").port();
    // The relay's readiness probe is a connection of its own; the server answers each
    // connection's bytes reversed once its client has finished writing.
    let server = thread::spawn(move || {
        let mut answered = 0;
        for stream in upstream.incoming() {
            let mut stream = stream.expect("accepted");
            let mut request = Vec::new();
            stream
                .read_to_end(&mut request)
                .expect("read to the half-close");
            if request.is_empty() {
                continue;
            }
            request.reverse();
            stream.write_all(&request).expect("answer");
            answered += 1;
            if answered == 2 {
                return;
            }
        }
    });
    let (_relay, port) = relay_to(upstream_port);

    for size in [5, 300_000] {
        let sent: Vec<u8> = (0..size).map(|i| (i % 251) as u8).collect();
        let mut client = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        client
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("timeout");
        client.write_all(&sent).expect("send");
        client.shutdown(Shutdown::Write).expect("half-close");
        let mut received = Vec::new();
        client
            .read_to_end(&mut received)
            .expect("read until the server's close reaches the client");
        let mut expected = sent.clone();
        expected.reverse();
        assert_eq!(received.len(), expected.len());
        assert!(received == expected, "{size} bytes came back changed");
    }
    server.join().expect("server thread");
}

#[test]
fn a_legacy_sse_session_works_through_the_relay() {
    let server_port = free_port().expect("free port");
    let port_arg = server_port.to_string();
    let _server = start(
        SSE_BENCH,
        &["serve", "--port", &port_arg, "--threads", "1"],
        server_port,
    );
    let (_relay, port) = relay_to(server_port);
    let dir = tempfile::tempdir().expect("tempdir");
    let report = dir.path().join("report.json");
    let out = Command::new(SSE_BENCH)
        .args(["load", "--url", &format!("http://127.0.0.1:{port}/sse")])
        .args(["--warmup", "0", "-n", "20", "-c", "4", "--timeout", "5"])
        .args(["--args", r#"{"message":"relayed"}"#, "--expect", "relayed"])
        .arg("--json")
        .arg(&report)
        .output()
        .expect("sse-bench load runs");
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&report).expect("report")).expect("JSON");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{report:#} {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(report["ok"], 20, "{report:#}");
    assert_eq!(report["failed"], 0, "{report:#}");
}

//! `tcp-relay`: the floor of any proxy on the call path. It relays each accepted
//! connection's bytes to a new connection to one upstream address and back, without
//! reading them, on tokio's current-thread runtime (the runtime `muster serve` uses on one
//! CPU). Every byte still crosses two loopback sockets and wakes the relay twice per
//! exchange, as through muster; what it costs per call is what no proxy in that place can
//! go below. `tests/benches/transport_variants.py` measures it beside muster.
//!
//! ```text
//! tcp-relay --listen 127.0.0.1:18300 --to 127.0.0.1:18100
//! ```

use std::net::SocketAddr;
use std::process::ExitCode;

use clap::Parser;
use tokio::net::{TcpListener, TcpStream};

/// Relays TCP connections to one upstream address.
#[derive(Debug, Parser)]
#[command(name = "tcp-relay", version)]
struct Cli {
    /// The address to accept connections on.
    #[arg(long)]
    listen: SocketAddr,
    /// The address each accepted connection is relayed to.
    #[arg(long)]
    to: SocketAddr,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("tcp-relay: cannot start the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(relay(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tcp-relay: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Accepts connections on `cli.listen` and relays each to `cli.to` until it closes.
async fn relay(cli: Cli) -> std::io::Result<()> {
    let listener = TcpListener::bind(cli.listen).await?;
    let upstream = cli.to;
    loop {
        let (client, _) = listener.accept().await?;
        tokio::spawn(async move {
            if let Err(e) = pair(client, upstream).await {
                eprintln!("tcp-relay: {e}");
            }
        });
    }
}

/// Relays one client connection to a new connection to `upstream`, both ways.
async fn pair(mut client: TcpStream, upstream: SocketAddr) -> std::io::Result<()> {
    let mut server = TcpStream::connect(upstream).await?;
    client.set_nodelay(true)?;
    server.set_nodelay(true)?;
    tokio::io::copy_bidirectional(&mut client, &mut server).await?;
    Ok(())
}

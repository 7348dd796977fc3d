//! The harness's own daemon connection to a worker's hub: one `daemon.hello`
//! with a chosen token, and what the hub answered.
//!
//! Protocol (SDK `langbot_plugin.api.agent_tools.daemon`,
//! `AgentRuntimeDaemonHub._handle_connection`): the client sends
//! `{"type": "daemon.hello", "daemon_id", "token", "metadata"}`; the hub
//! answers `{"type": "daemon.ready"}` or closes with code 1008 ("invalid
//! token"). Connections use [`tungstenite`] over a plain loopback TCP stream.

use serde::Serialize;
use std::net::TcpStream;
use std::time::Duration;
use tungstenite::protocol::Message;

/// How long one probe may take, per read or write.
const PROBE_TIMEOUT: Duration = Duration::from_secs(15);

/// What a hub did with one `daemon.hello`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum HelloOutcome {
    /// The hub answered `daemon.ready`: the token was accepted.
    Accepted {
        /// The answer's `type`.
        reply: String,
    },
    /// The hub closed the connection with a close frame.
    Refused {
        /// The close code (1008 for a bad token).
        close_code: u16,
        /// The close reason.
        reason: String,
    },
    /// Anything else: no connection, a reset, an unexpected message.
    Error {
        /// What happened.
        error: String,
    },
}

/// Connects to `ws://127.0.0.1:{port}`, sends a hello with `daemon_id` and
/// `token`, and reports the hub's answer. An accepted probe connection is
/// closed politely (code 1000).
pub fn hello(port: u16, daemon_id: &str, token: &str) -> HelloOutcome {
    match hello_inner(port, daemon_id, token) {
        Ok(o) => o,
        Err(error) => HelloOutcome::Error { error },
    }
}

fn hello_inner(port: u16, daemon_id: &str, token: &str) -> Result<HelloOutcome, String> {
    let stream = TcpStream::connect(("127.0.0.1", port))
        .map_err(|e| format!("connect 127.0.0.1:{port}: {e}"))?;
    stream
        .set_read_timeout(Some(PROBE_TIMEOUT))
        .and_then(|()| stream.set_write_timeout(Some(PROBE_TIMEOUT)))
        .map_err(|e| format!("socket options: {e}"))?;
    let url = format!("ws://127.0.0.1:{port}/");
    let (mut ws, _response) =
        tungstenite::client::client(url.as_str(), stream).map_err(|e| format!("handshake: {e}"))?;
    let hello = serde_json::json!({
        "type": "daemon.hello",
        "daemon_id": daemon_id,
        "token": token,
        "metadata": {"probe": "verify-coding-candidates worker-isolation"},
    });
    ws.send(Message::text(hello.to_string()))
        .map_err(|e| format!("send hello: {e}"))?;
    loop {
        match ws.read() {
            Ok(Message::Text(text)) => {
                let reply: serde_json::Value = serde_json::from_str(text.as_str())
                    .map_err(|e| format!("reply is not JSON ({e}): {}", text.as_str()))?;
                let kind = reply["type"].as_str().unwrap_or("").to_string();
                let _ = ws.close(None);
                // Drain until the close handshake completes (bounded by the timeout).
                while ws.read().is_ok() {}
                return Ok(if kind == "daemon.ready" {
                    HelloOutcome::Accepted { reply: kind }
                } else {
                    HelloOutcome::Error {
                        error: format!("unexpected reply: {reply}"),
                    }
                });
            }
            Ok(Message::Close(frame)) => {
                let (close_code, reason) = frame
                    .map(|f| (u16::from(f.code), f.reason.as_str().to_string()))
                    .unwrap_or((1005, String::new()));
                while ws.read().is_ok() {}
                return Ok(HelloOutcome::Refused { close_code, reason });
            }
            Ok(_) => continue,
            Err(e) => return Err(format!("read: {e}")),
        }
    }
}

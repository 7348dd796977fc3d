//! The host side of the SDK runtime's control protocol, over a real
//! WebSocket (blocking `tungstenite`, plain `ws://` on loopback, no TLS).
//!
//! Wire facts, from `langbot-plugin` 0.6.0b5 and re-observed by the
//! `discovery-rpc` gate on every run:
//! - the control server (`langbot_plugin.runtime.io.controllers.ws.server`)
//!   answers `GET /healthz` with a JSON body and refuses a WebSocket upgrade
//!   whose `X-LangBot-Plugin-Runtime-Token` header differs from
//!   `$LANGBOT_PLUGIN_RUNTIME_CONTROL_TOKEN` with HTTP 401;
//! - a request is `{seq_id, action, data, context?}` and a response
//!   `{seq_id, code (0 ok), message, data, chunk_status}`; a streamed
//!   response repeats `seq_id` with `chunk_status: "continue"` and ends with
//!   `"end"` (`langbot_plugin.runtime.io.handler.Handler`, `entities.io.resp`);
//! - either side may send requests: the runtime calls the host back (for
//!   example `get_plugin_settings`) on the same connection;
//! - files travel as `__file_chunk` requests of at most 16 KiB of raw bytes,
//!   base64-encoded (`FILE_CHUNK_LENGTH` in `runtime.io.handler`).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use std::fs::File;
use std::io::{BufWriter, ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::Path;
use std::time::{Duration, Instant};
use tungstenite::client::IntoClientRequest;
use tungstenite::handshake::HandshakeError;
use tungstenite::protocol::WebSocket;
use tungstenite::Message;

/// Header carrying the control token (`runtime.security.PLUGIN_RUNTIME_CONTROL_TOKEN_HEADER`).
pub const TOKEN_HEADER: &str = "X-LangBot-Plugin-Runtime-Token";

/// Raw bytes per `__file_chunk` (`runtime.io.handler.FILE_CHUNK_LENGTH`).
pub const FILE_CHUNK_LENGTH: usize = 16 * 1024;

/// How long one blocking read waits before the client checks its deadlines.
const READ_SLICE: Duration = Duration::from_millis(200);

/// One response (or one chunk of a streamed response) from the runtime.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Response {
    /// The request's sequence id.
    pub seq_id: Option<i64>,
    /// 0 on success.
    pub code: i64,
    /// `success`, or the runtime's error text (`ValueError: ...`).
    pub message: String,
    /// The payload.
    #[serde(default)]
    pub data: Value,
    /// `continue` or `end` for streamed responses.
    #[serde(default)]
    pub chunk_status: Option<String>,
}

impl Response {
    /// True when `code` is 0.
    pub fn ok(&self) -> bool {
        self.code == 0
    }
}

/// A request the runtime sent to the host, as answered.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct InboundCall {
    /// The action, e.g. `get_plugin_settings`.
    pub action: String,
    /// `context.installation_uuid` of the request, if any.
    pub installation_uuid: Option<String>,
    /// Whether the host answered with code 0.
    pub answered_ok: bool,
}

/// Answers the runtime's requests: `Ok(data)` becomes a code-0 response,
/// `Err(message)` a code-1 response.
pub type InboundHandler = Box<dyn FnMut(&str, &Value, Option<&Value>) -> Result<Value, String>>;

/// The JSON-lines transcript of one connection: every message in both
/// directions with its time since the connection opened, `chunk_base64`
/// payloads replaced by their length (archive bytes are never copied into
/// the transcript).
pub struct Transcript {
    out: BufWriter<File>,
    started: Instant,
}

impl Transcript {
    /// Creates (truncates) `path`.
    ///
    /// # Errors
    /// When the file cannot be created.
    pub fn create(path: &Path) -> std::io::Result<Self> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        Ok(Self {
            out: BufWriter::new(File::create(path)?),
            started: Instant::now(),
        })
    }

    /// Appends one record; `direction` is `host->runtime`, `runtime->host`
    /// or a note such as `connect`.
    pub fn record(&mut self, direction: &str, message: &Value) {
        let line = json!({
            "t_ms": self.started.elapsed().as_millis() as u64,
            "direction": direction,
            "message": elide(message),
        });
        let _ = writeln!(self.out, "{line}");
        let _ = self.out.flush();
    }
}

/// `message` with every `chunk_base64` string replaced by a note of its length.
pub fn elide(message: &Value) -> Value {
    match message {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = match (k.as_str(), v) {
                        ("chunk_base64", Value::String(s)) => {
                            Value::String(format!("<elided: {} base64 characters>", s.len()))
                        }
                        _ => elide(v),
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(elide).collect()),
        other => other.clone(),
    }
}

/// Why a WebSocket connection could not be opened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConnectError {
    /// The server answered the upgrade with an HTTP status (401 for a bad token).
    Refused {
        /// HTTP status code.
        status: u16,
        /// Response body, lossy UTF-8, at most 200 characters.
        body: String,
    },
    /// TCP or protocol failure.
    Failed(String),
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConnectError::Refused { status, body } => {
                write!(f, "upgrade refused with HTTP {status} ({body})")
            }
            ConnectError::Failed(m) => write!(f, "{m}"),
        }
    }
}

/// Opens `ws://127.0.0.1:<port>/` presenting `token` in [`TOKEN_HEADER`].
///
/// # Errors
/// [`ConnectError::Refused`] with the HTTP status when the server refuses the
/// upgrade, [`ConnectError::Failed`] otherwise.
pub fn connect(
    port: u16,
    token: &str,
    timeout: Duration,
) -> Result<WebSocket<TcpStream>, ConnectError> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let stream = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| ConnectError::Failed(format!("TCP connect to {addr}: {e}")))?;
    stream
        .set_read_timeout(Some(timeout))
        .and_then(|()| stream.set_write_timeout(Some(timeout)))
        .map_err(|e| ConnectError::Failed(format!("socket options: {e}")))?;
    let mut request = format!("ws://127.0.0.1:{port}/")
        .into_client_request()
        .map_err(|e| ConnectError::Failed(format!("request: {e}")))?;
    let value = token
        .parse()
        .map_err(|_| ConnectError::Failed("token is not a valid header value".into()))?;
    request.headers_mut().insert(TOKEN_HEADER, value);
    match tungstenite::client(request, stream) {
        Ok((ws, _response)) => Ok(ws),
        Err(HandshakeError::Failure(tungstenite::Error::Http(response))) => {
            let body = response
                .body()
                .as_deref()
                .map(|b| String::from_utf8_lossy(b).chars().take(200).collect())
                .unwrap_or_default();
            Err(ConnectError::Refused {
                status: response.status().as_u16(),
                body,
            })
        }
        Err(HandshakeError::Failure(e)) => Err(ConnectError::Failed(format!("handshake: {e}"))),
        Err(HandshakeError::Interrupted(_)) => Err(ConnectError::Failed(format!(
            "handshake: no answer within {} ms",
            timeout.as_millis()
        ))),
    }
}

/// `GET /healthz` on `127.0.0.1:<port>`: the HTTP status and body.
///
/// # Errors
/// A sentence when nothing answers, the answer is not HTTP, or `timeout`
/// elapses.
pub fn healthz(port: u16, timeout: Duration) -> Result<(u16, String), String> {
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&addr, timeout).map_err(|e| format!("{e}"))?;
    stream
        .set_read_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    stream
        .set_write_timeout(Some(timeout))
        .map_err(|e| e.to_string())?;
    write!(
        stream,
        "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| format!("send: {e}"))?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match stream.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                if response_complete(&buf) || buf.len() > 1 << 20 {
                    break;
                }
            }
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Err(format!(
                    "no complete answer within {} ms",
                    timeout.as_millis()
                ))
            }
            Err(e) => return Err(format!("read: {e}")),
        }
    }
    let text = String::from_utf8_lossy(&buf);
    let (head, body) = text
        .split_once("\r\n\r\n")
        .ok_or_else(|| format!("not an HTTP response: {:?}", truncate(&text, 120)))?;
    let status = head
        .lines()
        .next()
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("no HTTP status line in {:?}", truncate(head, 120)))?;
    Ok((status, body.trim().to_string()))
}

fn response_complete(buf: &[u8]) -> bool {
    let text = String::from_utf8_lossy(buf);
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        return false;
    };
    let length = head.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        k.trim()
            .eq_ignore_ascii_case("content-length")
            .then(|| v.trim().parse::<usize>().ok())
            .flatten()
    });
    matches!(length, Some(n) if body.len() >= n)
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// An open control connection acting as the LangBot host.
pub struct HostClient {
    ws: WebSocket<TcpStream>,
    next_seq: i64,
    transcript: Transcript,
    handler: InboundHandler,
    /// Every request the runtime sent to the host, in order.
    pub inbound: Vec<InboundCall>,
}

impl HostClient {
    /// Wraps an open connection; `handler` answers the runtime's requests.
    ///
    /// # Errors
    /// When the socket's read timeout cannot be set.
    pub fn new(
        ws: WebSocket<TcpStream>,
        transcript: Transcript,
        handler: InboundHandler,
    ) -> Result<Self, String> {
        ws.get_ref()
            .set_read_timeout(Some(READ_SLICE))
            .map_err(|e| format!("socket read timeout: {e}"))?;
        Ok(Self {
            ws,
            next_seq: 1,
            transcript,
            handler,
            inbound: Vec::new(),
        })
    }

    /// Notes something in the transcript that is not a message.
    pub fn note(&mut self, what: &str, detail: Value) {
        self.transcript.record(what, &detail);
    }

    /// Sends one request and waits for its response, answering the runtime's
    /// own requests meanwhile.
    ///
    /// # Errors
    /// A sentence naming the action when the connection fails or `timeout`
    /// elapses; a code-1 response is returned, not an error.
    pub fn call(
        &mut self,
        action: &str,
        data: Value,
        context: Option<&Value>,
        timeout: Duration,
    ) -> Result<Response, String> {
        let seq = self.send_request(action, data, context)?;
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(r) = self.read_until_response(seq, deadline, action)? {
                return Ok(r);
            }
        }
    }

    /// Sends one request whose response is streamed, and collects every chunk
    /// until `chunk_status: "end"` or an error response.
    ///
    /// # Errors
    /// As [`HostClient::call`].
    pub fn call_stream(
        &mut self,
        action: &str,
        data: Value,
        context: Option<&Value>,
        timeout: Duration,
    ) -> Result<Vec<Response>, String> {
        let seq = self.send_request(action, data, context)?;
        let deadline = Instant::now() + timeout;
        let mut chunks = Vec::new();
        loop {
            if let Some(r) = self.read_until_response(seq, deadline, action)? {
                let end = !r.ok() || r.chunk_status.as_deref() == Some("end");
                chunks.push(r);
                if end {
                    return Ok(chunks);
                }
            }
        }
    }

    /// Answers the runtime's requests for `duration` (used while waiting for
    /// a plugin to start: the runtime calls `get_plugin_settings` then).
    ///
    /// # Errors
    /// When the connection fails.
    pub fn pump(&mut self, duration: Duration) -> Result<(), String> {
        let deadline = Instant::now() + duration;
        while Instant::now() < deadline && !crate::interrupt::requested() {
            if let Some(msg) = self.read_message()? {
                self.dispatch(msg, None)?;
            }
        }
        Ok(())
    }

    /// Sends a close frame and drops the connection.
    pub fn close(mut self) {
        let _ = self.ws.close(None);
        let _ = self.ws.flush();
        self.transcript.record("close", &Value::Null);
    }

    fn send_request(
        &mut self,
        action: &str,
        data: Value,
        context: Option<&Value>,
    ) -> Result<i64, String> {
        let seq = self.next_seq;
        self.next_seq += 1;
        let mut request = json!({"seq_id": seq, "action": action, "data": data});
        if let Some(ctx) = context {
            request["context"] = ctx.clone();
        }
        self.transcript.record("host->runtime", &request);
        self.ws
            .send(Message::text(request.to_string()))
            .map_err(|e| format!("{action}: sending the request failed: {e}"))?;
        Ok(seq)
    }

    /// Reads until the response to `seq` arrives (`Some`) or one message was
    /// handled (`None`); errors at the deadline.
    fn read_until_response(
        &mut self,
        seq: i64,
        deadline: Instant,
        action: &str,
    ) -> Result<Option<Response>, String> {
        loop {
            if crate::interrupt::requested() {
                return Err(format!(
                    "{action}: interrupted while waiting for the runtime"
                ));
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "{action}: no response from the runtime before the deadline"
                ));
            }
            if let Some(msg) = self.read_message()? {
                return self.dispatch(msg, Some(seq));
            }
        }
    }

    fn dispatch(&mut self, msg: Value, want: Option<i64>) -> Result<Option<Response>, String> {
        if msg.get("action").is_some() {
            self.answer(&msg)?;
            return Ok(None);
        }
        if msg.get("code").is_some() {
            let response: Response = serde_json::from_value(msg)
                .map_err(|e| format!("malformed response from the runtime: {e}"))?;
            if want.is_some() && response.seq_id == want {
                return Ok(Some(response));
            }
        }
        Ok(None)
    }

    fn answer(&mut self, msg: &Value) -> Result<(), String> {
        let action = msg["action"].as_str().unwrap_or("").to_string();
        let context = msg.get("context").filter(|c| !c.is_null());
        let outcome = (self.handler)(&action, &msg["data"], context);
        self.inbound.push(InboundCall {
            action: action.clone(),
            installation_uuid: context
                .and_then(|c| c.get("installation_uuid"))
                .and_then(Value::as_str)
                .map(str::to_string),
            answered_ok: outcome.is_ok(),
        });
        let response = match outcome {
            Ok(data) => {
                json!({"seq_id": msg["seq_id"], "code": 0, "message": "success", "data": data, "chunk_status": "continue"})
            }
            Err(message) => {
                json!({"seq_id": msg["seq_id"], "code": 1, "message": message, "data": {}, "chunk_status": "continue"})
            }
        };
        self.transcript.record("host->runtime", &response);
        self.ws
            .send(Message::text(response.to_string()))
            .map_err(|e| format!("answering the runtime's {action}: {e}"))
    }

    /// One text message as JSON, or `None` when nothing arrived within
    /// [`READ_SLICE`].
    fn read_message(&mut self) -> Result<Option<Value>, String> {
        match self.ws.read() {
            Ok(Message::Text(text)) => {
                let value: Value = serde_json::from_str(text.as_str())
                    .map_err(|e| format!("the runtime sent a message that is not JSON: {e}"))?;
                self.transcript.record("runtime->host", &value);
                Ok(Some(value))
            }
            Ok(Message::Close(frame)) => {
                self.transcript.record(
                    "runtime-closed",
                    &json!(frame.map(|f| format!("{} {}", u16::from(f.code), f.reason))),
                );
                Err("the runtime closed the control connection".into())
            }
            Ok(_) => Ok(None),
            Err(tungstenite::Error::Io(e))
                if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) =>
            {
                Ok(None)
            }
            Err(e) => Err(format!("control connection failed: {e}")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_payloads_are_elided_anywhere() {
        let msg = json!({"seq_id": 3, "action": "__file_chunk",
            "data": {"file_key": "k", "chunk_base64": "QUJD", "chunk_index": 0}});
        let out = elide(&msg);
        assert_eq!(out["data"]["chunk_base64"], "<elided: 4 base64 characters>");
        assert_eq!(out["data"]["file_key"], "k");
    }

    #[test]
    fn http_completeness_follows_content_length() {
        assert!(!response_complete(
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nab"
        ));
        assert!(response_complete(
            b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nab"
        ));
    }

    #[test]
    fn healthz_of_a_closed_port_is_an_error() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        assert!(healthz(port, Duration::from_millis(300)).is_err());
    }
}

//! `sky mcp`: the session server on stdio, for agents whose harness only speaks stdio. Each line on
//! stdin is one JSON-RPC message; it is POSTed unchanged to `<server>/v1/session/mcp` with the session's
//! token (`AGENTSKY_SESSION_TOKEN`) as the bearer and its id (`AGENTSKY_SESSION_ID`) in
//! `x-agentsky-session`, and each JSON-RPC message in the answer is written to stdout as one line.
//! Notifications get no output. The tools themselves (shared/contract/agent-tools.md) are the server's.
//!
//! Requests are relayed concurrently, each on its own thread: some tools wait minutes for a person
//! (`ask_user`), and a client may send other requests or a cancellation meanwhile. JSON-RPC matches
//! answers by id, so their order does not matter. When the server cannot be reached, or answers with
//! something that is not JSON-RPC, the request still gets an answer: a JSON-RPC error that says why.
//! Must never: write anything to stdout but JSON-RPC lines (diagnostics go to stderr).
//!
//! In a runner's turn (`AGENTSKY_GRANTS_FILE` set), the grant ids `request_access` and `check_grant`
//! answer are remembered there (ids and scopes only), so the provider CLI shims use the agent's grants.

use serde_json::{json, Value};
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where and as whom to relay.
#[derive(Clone)]
pub struct Relay {
    pub endpoint: String,
    pub session_id: String,
    pub token: String,
    agent: ureq::Agent,
    /// The protocol version `initialize` settled on, sent as `MCP-Protocol-Version` from then on.
    protocol_version: Arc<Mutex<Option<String>>>,
    /// `Mcp-Session-Id`, if the server hands one out.
    mcp_session: Arc<Mutex<Option<String>>>,
}

/// JSON-RPC's "internal error", used when the relay itself cannot get an answer.
const RELAY_ERROR: i64 = -32603;

impl Relay {
    pub fn new(server: &str, session_id: &str, token: &str) -> Self {
        // Session tools may hold a call for up to 5 minutes while a person decides.
        let config = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_connect(Some(Duration::from_secs(10)))
            .timeout_global(Some(Duration::from_secs(10 * 60)))
            .user_agent(format!("sky-mcp/{}", env!("CARGO_PKG_VERSION")))
            .build();
        Self {
            endpoint: format!("{}/v1/session/mcp", crate::api::normalize_server(server)),
            session_id: session_id.to_owned(),
            token: token.to_owned(),
            agent: config.into(),
            protocol_version: Arc::default(),
            mcp_session: Arc::default(),
        }
    }

    /// Relays one line; returns the lines to write (none for a notification or a blank line).
    pub fn forward(&self, line: &str) -> Vec<String> {
        self.forward_with(line, true)
    }

    /// [`Relay::forward`] without the diagnostics on stderr (for the shims, which say things their way).
    pub fn forward_quiet(&self, line: &str) -> Vec<String> {
        self.forward_with(line, false)
    }

    fn forward_with(&self, line: &str, diagnostics: bool) -> Vec<String> {
        let line = line.trim();
        if line.is_empty() {
            return vec![];
        }
        let message: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => return vec![error_line(&Value::Null, -32700, &format!("Parse error: {e}"))],
        };
        let ids = request_ids(&message);
        let mut req = self
            .agent
            .post(&self.endpoint)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("Bearer {}", self.token))
            .header("x-agentsky-session", &self.session_id);
        if let Some(v) = self.protocol_version.lock().expect("not poisoned").clone() {
            req = req.header("mcp-protocol-version", v);
        }
        if let Some(s) = self.mcp_session.lock().expect("not poisoned").clone() {
            req = req.header("mcp-session-id", s);
        }
        let fail = |why: String| -> Vec<String> {
            if diagnostics {
                eprintln!("sky mcp: {why}");
            }
            ids.iter().map(|id| error_line(id, RELAY_ERROR, &why)).collect()
        };
        let resp = match req.send(line) {
            Ok(r) => r,
            Err(e) => return fail(format!("cannot reach the agentsky session server at {}: {e}", self.endpoint)),
        };
        let status = resp.status().as_u16();
        let header = |name: &str| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let content_type = header("content-type").unwrap_or_default();
        if let Some(s) = header("mcp-session-id") {
            *self.mcp_session.lock().expect("not poisoned") = Some(s);
        }
        let body = match resp.into_body().read_to_string() {
            Ok(b) => b,
            Err(e) => return fail(format!("reading the session server's answer failed: {e}")),
        };
        let messages: Vec<Value> = if content_type.starts_with("text/event-stream") {
            sse_messages(&body)
        } else if body.trim().is_empty() {
            vec![]
        } else {
            match serde_json::from_str::<Value>(&body) {
                Ok(Value::Array(batch)) => batch,
                Ok(v) => vec![v],
                Err(_) => vec![],
            }
        };
        let rpc: Vec<Value> = messages.into_iter().filter(|m| m.get("jsonrpc").is_some()).collect();
        if rpc.is_empty() {
            if ids.is_empty() && (200..300).contains(&status) {
                return vec![]; // a notification, accepted (202)
            }
            let detail = serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|b| b["error"]["message"].as_str().map(str::to_owned))
                .unwrap_or_else(|| body.chars().take(200).collect());
            return fail(format!("the session server answered HTTP {status}: {detail}"));
        }
        for m in &rpc {
            if let Some(v) = m["result"]["protocolVersion"].as_str() {
                *self.protocol_version.lock().expect("not poisoned") = Some(v.to_owned());
            }
            // In a runner's turn, the grants the agent gets are remembered for the provider CLI shims.
            if message.get("method").is_some_and(|m| m == "tools/call") && m.get("id") == message.get("id") {
                crate::shim::note_tool_result(&message, m);
            }
        }
        rpc.iter().map(Value::to_string).collect()
    }
}

/// The ids of the requests in a message (or batch); notifications have none.
fn request_ids(message: &Value) -> Vec<Value> {
    let one = |m: &Value| m.get("id").filter(|_| m.get("method").is_some()).cloned();
    match message {
        Value::Array(batch) => batch.iter().filter_map(one).collect(),
        m => one(m).into_iter().collect(),
    }
}

fn error_line(id: &Value, code: i64, message: &str) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } }).to_string()
}

/// The JSON messages of a `text/event-stream` body: each event's `data:` lines, joined.
fn sse_messages(body: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for event in body.replace("\r\n", "\n").split("\n\n") {
        let data: Vec<&str> =
            event.lines().filter_map(|l| l.strip_prefix("data:")).map(|d| d.strip_prefix(' ').unwrap_or(d)).collect();
        if let Ok(v) = serde_json::from_str(&data.join("\n")) {
            out.push(v);
        }
    }
    out
}

/// Relays every line of `input` until it ends, then waits for the answers still on their way.
pub fn serve<W: Write + Send + 'static>(relay: &Relay, input: impl BufRead, output: W) {
    let output = Arc::new(Mutex::new(output));
    let mut running = Vec::new();
    for line in input.lines() {
        let Ok(line) = line else { break };
        let relay = relay.clone();
        let output = output.clone();
        running.retain(|h: &std::thread::JoinHandle<()>| !h.is_finished());
        running.push(std::thread::spawn(move || {
            let lines = relay.forward(&line);
            if lines.is_empty() {
                return;
            }
            let mut out = output.lock().expect("not poisoned");
            for l in lines {
                let _ = writeln!(out, "{l}");
            }
            let _ = out.flush();
        }));
    }
    for h in running {
        let _ = h.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_streams_yield_each_message() {
        let body = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"method\":\"x\"}\n\n";
        let msgs = sse_messages(body);
        assert_eq!(msgs.len(), 2);
        assert_eq!(msgs[1]["method"], "x");
    }

    #[test]
    fn only_requests_have_ids_to_answer() {
        assert_eq!(request_ids(&json!({"jsonrpc": "2.0", "id": 7, "method": "ping"})), vec![json!(7)]);
        assert!(request_ids(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).is_empty());
        assert!(request_ids(&json!({"jsonrpc": "2.0", "id": 7, "result": {}})).is_empty(), "a response to the server");
    }
}

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
//!
//! For Claude Code (`AGENTSKY_PERMISSION_TOOL` set, by its per-turn MCP config) it also serves `approve`,
//! Claude Code's permission prompt tool (`--permission-prompt-tool mcp__agentsky__approve`): a tool use it
//! would ask a terminal about becomes a decision the person answers in Approvals (`ask_user`, Allow or
//! Deny), and the answer goes back in the shape Claude Code reads (`{"behavior": "allow", …}`).

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
    /// Serves [`PERMISSION_TOOL`] too.
    pub permission_tool: bool,
}

/// Claude Code's permission prompt tool, as this relay serves it.
pub const PERMISSION_TOOL: &str = "approve";
/// What the person chooses between.
const ALLOW: &str = "Allow";
const DENY: &str = "Deny";

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
            permission_tool: false,
        }
    }

    /// Relays one line; returns the lines to write (none for a notification or a blank line): what the
    /// server sent before its answer (a waiting tool's progress), then the answer.
    pub fn forward(&self, line: &str) -> Vec<String> {
        self.forward_collecting(line, true)
    }

    /// [`Relay::forward`] without the diagnostics on stderr (for the shims, which say things their way).
    pub fn forward_quiet(&self, line: &str) -> Vec<String> {
        self.forward_collecting(line, false)
    }

    /// Relays one line, handing each message the server streams before its answer to `early` the moment it
    /// arrives (a tool that waits for a person sends progress, which keeps the client's timeout from
    /// running out); returns the answer's lines.
    pub fn forward_streaming(&self, line: &str, early: &mut dyn FnMut(String)) -> Vec<String> {
        self.forward_with(line, true, early)
    }

    fn forward_collecting(&self, line: &str, diagnostics: bool) -> Vec<String> {
        let mut lines = Vec::new();
        let answer = self.forward_with(line, diagnostics, &mut |l| lines.push(l));
        lines.extend(answer);
        lines
    }

    fn forward_with(&self, line: &str, diagnostics: bool, early: &mut dyn FnMut(String)) -> Vec<String> {
        let line = line.trim();
        if line.is_empty() {
            return vec![];
        }
        let message: Value = match serde_json::from_str(line) {
            Ok(v) => v,
            Err(e) => return vec![error_line(&Value::Null, -32700, &format!("Parse error: {e}"))],
        };
        if self.permission_tool {
            if message["method"] == "tools/call" && message["params"]["name"] == PERMISSION_TOOL {
                return vec![self.approve(&message, diagnostics, early)];
            }
            if message["method"] == "tools/list" {
                let lines = self.relay(line, &message, diagnostics, early);
                return lines.into_iter().map(|l| with_permission_tool(&l)).collect();
            }
        }
        self.relay(line, &message, diagnostics, early)
    }

    /// Asks the person whether Claude Code may use a tool, and answers it as its permission prompt tool
    /// expects: allowed with the input unchanged, or denied saying why.
    fn approve(&self, call: &Value, diagnostics: bool, early: &mut dyn FnMut(String)) -> String {
        let input = &call["params"]["arguments"];
        let mut ask = json!({ "jsonrpc": "2.0", "id": call["id"], "method": "tools/call", "params": {
            "name": "ask_user",
            "arguments": { "kind": "decision", "payload": { "prompt": permission_prompt(input), "options": [ALLOW, DENY] } },
        }});
        // The client's progress token, so the wait for the person keeps the client's call alive too.
        if let Some(meta) = call["params"].get("_meta") {
            ask["params"]["_meta"] = meta.clone();
        }
        let answered = self.relay(&ask.to_string(), &ask, diagnostics, early);
        let reply: Value = answered.first().and_then(|l| serde_json::from_str(l).ok()).unwrap_or(Value::Null);
        let decision = match chosen(&reply) {
            Some(a) if a == ALLOW => {
                json!({ "behavior": "allow", "updatedInput": input.get("input").cloned().unwrap_or(json!({})) })
            }
            Some(_) => json!({ "behavior": "deny", "message": "The person denied this in agentsky." }),
            None => {
                let why = reply["error"]["message"]
                    .as_str()
                    .or(reply["result"]["content"][0]["text"].as_str())
                    .unwrap_or("no answer");
                json!({ "behavior": "deny", "message": format!("Not approved: {why}") })
            }
        };
        json!({ "jsonrpc": "2.0", "id": call["id"], "result": {
            "content": [{ "type": "text", "text": decision.to_string() }], "isError": false,
        }})
        .to_string()
    }

    fn relay(&self, line: &str, message: &Value, diagnostics: bool, early: &mut dyn FnMut(String)) -> Vec<String> {
        let ids = request_ids(message);
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
        let mut body = String::new();
        let messages: Vec<Value> = if content_type.starts_with("text/event-stream") {
            // Each event as it comes: what precedes the answer (progress) goes out at once.
            let mut messages = Vec::new();
            let reader = std::io::BufReader::new(resp.into_body().into_reader());
            let read = each_sse_message(reader, &mut |m| {
                if m.get("method").is_some() {
                    early(m.to_string());
                } else {
                    messages.push(m);
                }
            });
            if let Err(e) = read {
                if messages.is_empty() {
                    return fail(format!("reading the session server's answer failed: {e}"));
                }
            }
            messages
        } else {
            body = match resp.into_body().read_to_string() {
                Ok(b) => b,
                Err(e) => return fail(format!("reading the session server's answer failed: {e}")),
            };
            json_messages(&body)
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
                crate::grants_file::note_tool_result(message, m);
            }
        }
        rpc.iter().map(Value::to_string).collect()
    }
}

/// A `tools/list` answer with the permission prompt tool added.
fn with_permission_tool(line: &str) -> String {
    let Ok(mut v) = serde_json::from_str::<Value>(line) else { return line.to_owned() };
    if let Some(tools) = v["result"]["tools"].as_array_mut() {
        tools.push(json!({
            "name": PERMISSION_TOOL,
            "description": "Claude Code's permission prompt: asks the person in agentsky whether a tool use may go ahead.",
            "inputSchema": { "type": "object", "properties": {
                "tool_name": { "type": "string" }, "input": { "type": "object" }, "tool_use_id": { "type": "string" },
            }, "required": ["tool_name", "input"] },
        }));
    }
    v.to_string()
}

/// What the person is asked: the tool and what it would do, in a line or two.
fn permission_prompt(input: &Value) -> String {
    let tool = input["tool_name"].as_str().unwrap_or("a tool");
    let args = &input["input"];
    let what = args["command"]
        .as_str()
        .or(args["file_path"].as_str())
        .or(args["url"].as_str())
        .map(str::to_owned)
        .unwrap_or_else(|| args.to_string());
    let what: String = what.chars().take(1_500).collect();
    format!("Claude Code asks to use {tool}: {what}")
}

/// The option the person chose, from `ask_user`'s answer (`{"resolution": {"answer": …}}`).
fn chosen(reply: &Value) -> Option<String> {
    let r = &reply["result"];
    if r["isError"] == true {
        return None;
    }
    let body = match r.get("structuredContent") {
        Some(v) if v.is_object() => v.clone(),
        _ => serde_json::from_str(r["content"][0]["text"].as_str()?).ok()?,
    };
    body["resolution"]["answer"].as_str().map(str::to_owned)
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

/// The messages of a JSON body: one, or a batch.
fn json_messages(body: &str) -> Vec<Value> {
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Array(batch)) => batch,
        Ok(v) => vec![v],
        Err(_) => vec![],
    }
}

/// Each JSON message of a `text/event-stream` as its event ends (its `data:` lines, joined).
fn each_sse_message(reader: impl BufRead, each: &mut dyn FnMut(Value)) -> std::io::Result<()> {
    let mut data: Vec<String> = Vec::new();
    let mut end = |data: &mut Vec<String>| {
        if let Ok(v) = serde_json::from_str(&data.join("\n")) {
            each(v);
        }
        data.clear();
    };
    for line in reader.lines() {
        let line = line?;
        let line = line.strip_suffix('\r').unwrap_or(&line);
        if line.is_empty() {
            end(&mut data);
        } else if let Some(d) = line.strip_prefix("data:") {
            data.push(d.strip_prefix(' ').unwrap_or(d).to_owned());
        }
    }
    end(&mut data);
    Ok(())
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
            let write = |lines: &[String]| {
                let mut out = output.lock().expect("not poisoned");
                for l in lines {
                    let _ = writeln!(out, "{l}");
                }
                let _ = out.flush();
            };
            let lines = relay.forward_streaming(&line, &mut |l| write(&[l]));
            if !lines.is_empty() {
                write(&lines);
            }
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
        let body = "event: message\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\r\n\r\ndata: {\"jsonrpc\":\"2.0\",\ndata: \"method\":\"x\"}\n\ndata: {\"last\":true}";
        let mut msgs = Vec::new();
        each_sse_message(std::io::Cursor::new(body), &mut |m| msgs.push(m)).unwrap();
        assert_eq!(msgs.len(), 3, "{msgs:?}");
        assert_eq!(msgs[1]["method"], "x");
        assert_eq!(msgs[2]["last"], true, "a stream cut without its blank line still ends its event");
    }

    #[test]
    fn the_permission_prompt_names_the_tool_and_reads_the_persons_choice() {
        let input = json!({"tool_name": "Bash", "input": {"command": "rm -rf build"}, "tool_use_id": "t1"});
        assert_eq!(permission_prompt(&input), "Claude Code asks to use Bash: rm -rf build");
        let text = json!({"resolution": {"kind": "decision", "answer": "Allow"}}).to_string();
        let reply = json!({"result": {"content": [{"type": "text", "text": text}], "isError": false}});
        assert_eq!(chosen(&reply).as_deref(), Some("Allow"));
        let failed = json!({"result": {"content": [{"type": "text", "text": "timed out"}], "isError": true}});
        assert_eq!(chosen(&failed), None);
        let listed = with_permission_tool(
            &json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [{"name": "ask_user"}]}}).to_string(),
        );
        assert_eq!(serde_json::from_str::<Value>(&listed).unwrap()["result"]["tools"][1]["name"], PERMISSION_TOOL);
    }

    #[test]
    fn only_requests_have_ids_to_answer() {
        assert_eq!(request_ids(&json!({"jsonrpc": "2.0", "id": 7, "method": "ping"})), vec![json!(7)]);
        assert!(request_ids(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).is_empty());
        assert!(request_ids(&json!({"jsonrpc": "2.0", "id": 7, "result": {}})).is_empty(), "a response to the server");
    }
}

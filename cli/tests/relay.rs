//! `sky mcp` against a stand-in session server: each stdin line is relayed with the session's token and
//! id, each answer comes back as one stdout line, notifications get none, and failures still answer.

mod support;

use serde_json::{json, Value};
use std::io::Write;
use std::process::{Command, Stdio};
use support::StandIn;

fn session_server() -> StandIn {
    StandIn::start(|req| {
        if req.url != "/v1/session/mcp" || req.header("authorization") != Some("Bearer sess_token") {
            return (
                401,
                "application/json",
                json!({"error": {"code": "unauthorized", "message": "bad session token"}}).to_string(),
            );
        }
        let msg: Value = serde_json::from_str(&req.body).unwrap_or(Value::Null);
        let id = msg["id"].clone();
        match msg["method"].as_str() {
            Some("initialize") => (200, "application/json", json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "agentsky-session", "version": "1"}}}).to_string()),
            Some("tools/list") => (200, "text/event-stream", format!(
                "event: message\ndata: {}\n\n",
                json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [{"name": "report_status"}]}}))),
            Some("tools/call") => (200, "application/json", json!({"jsonrpc": "2.0", "id": id, "result": {
                "content": [{"type": "text", "text": "{\"ok\":true}"}], "isError": false}}).to_string()),
            Some(m) if m.starts_with("notifications/") => (202, "", String::new()),
            _ => (404, "application/json", json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "Method not found"}}).to_string()),
        }
    })
}

/// Runs the real binary with `input` on stdin; returns its stdout lines and stderr.
fn sky_mcp(server: &str, token: &str, input: &str) -> (Vec<Value>, String, i32) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_sky"))
        .args(["mcp", "--server", server])
        .env("AGENTSKY_SESSION_ID", "ses_123")
        .env("AGENTSKY_SESSION_TOKEN", token)
        .env("HOME", std::env::temp_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines = stdout.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}"))).collect();
    (lines, String::from_utf8(out.stderr).unwrap(), out.status.code().unwrap_or(-1))
}

fn by_id(lines: &[Value], id: i64) -> &Value {
    lines.iter().find(|l| l["id"] == id).unwrap_or_else(|| panic!("no answer to {id} in {lines:?}"))
}

#[test]
fn every_request_is_relayed_with_the_session_credentials_and_answered_on_one_line() {
    let srv = session_server();
    let input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
    ]
    .iter()
    .map(|m| m.to_string() + "\n")
    .collect::<String>();
    let (lines, _, code) = sky_mcp(&srv.url, "sess_token", &input);
    assert_eq!(code, 0);
    assert_eq!(by_id(&lines, 1)["result"]["protocolVersion"], "2025-06-18");

    let srv = session_server();
    let input = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18"}}).to_string(),
        String::new(),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string(),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string(),
        json!({"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": "report_status", "arguments": {"note": "hi"}}}).to_string(),
        json!({"jsonrpc": "2.0", "id": 4, "method": "nope"}).to_string(),
        "{not json".to_owned(),
    ]
    .join("\n");
    let (lines, stderr, code) = sky_mcp(&srv.url, "sess_token", &input);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(lines.len(), 5, "one line per request, none for the notification: {lines:?}");
    assert_eq!(by_id(&lines, 2)["result"]["tools"][0]["name"], "report_status", "event streams are unwrapped");
    assert_eq!(lines.iter().find(|l| l["id"] == "c").unwrap()["result"]["isError"], false);
    assert_eq!(by_id(&lines, 4)["error"]["code"], -32601, "the server's own JSON-RPC errors pass through");
    assert_eq!(lines.iter().find(|l| l["id"].is_null()).unwrap()["error"]["code"], -32700);

    let seen = srv.requests();
    assert_eq!(seen.len(), 5, "the blank and broken lines are not sent");
    for r in &seen {
        assert_eq!(r.method, "POST");
        assert_eq!(r.header("authorization"), Some("Bearer sess_token"));
        assert_eq!(r.header("x-agentsky-session"), Some("ses_123"));
        assert!(r.header("content-type").unwrap().starts_with("application/json"));
    }
    let init = seen.iter().find(|r| r.body.contains("initialize")).unwrap();
    assert!(init.header("mcp-protocol-version").is_none());
}

#[test]
fn the_negotiated_protocol_version_is_sent_after_initialize() {
    let srv = session_server();
    let relay = sky::relay::Relay::new(&srv.url, "ses_123", "sess_token");
    let init = relay.forward(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}).to_string());
    assert_eq!(init.len(), 1);
    let list = relay.forward(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}).to_string());
    assert_eq!(list.len(), 1);
    let seen = srv.requests();
    assert_eq!(seen[1].header("mcp-protocol-version"), Some("2025-06-18"));
}

#[test]
fn a_refused_token_or_a_dead_server_still_answers_each_request() {
    let srv = session_server();
    let input = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list"}).to_string()
        + "\n"
        + &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    let (lines, stderr, _) = sky_mcp(&srv.url, "wrong", &input);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(by_id(&lines, 9)["error"]["code"], -32603);
    assert!(by_id(&lines, 9)["error"]["message"].as_str().unwrap().contains("HTTP 401: bad session token"));
    assert!(stderr.contains("HTTP 401"), "{stderr}");

    let (lines, _, _) = sky_mcp("http://127.0.0.1:9", "sess_token", &input);
    assert!(by_id(&lines, 9)["error"]["message"].as_str().unwrap().contains("cannot reach"), "{lines:?}");
}

#[test]
fn without_the_session_environment_it_explains_and_exits() {
    let out = Command::new(env!("CARGO_BIN_EXE_sky"))
        .arg("mcp")
        .env_remove("AGENTSKY_SESSION_ID")
        .env_remove("AGENTSKY_SESSION_TOKEN")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("AGENTSKY_SESSION_ID and AGENTSKY_SESSION_TOKEN"));
    assert!(out.stdout.is_empty());
}

/// A tool that waits for a person streams progress before its answer: `sky mcp` writes each progress
/// notification the moment it arrives, so the client's own timeout starts again. The stand-in holds its
/// answer back until the progress line has reached the client; a relay that waited for the whole answer
/// would never let it.
#[test]
fn progress_is_written_as_it_arrives_before_the_answer() {
    use std::io::{BufRead, BufReader, Read};
    use std::net::TcpListener;
    use std::sync::mpsc;
    use std::time::Duration;
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let server = format!("http://{}", listener.local_addr().unwrap());
    let (seen_tx, seen_rx) = mpsc::channel::<()>();
    let held = std::thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let mut head = Vec::new();
        let mut byte = [0u8; 1];
        while !head.ends_with(b"\r\n\r\n") {
            conn.read_exact(&mut byte).unwrap();
            head.push(byte[0]);
        }
        let head = String::from_utf8(head).unwrap().to_ascii_lowercase();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map(|v| v.trim().parse().unwrap())
            .unwrap_or(0);
        let mut body = vec![0u8; len];
        conn.read_exact(&mut body).unwrap();
        let call: Value = serde_json::from_slice(&body).unwrap();
        let token = call["params"]["_meta"]["progressToken"].clone();
        let progress = json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": 15, "message": "waiting for a person"}});
        write!(conn, "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n").unwrap();
        write!(conn, "event: message\ndata: {progress}\n\n").unwrap();
        conn.flush().unwrap();
        let reached = seen_rx.recv_timeout(Duration::from_secs(10)).is_ok();
        let result = json!({"jsonrpc": "2.0", "id": call["id"], "result": {
            "content": [{"type": "text", "text": "{\"resolution\":{\"answer\":\"pg\"}}"}], "isError": false}});
        write!(conn, "event: message\ndata: {result}\n\n").unwrap();
        reached
    });
    let mut child = Command::new(env!("CARGO_BIN_EXE_sky"))
        .args(["mcp", "--server", &server])
        .env("AGENTSKY_SESSION_ID", "ses_123")
        .env("AGENTSKY_SESSION_TOKEN", "sess_token")
        .env("HOME", std::env::temp_dir())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
        "params": {"name": "ask_user", "arguments": {}, "_meta": {"progressToken": "p5"}}});
    writeln!(stdin, "{call}").unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let first: Value = serde_json::from_str(&out.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["method"], "notifications/progress", "{first}");
    assert_eq!(first["params"]["progressToken"], "p5");
    seen_tx.send(()).unwrap();
    let answer: Value = serde_json::from_str(&out.next().unwrap().unwrap()).unwrap();
    assert_eq!(answer["id"], 5, "{answer}");
    assert!(held.join().unwrap(), "the progress reached the client before the answer was sent");
    drop(stdin);
    child.wait().unwrap();
}

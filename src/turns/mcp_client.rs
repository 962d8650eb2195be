//! The Worker as an MCP client of an agent's declared remote servers, over Streamable HTTP: initialize,
//! then one request, answered as JSON or as an SSE stream. Each call opens its own short conversation,
//! so nothing has to live between harness steps. Every request goes through [`Egress`] (the outbound
//! rule); what a server answers with an error is summarized, never echoed whole.

use super::agent_tools::post_json;
use crate::egress::Egress;
use crate::rules::outbound;
use serde_json::{json, Value};

const VERSION: &str = "2025-06-18";

/// What errors name a declared server's URL as.
const WHAT: &str = "mcpServers[].url";

struct Conn<'a> {
    egress: &'a Egress<'a>,
    url: &'a str,
    bearer: Option<&'a str>,
    session: Option<String>,
}

impl Conn<'_> {
    fn headers(&self) -> Vec<(String, String)> {
        let mut h = super::agent_tools::bearer(self.bearer);
        h.push(("accept".into(), "application/json, text/event-stream".into()));
        h.push(("mcp-protocol-version".into(), VERSION.into()));
        if let Some(s) = &self.session {
            h.push(("mcp-session-id".into(), s.clone()));
        }
        h
    }

    async fn send(&mut self, body: Value) -> Result<Option<Value>, String> {
        let resp = self.egress.post(WHAT, post_json(self.url, self.headers(), &body)).await?;
        if let Some(s) = resp.header("mcp-session-id") {
            self.session = Some(s.to_owned());
        }
        if resp.status == 202 {
            return Ok(None);
        }
        if resp.status >= 400 {
            return Err(format!("the server answered {}", outbound::summary(resp.status, &resp.body)));
        }
        let text = String::from_utf8_lossy(&resp.body);
        let id = body.get("id").cloned();
        let is_sse = resp.header("content-type").is_some_and(|c| c.starts_with("text/event-stream"));
        let messages: Vec<Value> = if is_sse {
            text.lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str(d.trim()).ok())
                .collect()
        } else {
            vec![serde_json::from_str(&text).map_err(|e| format!("the server answered invalid JSON: {e}"))?]
        };
        let reply = messages.into_iter().find(|m| m.get("id") == id.as_ref()).ok_or("no response to the request")?;
        if let Some(err) = reply.get("error") {
            return Err(format!(
                "the server refused: {}",
                outbound::snippet(err["message"].as_str().unwrap_or("error"))
            ));
        }
        Ok(reply.get("result").cloned())
    }

    async fn open<'b>(egress: &'b Egress<'b>, url: &'b str, bearer: Option<&'b str>) -> Result<Conn<'b>, String> {
        let mut c = Conn { egress, url, bearer, session: None };
        c.send(json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": VERSION, "capabilities": {},
            "clientInfo": {"name": "agentsky-harness", "version": env!("CARGO_PKG_VERSION")}}}))
            .await?;
        c.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).await?;
        Ok(c)
    }
}

/// The server's tools (`tools/list`, every page).
pub async fn list_tools(egress: &Egress<'_>, url: &str, bearer: Option<&str>) -> Result<Vec<Value>, String> {
    let mut c = Conn::open(egress, url, bearer).await?;
    let mut tools = Vec::new();
    let mut cursor: Option<String> = None;
    for id in 2..12 {
        let params = cursor.as_ref().map_or_else(|| json!({}), |c| json!({ "cursor": c }));
        let result = c
            .send(json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params}))
            .await?
            .unwrap_or_default();
        tools.extend(result["tools"].as_array().cloned().unwrap_or_default());
        match result["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_owned()),
            None => break,
        }
    }
    Ok(tools)
}

/// Calls one tool; the text of its content and whether it is an error result.
pub async fn call_tool(
    egress: &Egress<'_>,
    url: &str,
    bearer: Option<&str>,
    name: &str,
    arguments: &Value,
) -> Result<(String, bool), String> {
    let mut c = Conn::open(egress, url, bearer).await?;
    let result = c
        .send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}}))
        .await?
        .unwrap_or_default();
    let text: Vec<String> = result["content"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| c["text"].as_str().map_or_else(|| c.to_string(), str::to_owned))
        .collect();
    let text = if text.is_empty() { result["structuredContent"].to_string() } else { text.join("\n") };
    Ok((text, result["isError"].as_bool().unwrap_or(false)))
}

//! Claude Code as a runner's agent: `claude -p` reading the message on stdin and writing `stream-json`.
//!
//! - **Servers:** a per-turn `meta/claude-mcp.json` with `agentsky` (this `sky mcp`, the session server
//!   on stdio, with the turn's token from the environment) and `agentsky_help` (the help server over HTTP),
//!   given with `--strict-mcp-config`, so the person's own MCP settings are neither read nor changed.
//! - **Model and thinking:** `--model`; the session's `thinking` as `MAX_THINKING_TOKENS` (off 0, low
//!   4,000, medium 10,000, high 32,000), the budget Claude Code reads.
//! - **Instructions:** `--append-system-prompt`, after Claude Code's own.
//! - **Permissions** ([`permission_flags`], from the agent's `tool_approval`): by default
//!   `--permission-mode acceptEdits` (edits in the turn's folder go ahead), the session's tools allowed,
//!   and anything else Claude Code would ask a terminal about (a shell command, a write elsewhere) asked
//!   of the person in Approvals through `sky mcp`'s `approve` tool (`--permission-prompt-tool`, see
//!   [`crate::relay`]).
//! - **Conversation:** `--resume <session_id>` with the id the last turn's stream named.

use super::{content_text, not_json, Conversation, Launch, Mapped, Mapper, Setup, Usage};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;

/// The MCP configuration a turn gives Claude Code.
pub fn mcp_config(sky_exe: &Path, server: &str, help_server: &str) -> Value {
    json!({ "mcpServers": {
        "agentsky": {
            "type": "stdio", "command": sky_exe.to_string_lossy(), "args": ["mcp", "--server", server],
            "env": { "AGENTSKY_PERMISSION_TOOL": "1" },
            // A person's answer may take the session server's whole 5 minutes; the person's own
            // `MCP_TOOL_TIMEOUT` must not cut it shorter.
            "timeout": super::TOOL_TIMEOUT_S * 1000,
        },
        "agentsky_help": { "type": "http", "url": help_server },
    }})
}

/// Claude Code's permission flags for an agent's `tool_approval`: what goes ahead, and where the rest
/// is asked (the person, through the relay's permission prompt tool).
pub fn permission_flags(approval: &str) -> &'static [&'static str] {
    match approval {
        "none" => &["--permission-mode", "bypassPermissions"],
        "every_change" => &["--permission-mode", "default", "--permission-prompt-tool", "mcp__agentsky__approve"],
        _ => &["--permission-mode", "acceptEdits", "--permission-prompt-tool", "mcp__agentsky__approve"],
    }
}

/// The thinking budget, in tokens, for a session's `thinking` level.
pub fn thinking_tokens(level: &str) -> Option<u32> {
    match level {
        "off" => Some(0),
        "low" => Some(4_000),
        "medium" => Some(10_000),
        "high" => Some(32_000),
        _ => None,
    }
}

pub fn launch(exe: &Path, s: &Setup<'_>) -> std::io::Result<Launch> {
    let config = s.meta.join("claude-mcp.json");
    std::fs::write(&config, serde_json::to_string_pretty(&mcp_config(s.sky_exe, s.server, s.help_server))? + "\n")?;
    let mut argv: Vec<String> = vec![exe.to_string_lossy().into_owned()];
    argv.extend(["-p", "--output-format", "stream-json", "--verbose", "--strict-mcp-config"].map(str::to_owned));
    argv.extend(["--mcp-config".to_owned(), config.to_string_lossy().into_owned()]);
    // Edits in the turn's folder go ahead; a shell command or a write elsewhere asks the person in
    // Approvals (the relay's permission prompt tool), as the agent's `tool_approval` says; the session's
    // own tools never ask.
    argv.extend(permission_flags(super::tool_approval(s.agent)).iter().map(|f| (*f).to_owned()));
    argv.extend(["--allowedTools".to_owned(), "mcp__agentsky,mcp__agentsky_help".to_owned()]);
    if let Some(model) = Some(s.agent.model.as_str()).filter(|m| !m.is_empty()) {
        argv.extend(["--model".to_owned(), model.to_owned()]);
    }
    if let Some(instructions) = Some(s.agent.instructions.as_str()).filter(|i| !i.trim().is_empty()) {
        argv.extend(["--append-system-prompt".to_owned(), instructions.to_owned()]);
    }
    if let Some(id) = s.resume {
        argv.extend(["--resume".to_owned(), id.to_owned()]);
    }
    // MCP tools otherwise wait behind Claude Code's tool search, named only in a reminder: the session's
    // tools are the point of the turn.
    let mut env = vec![("ENABLE_TOOL_SEARCH".to_owned(), "false".into())];
    if let Some(tokens) = thinking_tokens(&s.agent.thinking) {
        env.push(("MAX_THINKING_TOKENS".to_owned(), tokens.to_string().into()));
    }
    Ok(Launch { argv, env })
}

/// Claude Code's `stream-json` read into session events.
#[derive(Default)]
pub struct Stream {
    session_id: Option<String>,
    /// Tool names by call id, for the results.
    calls: HashMap<String, String>,
    /// Each model call's usage by its message id (a message's blocks arrive as lines that repeat it).
    calls_usage: HashMap<String, Usage>,
}

impl Mapper for Stream {
    fn line(&mut self, line: &str) -> Vec<Mapped> {
        let Ok(v) = serde_json::from_str::<Value>(line) else { return not_json(line) };
        if let Some(id) = v["session_id"].as_str() {
            self.session_id = Some(id.to_owned());
        }
        match v["type"].as_str() {
            Some("system") if v["subtype"] == "init" => {
                let failed: Vec<&str> = v["mcp_servers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|s| s["status"] != "connected")
                    .filter_map(|s| s["name"].as_str())
                    .collect();
                let mut text = format!("Claude Code started ({})", v["model"].as_str().unwrap_or("its default model"));
                if !failed.is_empty() {
                    text.push_str(&format!("; MCP servers not connected: {}", failed.join(", ")));
                }
                vec![Mapped::Status(text)]
            }
            Some("assistant") => {
                let mut out = self.blocks(&v["message"]["content"]);
                out.extend(self.progress(&v["message"]));
                out
            }
            Some("user") => self.blocks(&v["message"]["content"]),
            Some("result") => result(&v),
            _ => vec![],
        }
    }

    fn conversation(&self) -> Option<Conversation> {
        self.session_id.clone().map(|id| Conversation { id, totals: Usage::default() })
    }
}

impl Stream {
    /// The turn's tokens so far, when this model call's usage is new.
    fn progress(&mut self, message: &Value) -> Option<Mapped> {
        let id = message["id"].as_str()?;
        let usage = tokens(&message["usage"]);
        if self.calls_usage.get(id) == Some(&usage) {
            return None;
        }
        self.calls_usage.insert(id.to_owned(), usage);
        let mut total = Usage::default();
        for u in self.calls_usage.values() {
            total.input_tokens += u.input_tokens;
            total.output_tokens += u.output_tokens;
            total.cached_input_tokens += u.cached_input_tokens;
        }
        Some(Mapped::Progress(total))
    }

    fn blocks(&mut self, content: &Value) -> Vec<Mapped> {
        let mut out = vec![];
        for b in content.as_array().into_iter().flatten() {
            match b["type"].as_str() {
                Some("text") => {
                    let text = b["text"].as_str().unwrap_or_default().trim();
                    if !text.is_empty() {
                        out.push(Mapped::Message(text.to_owned()));
                    }
                }
                Some("tool_use") => {
                    let id = b["id"].as_str().unwrap_or_default().to_owned();
                    let name = tool_name(b["name"].as_str().unwrap_or_default());
                    self.calls.insert(id.clone(), name.clone());
                    out.push(Mapped::ToolCall { id, name, arguments: b["input"].clone() });
                }
                Some("tool_result") => {
                    let id = b["tool_use_id"].as_str().unwrap_or_default().to_owned();
                    let name = self.calls.get(&id).cloned().unwrap_or_default();
                    let is_error = b["is_error"].as_bool().unwrap_or(false);
                    out.push(Mapped::ToolResult { id, name, content: content_text(&b["content"]), is_error });
                }
                _ => {}
            }
        }
        out
    }
}

/// `mcp__agentsky__report_status` → `agentsky.report_status`: the server and tool a person recognises.
fn tool_name(name: &str) -> String {
    match name.strip_prefix("mcp__").and_then(|rest| rest.split_once("__")) {
        Some((server, tool)) => format!("{server}.{tool}"),
        None => name.to_owned(),
    }
}

/// The final `result` line: its error when the turn failed, and the turn's usage and cost.
fn result(v: &Value) -> Vec<Mapped> {
    let mut out = vec![];
    if v["is_error"] == true || v["subtype"].as_str().is_some_and(|s| s != "success") {
        let why =
            v["result"].as_str().filter(|r| !r.is_empty()).unwrap_or_else(|| v["subtype"].as_str().unwrap_or("error"));
        out.push(Mapped::Error(format!("Claude Code: {why}")));
    }
    out.push(Mapped::Usage(Usage { cost_usd: run_cost(v), ..tokens(&v["usage"]) }));
    out
}

/// A Messages API `usage`: every input token (cache writes and reads included), the output, the reads.
fn tokens(u: &Value) -> Usage {
    let n = |k: &str| u[k].as_i64().unwrap_or(0);
    Usage {
        input_tokens: n("input_tokens") + n("cache_creation_input_tokens") + n("cache_read_input_tokens"),
        output_tokens: n("output_tokens"),
        cached_input_tokens: n("cache_read_input_tokens"),
        cost_usd: None,
    }
}

/// This run's cost: `total_cost_usd` adds up over a resumed conversation, the per-model costs since the
/// last result do not.
fn run_cost(v: &Value) -> Option<f64> {
    match v["model_usage_since_last_result"].as_object() {
        Some(models) => Some(models.values().filter_map(|m| m["costUSD"].as_f64()).sum()),
        None => v["total_cost_usd"].as_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mcp_config_names_both_servers_and_no_secret() {
        let c = mcp_config(Path::new("/usr/bin/sky"), "https://x.example", "https://x.example/v1/help/mcp");
        assert_eq!(c["mcpServers"]["agentsky"]["args"], json!(["mcp", "--server", "https://x.example"]));
        assert_eq!(c["mcpServers"]["agentsky_help"]["url"], "https://x.example/v1/help/mcp");
        assert!(!c.to_string().contains("sst_"), "the session token stays in the environment");
    }

    #[test]
    fn tool_names_read_as_server_and_tool() {
        assert_eq!(tool_name("mcp__agentsky__ask_user"), "agentsky.ask_user");
        assert_eq!(tool_name("Bash"), "Bash");
    }

    #[test]
    fn thinking_levels_map_to_a_budget() {
        assert_eq!(thinking_tokens("off"), Some(0));
        assert_eq!(thinking_tokens("high"), Some(32_000));
        assert_eq!(thinking_tokens(""), None);
    }
}

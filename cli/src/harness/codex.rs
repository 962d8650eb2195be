//! Codex as a runner's agent: `codex exec --json`, the message on stdin (`-`), JSON Lines out.
//!
//! - **Servers, model and provider:** `-c` overrides on the command line, so the person's own
//!   `config.toml` (and their sign-in beside it) is used as it is and never written: `mcp_servers.agentsky`
//!   (this `sky mcp`), `mcp_servers.agentsky_help` (the help server over HTTP), `model`, and
//!   `model_reasoning_effort` from the session's `thinking`. Codex reads its model endpoint only from its
//!   configuration, not from `OPENAI_BASE_URL`: when the runner's environment names one, it becomes a
//!   provider `agentsky_openai` with that `base_url` and `OPENAI_API_KEY` as its key.
//! - **Sandbox:** `approval_policy="never"` (nothing waits for a terminal no one watches) and the sandbox
//!   the agent's `tool_approval` maps to ([`sandbox`]): by default `workspace-write`, so commands write
//!   only inside the turn's folder. `tool_timeout_sec` lets a session tool wait for a person.
//! - **Conversation:** `codex exec resume <thread_id>` with the id the last turn's stream named.

use super::{content_text, not_json, Conversation, Launch, Mapped, Mapper, Setup, Usage};
use serde_json::Value;
use std::path::Path;

/// What `sky mcp` reads from its environment in a runner's turn.
const SESSION_VARS: [&str; 4] =
    ["AGENTSKY_SESSION_ID", "AGENTSKY_SESSION_TOKEN", "AGENTSKY_SERVER", "AGENTSKY_GRANTS_FILE"];

/// A TOML string, quoted: what a `-c key=value` override reads as a string.
fn toml_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".into())
}

/// Codex's reasoning effort for a session's `thinking` level.
pub fn reasoning_effort(level: &str) -> Option<&'static str> {
    match level {
        "off" => Some("minimal"),
        "low" => Some("low"),
        "medium" => Some("medium"),
        "high" => Some("high"),
        _ => None,
    }
}

/// Codex's sandbox for an agent's `tool_approval`: `codex exec` cannot ask anyone, so its sandbox is what
/// keeps commands to the turn's folder (`outside_folder`), to reading (`every_change`), or lets them go
/// anywhere (`none`).
pub fn sandbox(approval: &str) -> &'static str {
    match approval {
        "none" => "danger-full-access",
        "every_change" => "read-only",
        _ => "workspace-write",
    }
}

/// The sandbox this turn runs in: the agent's ([`sandbox`]) on a person's machine; in a hosted sandbox
/// (its runner's token is in the environment) none of Codex's own, as the container is the sandbox and
/// has no Linux namespaces to give Codex's.
fn sandbox_here(s: &Setup<'_>) -> &'static str {
    match std::env::var_os(agentsky_wire::runner::HOSTED_VARS[1]) {
        Some(_) => "danger-full-access",
        None => sandbox(super::tool_approval(s.agent)),
    }
}

/// The `-c` overrides a turn gives Codex. `base_url` is the runner's `OPENAI_BASE_URL`, if any.
pub fn overrides(s: &Setup<'_>, base_url: Option<&str>) -> Vec<String> {
    let mut c = vec![
        format!("mcp_servers.agentsky.command={}", toml_string(&s.sky_exe.to_string_lossy())),
        format!("mcp_servers.agentsky.args=[\"mcp\",\"--server\",{}]", toml_string(s.server)),
        // Codex starts MCP servers with a narrow environment: `sky mcp` needs the turn's session variables,
        // passed by name (the token never appears on a command line).
        format!("mcp_servers.agentsky.env_vars=[{}]", SESSION_VARS.map(|v| format!("\"{v}\"")).join(",")),
        format!("mcp_servers.agentsky_help.url={}", toml_string(s.help_server)),
        // With approvals `never`, an MCP tool not approved by default fails every call.
        "mcp_servers.agentsky.default_tools_approval_mode=\"approve\"".to_owned(),
        "mcp_servers.agentsky_help.default_tools_approval_mode=\"approve\"".to_owned(),
        "approval_policy=\"never\"".to_owned(),
        // A person's answer may take the session server's whole 5 minutes (Codex's default is 60 s).
        format!("mcp_servers.agentsky.tool_timeout_sec={}", super::TOOL_TIMEOUT_S),
        format!("sandbox_mode=\"{}\"", sandbox_here(s)),
    ];
    if let Some(model) = Some(s.agent.model.as_str()).filter(|m| !m.is_empty()) {
        c.push(format!("model={}", toml_string(model)));
    }
    if let Some(effort) = reasoning_effort(&s.agent.thinking) {
        c.push(format!("model_reasoning_effort=\"{effort}\""));
    }
    if let Some(instructions) = Some(s.agent.instructions.as_str()).filter(|i| !i.trim().is_empty()) {
        c.push(format!("developer_instructions={}", toml_string(instructions)));
    }
    if let Some(url) = base_url.filter(|u| !u.is_empty()) {
        c.push("model_provider=\"agentsky_openai\"".to_owned());
        c.push("model_providers.agentsky_openai.name=\"OpenAI-compatible (from OPENAI_BASE_URL)\"".to_owned());
        c.push(format!("model_providers.agentsky_openai.base_url={}", toml_string(url)));
        c.push("model_providers.agentsky_openai.env_key=\"OPENAI_API_KEY\"".to_owned());
        c.push("model_providers.agentsky_openai.wire_api=\"responses\"".to_owned());
    }
    c
}

pub fn launch(exe: &Path, s: &Setup<'_>) -> std::io::Result<Launch> {
    let base_url = std::env::var("OPENAI_BASE_URL").ok();
    let mut argv: Vec<String> = vec![exe.to_string_lossy().into_owned(), "exec".into()];
    if let Some(id) = s.resume {
        argv.extend(["resume".to_owned(), id.to_owned()]);
    }
    argv.extend(["--json", "--skip-git-repo-check"].map(str::to_owned));
    if s.resume.is_none() {
        // `resume` keeps the sandbox the conversation began with.
        argv.extend(["--sandbox".to_owned(), sandbox_here(s).to_owned()]);
    }
    for o in overrides(s, base_url.as_deref()) {
        argv.extend(["-c".to_owned(), o]);
    }
    argv.push("-".into());
    Ok(Launch { argv, env: vec![] })
}

/// Codex's `exec --json` lines read into session events.
#[derive(Default)]
pub struct Stream {
    thread_id: Option<String>,
    /// The thread's usage before this turn, and as the last `turn.completed` reported it.
    before: Usage,
    totals: Usage,
}

impl Stream {
    /// A stream that continues `before`: its usage counts from there.
    pub fn continuing(before: Conversation) -> Self {
        Self { thread_id: None, totals: before.totals.clone(), before: before.totals }
    }
}

impl Mapper for Stream {
    fn line(&mut self, line: &str) -> Vec<Mapped> {
        let Ok(v) = serde_json::from_str::<Value>(line) else { return not_json(line) };
        match v["type"].as_str() {
            Some("thread.started") => {
                self.thread_id = v["thread_id"].as_str().map(str::to_owned);
                vec![]
            }
            Some("item.started") => started(&v["item"]),
            Some("item.completed") => completed(&v["item"]),
            Some("turn.completed") => {
                // Codex counts the whole thread: this turn's usage is what it added.
                let u = &v["usage"];
                let n = |k: &str| u[k].as_i64().unwrap_or(0);
                self.totals = Usage {
                    input_tokens: n("input_tokens"),
                    output_tokens: n("output_tokens"),
                    cached_input_tokens: n("cached_input_tokens"),
                    cost_usd: None,
                };
                let (now, was) = (&self.totals, &self.before);
                vec![Mapped::Usage(Usage {
                    input_tokens: (now.input_tokens - was.input_tokens).max(0),
                    output_tokens: (now.output_tokens - was.output_tokens).max(0),
                    cached_input_tokens: (now.cached_input_tokens - was.cached_input_tokens).max(0),
                    cost_usd: None,
                })]
            }
            Some("turn.failed") => vec![Mapped::Error(format!("Codex: {}", message_of(&v["error"])))],
            // Also said of what does not end the turn (a model it has no metadata for); `turn.failed` follows
            // when it does.
            Some("error") => vec![Mapped::Status(format!("Codex: {}", message_of(&v)))],
            _ => vec![],
        }
    }

    fn conversation(&self) -> Option<Conversation> {
        self.thread_id.clone().map(|id| Conversation { id, totals: self.totals.clone() })
    }
}

fn message_of(v: &Value) -> String {
    v["message"].as_str().map(str::to_owned).unwrap_or_else(|| v.to_string())
}

fn id_of(item: &Value) -> String {
    item["id"].as_str().unwrap_or_default().to_owned()
}

/// A tool call shows when it starts; its result when it completes.
fn started(item: &Value) -> Vec<Mapped> {
    let id = id_of(item);
    match item["type"].as_str() {
        Some("command_execution") => vec![Mapped::ToolCall {
            id,
            name: "shell".into(),
            arguments: serde_json::json!({ "command": item["command"] }),
        }],
        Some("mcp_tool_call") => {
            vec![Mapped::ToolCall { id, name: mcp_name(item), arguments: item["arguments"].clone() }]
        }
        _ => vec![],
    }
}

fn mcp_name(item: &Value) -> String {
    format!("{}.{}", item["server"].as_str().unwrap_or("?"), item["tool"].as_str().unwrap_or("?"))
}

fn completed(item: &Value) -> Vec<Mapped> {
    let id = id_of(item);
    match item["type"].as_str() {
        Some("agent_message") => {
            let text = item["text"].as_str().unwrap_or_default().trim();
            if text.is_empty() {
                vec![]
            } else {
                vec![Mapped::Message(text.to_owned())]
            }
        }
        Some("command_execution") => {
            let exit = item["exit_code"].as_i64();
            vec![Mapped::ToolResult {
                id,
                name: "shell".into(),
                content: item["aggregated_output"].as_str().unwrap_or_default().to_owned(),
                is_error: exit != Some(0),
            }]
        }
        Some("mcp_tool_call") => {
            let failed = !item["error"].is_null() || item["status"] == "failed";
            // A tool that answered with an error has its text in `result`; a call that never ran, in `error`.
            let content = match (&item["error"], item["result"].get("content")) {
                (Value::Null, Some(content)) => content_text(content),
                (Value::Null, None) => content_text(&item["result"]),
                (error, _) => message_of(error),
            };
            vec![Mapped::ToolResult { id, name: mcp_name(item), content, is_error: failed }]
        }
        Some("file_change") => {
            let files: Vec<String> = item["changes"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| format!("{} {}", c["kind"].as_str().unwrap_or("changed"), c["path"].as_str().unwrap_or("?")))
                .collect();
            vec![Mapped::Status(format!("files: {}", files.join(", ")))]
        }
        // An error item does not end the turn (a model Codex has no metadata for); `turn.failed` does.
        Some("error") => vec![Mapped::Status(format!("Codex: {}", message_of(item)))],
        _ => vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use agentsky_wire::runner::AgentView;
    use serde_json::json;

    fn setup<'a>(agent: &'a AgentView, meta: &'a Path) -> Setup<'a> {
        Setup {
            agent,
            meta,
            sky_exe: Path::new("/opt/sky"),
            server: "https://x.example",
            help_server: "https://x.example/v1/help/mcp",
            resume: None,
        }
    }

    #[test]
    fn overrides_name_both_servers_the_model_and_a_provider_for_a_base_url() {
        let agent: AgentView = serde_json::from_value(
            json!({"model": "gpt-5-codex", "thinking": "high", "instructions": "Be \"brief\"."}),
        )
        .unwrap();
        let o = overrides(&setup(&agent, Path::new("/m")), Some("http://127.0.0.1:9/v1"));
        assert!(o.contains(&"mcp_servers.agentsky.command=\"/opt/sky\"".to_owned()), "{o:?}");
        assert!(o.contains(&"mcp_servers.agentsky.args=[\"mcp\",\"--server\",\"https://x.example\"]".to_owned()));
        assert!(o.contains(&"mcp_servers.agentsky_help.url=\"https://x.example/v1/help/mcp\"".to_owned()));
        assert!(o.iter().any(
            |c| c.starts_with("mcp_servers.agentsky.env_vars=[\"AGENTSKY_SESSION_ID\",\"AGENTSKY_SESSION_TOKEN\"")
        ));
        assert!(o.contains(&"model=\"gpt-5-codex\"".to_owned()));
        assert!(o.contains(&"model_reasoning_effort=\"high\"".to_owned()));
        assert!(o.contains(&"developer_instructions=\"Be \\\"brief\\\".\"".to_owned()), "quotes escaped");
        assert!(o.contains(&"model_providers.agentsky_openai.base_url=\"http://127.0.0.1:9/v1\"".to_owned()));
        let plain = overrides(&setup(&AgentView::default(), Path::new("/m")), None);
        assert!(!plain.iter().any(|c| c.starts_with("model_provider")), "no base URL, Codex's own provider");
    }

    #[test]
    fn resume_continues_the_thread_with_the_message_on_stdin() {
        let agent = AgentView::default();
        let mut s = setup(&agent, Path::new("/m"));
        s.resume = Some("th_1");
        let l = launch(Path::new("/bin/codex"), &s).unwrap();
        assert_eq!(&l.argv[..5], ["/bin/codex", "exec", "resume", "th_1", "--json"]);
        assert_eq!(l.argv.last().unwrap(), "-");
    }
}

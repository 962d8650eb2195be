//! The coding agent CLIs a runner launches itself: an agent whose harness is `claude-code` or `codex`
//! needs no `-- <command>`. For each turn the runner finds the CLI on its `PATH`, writes the CLI's own
//! configuration into the turn's `meta/` folder (never the person's own files), and reads the CLI's
//! machine-readable stream ([`Mapper`]) into typed session events instead of stdout lines.
//!
//! - [`claude`]: `claude -p --output-format stream-json --verbose`, the session server and the help server
//!   in a per-turn `--mcp-config`, `--resume <session_id>` for the next turn.
//! - [`codex`]: `codex exec --json`, both servers, the model and its provider as `-c` overrides,
//!   `codex exec resume <thread_id>` for the next turn.

pub mod claude;
pub mod codex;

use agentsky_wire::runner::{AgentView, EventType, HistoryEntry, Role};
use serde_json::{json, Value};
use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// What runs a claimed turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Harness {
    /// The runner's own command (`sky runner -- <command…>`): the `runner` harness.
    Command,
    ClaudeCode,
    Codex,
}

impl Harness {
    /// The harness the claim names (`agent.harness`); a server too old to name one runs `runner` agents.
    pub fn of(agent: &AgentView) -> Self {
        match agent.harness.as_deref() {
            Some("claude-code") => Harness::ClaudeCode,
            Some("codex") => Harness::Codex,
            _ => Harness::Command,
        }
    }

    /// The executable looked for on `PATH`, and the npm package that installs it.
    pub fn cli(self) -> Option<(&'static str, &'static str)> {
        match self {
            Harness::Command => None,
            Harness::ClaudeCode => Some(("claude", "@anthropic-ai/claude-code")),
            Harness::Codex => Some(("codex", "@openai/codex")),
        }
    }
}

/// How long a coding agent CLI lets one session tool call run: past the 5 minutes a tool that waits for
/// a person may hold it.
pub const TOOL_TIMEOUT_S: u64 = 600;

/// The agent's `tool_approval` (`outside_folder` when the server names none).
pub fn tool_approval(agent: &AgentView) -> &str {
    agent.tool_approval.as_deref().unwrap_or("outside_folder")
}

/// What a turn of a coding agent CLI needs from the runner.
pub struct Setup<'a> {
    /// The claim's `agent`: `harness`, `model`, `thinking`, `instructions`, `tool_approval`.
    pub agent: &'a AgentView,
    /// The turn's `meta/` folder, where per-turn configuration is written.
    pub meta: &'a Path,
    /// This `sky`, which serves the session server on stdio (`sky mcp`).
    pub sky_exe: &'a Path,
    /// The server's base URL.
    pub server: &'a str,
    /// `<server>/v1/help/mcp`.
    pub help_server: &'a str,
    /// The CLI's own conversation to continue, from this session's last turn on this runner.
    pub resume: Option<&'a str>,
}

/// The command to start and what to add to its environment.
#[derive(Debug, Clone, PartialEq)]
pub struct Launch {
    pub argv: Vec<String>,
    pub env: Vec<(String, OsString)>,
}

/// Finds `name` on `path` (the runner's `PATH`): the first executable file of that name (on Windows, with
/// one of `PATHEXT`'s extensions: npm installs its CLIs as `claude.cmd` and `codex.cmd`).
pub fn find_on_path(name: &str, path: Option<&std::ffi::OsStr>) -> Option<PathBuf> {
    let path = path?;
    let pathext = cfg!(windows).then(|| std::env::var("PATHEXT").unwrap_or_else(|_| ".COM;.EXE;.BAT;.CMD".into()));
    let names = file_names(name, pathext.as_deref());
    std::env::split_paths(path).flat_map(|dir| names.iter().map(move |n| dir.join(n))).find(|p| is_executable(p))
}

/// The file names `name` may have: itself, or with each of `pathext`'s extensions (Windows).
fn file_names(name: &str, pathext: Option<&str>) -> Vec<String> {
    match pathext {
        None => vec![name.to_owned()],
        Some(exts) => {
            exts.split(';').filter(|e| !e.is_empty()).map(|e| format!("{name}{}", e.to_lowercase())).collect()
        }
    }
}

/// A batch file (`.cmd`, `.bat`, as npm installs CLIs on Windows) cannot be started directly: it runs
/// through `cmd.exe /d /c` (no AutoRun commands), as Windows documents.
fn through_cmd(argv: Vec<String>) -> Vec<String> {
    let batch = argv.first().is_some_and(|exe| {
        let exe = exe.to_ascii_lowercase();
        exe.ends_with(".cmd") || exe.ends_with(".bat")
    });
    if !batch {
        return argv;
    }
    ["cmd", "/d", "/c"].iter().map(|s| (*s).to_owned()).chain(argv).collect()
}

#[cfg(unix)]
fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

#[cfg(not(unix))]
fn is_executable(p: &Path) -> bool {
    p.is_file()
}

/// The turn's launch for `harness`, with the CLI found at `exe`.
pub fn launch(harness: Harness, exe: &Path, setup: &Setup<'_>) -> std::io::Result<Launch> {
    let launch = match harness {
        Harness::ClaudeCode => claude::launch(exe, setup),
        Harness::Codex => codex::launch(exe, setup),
        Harness::Command => Err(std::io::Error::new(std::io::ErrorKind::InvalidInput, "not a CLI harness")),
    }?;
    Ok(Launch { argv: through_cmd(launch.argv), ..launch })
}

/// The message a CLI is given when it cannot continue its own conversation but the session has one: a
/// short summary of the session so far (the last messages, each cut short), then the new message.
pub fn fresh_start(history: &[HistoryEntry], message: &str) -> Option<String> {
    const KEEP: usize = 20;
    const EACH: usize = 2_000;
    // The history ends with this turn's message.
    let earlier = &history[..history.len().saturating_sub(1)];
    if earlier.is_empty() {
        return None;
    }
    let mut out = String::from(
        "You are continuing an agentsky session whose earlier turns ran elsewhere. The conversation so far \
         (oldest first, long messages cut short):\n\n",
    );
    if earlier.len() > KEEP {
        out.push_str(&format!("[{} earlier messages left out]\n\n", earlier.len() - KEEP));
    }
    for m in &earlier[earlier.len().saturating_sub(KEEP)..] {
        let who = match m.role {
            Role::Agent => "you",
            Role::Peer => "a peer session",
            Role::User | Role::Other => "the user",
        };
        let text = m.text.as_str();
        let cut: String = text.chars().take(EACH).collect();
        let more = if cut.len() < text.len() { " […]" } else { "" };
        out.push_str(&format!("{who}: {cut}{more}\n\n"));
    }
    out.push_str("The new message:\n\n");
    out.push_str(message);
    Some(out)
}

/// One thing a CLI's stream said, as the session records it.
#[derive(Debug, Clone, PartialEq)]
pub enum Mapped {
    /// The agent's text to the person.
    Message(String),
    /// A tool call: its id, name and arguments.
    ToolCall { id: String, name: String, arguments: Value },
    /// A tool's result, by the call's id.
    ToolResult { id: String, name: String, content: String, is_error: bool },
    /// Progress worth showing that is neither (the CLI's own notices).
    Status(String),
    /// The CLI reported an error.
    Error(String),
    /// Tokens and cost of the turn as the CLI reports them at its end (recorded, not charged: the person's
    /// CLI pays its own provider): a line in the transcript, and the turn's usage for the server.
    Usage(Usage),
    /// The turn's tokens so far, while it runs (Claude Code reports each model call's): posted, not
    /// shown, so the session's budget can stop a turn before its end.
    Progress(Usage),
}

/// A turn's token usage as a CLI reports it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Usage {
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cached_input_tokens: i64,
    /// What the CLI says the turn cost, in US dollars, when it says (Claude Code does; Codex does not).
    pub cost_usd: Option<f64>,
}

impl Usage {
    /// As the runner posts it (`usage` of `POST /v1/runner/events`): the whole turn's so far.
    pub fn body(&self) -> agentsky_wire::runner::Usage {
        agentsky_wire::runner::Usage {
            input_tokens: self.input_tokens,
            cached_input_tokens: Some(self.cached_input_tokens),
            output_tokens: self.output_tokens,
            cost_usd: self.cost_usd,
        }
    }
}

impl Mapped {
    /// The turn's usage it carries, for the server's record and the session's budget.
    pub fn usage(&self) -> Option<&Usage> {
        match self {
            Mapped::Usage(u) | Mapped::Progress(u) => Some(u),
            _ => None,
        }
    }

    /// The session event it becomes, `(type, body)`: none for [`Mapped::Progress`], which is only the
    /// post's `usage`.
    pub fn event(&self) -> Option<(EventType, Value)> {
        Some(match self {
            Mapped::Message(text) => (EventType::AgentMessage, json!({ "text": text })),
            Mapped::ToolCall { id, name, arguments } => {
                (EventType::ToolCall, json!({ "call_id": id, "name": name, "arguments": arguments }))
            }
            Mapped::ToolResult { id, name, content, is_error } => (
                EventType::ToolResult,
                json!({ "call_id": id, "name": name, "content": content, "is_error": is_error }),
            ),
            Mapped::Status(text) => (EventType::Status, json!({ "text": text })),
            Mapped::Error(message) => (EventType::Error, json!({ "message": message })),
            Mapped::Progress(_) => return None,
            Mapped::Usage(u) => {
                let mut text = format!(
                    "usage: {} input tokens ({} cached), {} output tokens",
                    u.input_tokens, u.cached_input_tokens, u.output_tokens
                );
                if let Some(c) = u.cost_usd {
                    text.push_str(&format!(", ${c:.4} reported by the CLI"));
                }
                (EventType::Status, json!({ "text": text, "usage": u.body() }))
            }
        })
    }
}

/// A CLI's own conversation, as the runner keeps it between a session's turns.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Conversation {
    /// What the next turn resumes: Claude Code's `session_id`, Codex's `thread_id`.
    pub id: String,
    /// The usage the CLI reported so far for the whole conversation (Codex counts per thread, so one
    /// turn's usage is the difference).
    pub totals: Usage,
}

/// Reads one CLI's stream, line by line.
pub trait Mapper: Send {
    /// What one line of the CLI's stdout says (nothing for a line it does not show).
    fn line(&mut self, line: &str) -> Vec<Mapped>;
    /// The CLI's own conversation, once the stream named it: what the next turn resumes.
    fn conversation(&self) -> Option<Conversation>;
}

/// The mapper of a CLI harness, continuing `before` when the turn resumes it.
pub fn mapper(harness: Harness, before: Option<&Conversation>) -> Option<Box<dyn Mapper>> {
    let before = before.cloned().unwrap_or_default();
    match harness {
        Harness::ClaudeCode => Some(Box::new(claude::Stream::default())),
        Harness::Codex => Some(Box::new(codex::Stream::continuing(before))),
        Harness::Command => None,
    }
}

/// A line that is not the JSON the stream promised: shown as it is, as a status.
fn not_json(line: &str) -> Vec<Mapped> {
    let line = line.trim();
    if line.is_empty() {
        vec![]
    } else {
        vec![Mapped::Status(line.to_owned())]
    }
}

/// A tool result's content as text: a string as it is, an array of content blocks as their texts.
fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(blocks) => blocks
            .iter()
            .map(|b| b["text"].as_str().map(str::to_owned).unwrap_or_else(|| b.to_string()))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read<T: serde::de::DeserializeOwned>(v: Value) -> T {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn the_claim_names_the_harness_and_older_servers_run_commands() {
        let of = |v: Value| Harness::of(&read(v));
        assert_eq!(of(json!({"harness": "claude-code"})), Harness::ClaudeCode);
        assert_eq!(of(json!({"harness": "codex"})), Harness::Codex);
        assert_eq!(of(json!({"harness": "runner"})), Harness::Command);
        assert_eq!(of(json!({"name": "old server"})), Harness::Command);
    }

    #[test]
    fn a_fresh_start_summarises_the_earlier_conversation_and_ends_with_the_new_message() {
        let one: Vec<HistoryEntry> = read(json!([{"role": "user", "text": "hi"}]));
        assert_eq!(fresh_start(&one, "hi"), None, "a first turn needs no summary");
        let h: Vec<HistoryEntry> = read(json!([
            {"role": "user", "text": "write a poem"},
            {"role": "agent", "text": "roses are red"},
            {"role": "user", "text": "another"},
        ]));
        let text = fresh_start(&h, "another").unwrap();
        assert!(text.contains("the user: write a poem\n\nyou: roses are red"), "{text}");
        assert!(text.ends_with("The new message:\n\nanother"), "{text}");
        let long: Vec<HistoryEntry> = (0..30).map(|i| read(json!({"role": "user", "text": format!("m{i}")}))).collect();
        let text = fresh_start(&long, "m29").unwrap();
        assert!(text.contains("[9 earlier messages left out]") && !text.contains("m8\n") && text.contains("m9\n"));
    }

    #[test]
    fn windows_finds_npms_batch_files_and_runs_them_through_cmd() {
        assert_eq!(file_names("claude", None), ["claude"]);
        assert_eq!(file_names("claude", Some(".COM;.EXE;.CMD;")), ["claude.com", "claude.exe", "claude.cmd"]);
        let argv = |v: &[&str]| v.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        assert_eq!(
            through_cmd(argv(&["C:\\npm\\claude.CMD", "-p"])),
            argv(&["cmd", "/d", "/c", "C:\\npm\\claude.CMD", "-p"])
        );
        assert_eq!(through_cmd(argv(&["/usr/bin/claude", "-p"])), argv(&["/usr/bin/claude", "-p"]));
    }

    #[test]
    fn only_an_executable_file_on_the_path_is_found() {
        let dir = tempfile::tempdir().unwrap();
        let exe = dir.path().join("claude");
        std::fs::write(&exe, "#!/bin/sh\n").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(find_on_path("claude", Some(dir.path().as_os_str())), None, "not executable yet");
            std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        assert_eq!(find_on_path("claude", Some(dir.path().as_os_str())), Some(exe));
        assert_eq!(find_on_path("codex", Some(dir.path().as_os_str())), None);
    }
}

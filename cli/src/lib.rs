//! `sky`, the agentsky command line. The map:
//! - [`args`] — the command line parsed (`lexopt`): the words, the options, what follows `--`.
//! - [`context`] — where things live on this machine (home, config dirs, `PATH`), read once, so tests can
//!   point every path at a scratch directory.
//! - [`config`] — sky's own config file: the server and the signed-in key (owner-only permissions).
//! - [`api`] — blocking HTTP to the server (rustls, no OpenSSL), JSON in and out.
//! - [`auth`] — `sky auth login | status | logout`, device-code sign-in.
//! - [`approvals`] — `sky approvals`: answer the workspace's open requests in a plain terminal.
//! - [`notify`] — desktop notifications and the terminal's title, for `sky approvals --watch`.
//! - [`edit`] — pure edits of Claude Code's `~/.claude.json` and Codex's `config.toml` that keep every
//!   other byte of the file.
//! - [`files`] — planned file changes: the diff `--dry-run` prints, and atomic writes.
//! - [`skill`] — the `agentsky` skill: `SKILL.md` and the `catalog.md` made from the live catalog.
//! - [`company_skills`] — the workspace's own skills, written where Claude Code and Codex read skills.
//! - [`setup`] — `sky setup`: find Claude Code and Codex, plan every change, show or apply it.
//! - [`relay`] — `sky mcp`: the session server on stdio, relayed to `/v1/session/mcp`.
//! - [`runner`] — `sky runner`: registration and the claim loop.
//! - [`runner_client`] — the runner protocol's calls (`/v1/runner/*`, bodies typed by `agentsky-wire`),
//!   which the loop and a turn both make; it names neither (runner → turn → runner_client).
//! - [`command_line`] — `--command "<line>"` as an argv, and an argv shown for people.
//! - [`harness`] — Claude Code and Codex as a runner's agents: their per-turn configuration, and their
//!   streams read into typed session events.
//! - [`turn`] — one claimed turn: its folder, the agent's command under a supervisor, output as events,
//!   the lease, the changed files uploaded.
//! - [`shim`] — the provider CLI shims a turn's agent finds first on its `PATH`.
//! - [`grants_file`] — the grant ids a turn remembers, which `sky mcp` notes and the shims read.
//! - [`granted`] — the channel a shim asks its turn's runner to run the real CLI under a grant through.
//! - [`redaction`] — the server's redaction rule (from the shared `agentsky-wire` crate), for what a
//!   runner posts (output, command lines).
//!
//! Nothing here prints a key in full: output shows its prefix only.

pub mod api;
pub mod approvals;
pub mod args;
pub mod auth;
pub mod command_line;
pub mod company_skills;
pub mod config;
pub mod context;
pub mod edit;
pub mod files;
pub mod granted;
pub mod grants_file;
pub mod harness;
pub mod notify;
pub mod relay;
pub mod runner;
pub mod runner_client;
pub mod setup;
pub mod shim;
pub mod skill;
pub mod turn;

/// The one redaction rule, shared with the server: what a runner posts is redacted as the server would.
pub use agentsky_wire::redact as redaction;

use std::fmt;

/// A failure to show the person: one clear sentence (or a few), no backtrace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub String);

impl Error {
    pub fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

pub type Result<T> = std::result::Result<T, Error>;

/// The server a fresh install talks to.
pub const DEFAULT_SERVER: &str = "http://127.0.0.1:8787";

/// What output shows of a key: enough to recognise it (the server's own prefix length), never enough to
/// use it.
pub fn key_prefix(key: &str) -> String {
    key.chars().take(12).collect()
}

/// Replaces every occurrence of `key` in `text` with its prefix and an ellipsis.
pub fn redact(text: &str, key: &str) -> String {
    if key.is_empty() {
        return text.to_owned();
    }
    text.replace(key, &format!("{}…", key_prefix(key)))
}

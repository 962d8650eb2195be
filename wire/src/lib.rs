//! What the agentsky server (a Worker) and the `sky` CLI (a runner on someone's machine) must agree on,
//! kept in one crate both depend on, so neither keeps a copy that can drift: the rule for a task file's
//! path, how a command is shown, the one redaction rule, how a target is named and the runner protocol's bodies. Pure Rust, no
//! I/O, builds for wasm32 and the host alike.

pub mod argv;
pub mod paths;
pub mod redact;
pub mod runner;
pub mod skills;
pub mod targets;

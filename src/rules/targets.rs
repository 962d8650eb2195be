//! Targets (the workspace's connectors) as agents name them: the matching rule is the wire crate's,
//! shared with the runner's shims.

use crate::rules::params::words;
pub use agentsky_wire::targets::{Target, ENVS, PROVIDERS, SCOPES};

words! {
    /// Where a target lives (the wire crate's `PROVIDERS`, which the CLI shares).
    pub enum Provider { Vercel = "vercel", Aws = "aws", Gcp = "gcp", Supabase = "supabase", Github = "github", Ssh = "ssh" }
}

words! {
    /// Which environment a target is (the wire crate's `ENVS`).
    pub enum TargetEnv { Prod = "prod", Staging = "staging", Preview = "preview", Scm = "scm" }
}

words! {
    /// What an agent may do to a target (the wire crate's `SCOPES`).
    pub enum TargetScope { Read = "read", Write = "write", Deploy = "deploy", Delete = "delete" }
}

/// How a target name matched, or why none did.
#[derive(Debug)]
pub enum Match<'a, T> {
    One(&'a T),
    Ambiguous(Vec<&'a T>),
    None,
}

/// Finds the target an agent names (see [`agentsky_wire::targets::find`]).
pub fn find<'a, T: Target>(targets: &'a [T], asked: &str) -> Match<'a, T> {
    let mut found = agentsky_wire::targets::find(targets, asked);
    match found.len() {
        0 => Match::None,
        1 => Match::One(found.remove(0)),
        _ => Match::Ambiguous(found),
    }
}

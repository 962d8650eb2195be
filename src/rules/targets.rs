//! Targets (the workspace's connectors) as agents name them: the matching rule is the wire crate's,
//! shared with the runner's shims.

use crate::rules::params::words;
pub use agentsky_wire::targets::{Target, ENVS, PROVIDERS, SCOPES};

words! {
    /// Where a target lives (the wire crate's `PROVIDERS`, which the CLI shares).
    pub enum Provider { Vercel = "vercel", Aws = "aws", Gcp = "gcp", Supabase = "supabase", Github = "github", Ssh = "ssh" }
}

impl Provider {
    /// The API hosts a provider's CLIs and SDKs call with a grant's credential: what a hosted agent's
    /// sandbox may reach for a target of this provider ([`crate::rules::placement::default_egress`]).
    /// `ssh` targets name their own hosts.
    pub fn api_hosts(self) -> &'static [&'static str] {
        match self {
            Provider::Vercel => &["api.vercel.com", "vercel.com"],
            Provider::Aws => &["sts.amazonaws.com", "iam.amazonaws.com", "s3.amazonaws.com"],
            Provider::Gcp => &[
                "oauth2.googleapis.com",
                "sts.googleapis.com",
                "iamcredentials.googleapis.com",
                "www.googleapis.com",
                "storage.googleapis.com",
            ],
            Provider::Supabase => &["api.supabase.com"],
            Provider::Github => &["api.github.com", "github.com"],
            Provider::Ssh => &[],
        }
    }
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

//! Targets (the workspace's connectors) as agents name them: the matching rule is the wire crate's,
//! shared with the runner's shims.

pub use agentsky_wire::targets::{Target, ENVS, PROVIDERS, SCOPES};

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

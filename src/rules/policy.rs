//! Which access policy decides a request. For each scope the most specific rule is in force: the target's
//! own rule, else the workspace-wide one, else none (a person decides). A request is denied when the rule
//! in force for any of its scopes denies; allowed when the rules in force for all of its scopes allow;
//! otherwise a person decides. The answer names the rule that decided (`decidedBy`).
//!
//! Never a level at a time: a workspace-wide `allow` must not override a target's own `ask` (issue 13).

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
pub struct PolicyRow {
    /// The connector it applies to; empty for every connector of the workspace.
    pub connector_id: String,
    pub scope: String,
    /// `ask`, `allow` or `deny`.
    pub decision: String,
}

/// Where the rule in force for a scope comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    /// The target's own rule (the more specific).
    Target,
    /// The workspace-wide rule (`connector_id` empty).
    Workspace,
}

impl Level {
    /// How `decidedBy` names it.
    pub const fn decided_by(self) -> &'static str {
        match self {
            Level::Target => "target-policy",
            Level::Workspace => "policy",
        }
    }
}

/// What the policies decide for a whole request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow(Level),
    Deny(Level),
}

/// The rule in force for `scope` on `connector_id`: its decision (`ask`, `allow`, `deny`) and level.
pub fn in_force<'a>(policies: &'a [PolicyRow], connector_id: &str, scope: &str) -> Option<(&'a str, Level)> {
    let rule = |level: &str| policies.iter().find(|p| p.connector_id == level && p.scope == scope);
    match (rule(connector_id), rule("")) {
        (Some(own), _) => Some((own.decision.as_str(), Level::Target)),
        (None, Some(wide)) => Some((wide.decision.as_str(), Level::Workspace)),
        (None, None) => None,
    }
}

/// What the policies decide for a request of `scopes` on `connector_id`; `None` when a person must.
///
/// A deny is named by the most specific rule that denied. An allow is `target-policy` only when the
/// target's own rules allowed every scope; when a workspace-wide rule allowed any of them it is
/// `policy`, the rule an operator reviewing a broad grant needs to find.
pub fn decide(policies: &[PolicyRow], connector_id: &str, scopes: &[impl AsRef<str>]) -> Option<Verdict> {
    if scopes.is_empty() {
        return None;
    }
    let rules: Vec<Option<(&str, Level)>> =
        scopes.iter().map(|s| in_force(policies, connector_id, s.as_ref())).collect();
    if let Some(level) = rules.iter().flatten().filter(|(d, _)| *d == "deny").map(|(_, l)| *l).min() {
        return Some(Verdict::Deny(level));
    }
    let mut widest = Level::Target;
    for rule in &rules {
        match rule {
            Some(("allow", level)) => widest = widest.max(*level),
            _ => return None,
        }
    }
    Some(Verdict::Allow(widest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(target: &[(&str, &str)], wide: &[(&str, &str)]) -> Vec<PolicyRow> {
        let row = |c: &str, (scope, decision): &(&str, &str)| PolicyRow {
            connector_id: c.into(),
            scope: (*scope).into(),
            decision: (*decision).into(),
        };
        target.iter().map(|r| row("con_web", r)).chain(wide.iter().map(|r| row("", r))).collect()
    }

    #[test]
    fn each_scope_is_decided_by_its_most_specific_rule() {
        use Level::*;
        use Verdict::*;
        type Case<'a> = (&'a [(&'a str, &'a str)], &'a [(&'a str, &'a str)], &'a [&'a str], Option<Verdict>);
        let cases: &[Case] = &[
            (&[("deploy", "ask")], &[("deploy", "allow")], &["deploy"], None),
            (&[], &[("deploy", "allow")], &["deploy"], Some(Allow(Workspace))),
            (&[("deploy", "allow")], &[("deploy", "deny")], &["deploy"], Some(Allow(Target))),
            (&[("deploy", "deny")], &[("deploy", "allow")], &["deploy"], Some(Deny(Target))),
            (&[("read", "allow")], &[("deploy", "allow")], &["read", "deploy"], Some(Allow(Workspace))),
            (&[("read", "allow"), ("deploy", "allow")], &[], &["read", "deploy"], Some(Allow(Target))),
            (&[("read", "ask")], &[("deploy", "deny")], &["read", "deploy"], Some(Deny(Workspace))),
            (&[("deploy", "deny")], &[("read", "deny")], &["read", "deploy"], Some(Deny(Target))),
            (&[("read", "allow")], &[], &["read", "deploy"], None),
            (&[], &[], &["read"], None),
            (&[("read", "allow")], &[], &[], None),
        ];
        for (target, wide, scopes, want) in cases {
            assert_eq!(decide(&rules(target, wide), "con_web", scopes), *want, "{target:?} {wide:?} {scopes:?}");
        }
    }

    #[test]
    fn another_targets_rules_do_not_apply() {
        let mut policies = rules(&[], &[("read", "allow")]);
        policies.push(PolicyRow { connector_id: "con_other".into(), scope: "read".into(), decision: "deny".into() });
        assert_eq!(decide(&policies, "con_web", &["read"]), Some(Verdict::Allow(Level::Workspace)));
        assert_eq!(in_force(&policies, "con_other", "read"), Some(("deny", Level::Target)));
    }
}

//! Stronger approvals for what cannot be undone: a target may require more than one owner or admin to
//! approve a `deploy` or `delete` on production, and a fresh sign-in for each such approval (step-up).
//! The rule, as GitHub's required reviewers and Teleport's access requests do it:
//! - each approver counts once; a denial by anyone who may answer denies at once;
//! - the person who started the session does not approve their own agent's request while another owner
//!   or admin could (when they are the only one, they may, or nothing could ever be approved);
//! - a target asking for more approvers than the workspace has needs all of them;
//! - with step-up, only the console approves, within 10 minutes of signing in (an API key, Slack or a
//!   push notification proves no recent sign-in).
//!
//! Every channel (console, REST, `sky`, MCP, push, Slack) answers through this one rule.

/// The most approvals a target may require.
pub const MAX_APPROVALS: i64 = 5;

/// How recent a console sign-in must be for a step-up approval.
pub const FRESH_SIGN_IN_MS: i64 = 10 * 60_000;

/// A target's rule for `deploy` and `delete` on production.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rule {
    /// Owners or admins who must approve, 1–5.
    pub approvals: i64,
    /// Each approval in the console within [`FRESH_SIGN_IN_MS`] of signing in.
    pub fresh_sign_in: bool,
}

impl Default for Rule {
    fn default() -> Self {
        Rule { approvals: 1, fresh_sign_in: false }
    }
}

/// Whether an access request for `scopes` on a target of `env` falls under its target's rule.
pub fn guarded(env: &str, scopes: &[&str]) -> bool {
    env == "prod" && scopes.iter().any(|s| matches!(*s, "deploy" | "delete"))
}

/// Who is approving, as the rule sees them.
#[derive(Debug, Clone)]
pub struct Approver<'a> {
    pub account_id: &'a str,
    /// Owner or admin of the workspace.
    pub may_approve: bool,
    /// When they signed in to the console, for an approval made there; `None` from any other channel.
    pub console_sign_in_ms: Option<i64>,
}

/// Where a request stands with the rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Need {
    /// Approvals it takes.
    pub approvals: usize,
    /// The session's starter does not count (others can approve).
    pub starter_excluded: bool,
}

/// What the rule takes for a workspace whose owners and admins are `approvers`, for a session `starter`.
pub fn need(rule: Rule, approvers: &[String], starter: Option<&str>) -> Need {
    let others = approvers.iter().filter(|a| Some(a.as_str()) != starter).count();
    let starter_excluded = others > 0 && starter.is_some_and(|s| approvers.iter().any(|a| a == s));
    let pool = if starter_excluded { others } else { approvers.len() };
    let approvals = usize::try_from(rule.approvals).unwrap_or(1).min(pool).max(1);
    Need { approvals, starter_excluded }
}

/// Why `who` may not add an approval now (in words that finish a sentence), or `Ok`.
pub fn refusal(
    rule: Rule,
    need: &Need,
    who: &Approver<'_>,
    starter: Option<&str>,
    already: &[String],
    now_ms: i64,
) -> Result<(), String> {
    if !who.may_approve {
        return Err(format!(
            "this target needs {} approval{} from owners or admins for production deploys and deletes; a member may deny it, not approve it",
            need.approvals,
            if need.approvals == 1 { "" } else { "s" }
        ));
    }
    if need.starter_excluded && Some(who.account_id) == starter {
        return Err(
            "you started this session, so another owner or admin must approve its production deploy or delete".into()
        );
    }
    if already.iter().any(|a| a == who.account_id) {
        return Err(format!(
            "you already approved it; it needs {} more approval{} from other owners or admins",
            need.approvals.saturating_sub(already.len()),
            if need.approvals.saturating_sub(already.len()) == 1 { "" } else { "s" }
        ));
    }
    if rule.fresh_sign_in {
        match who.console_sign_in_ms {
            Some(at) if now_ms - at <= FRESH_SIGN_IN_MS => {}
            Some(_) => {
                return Err(
                    "this target asks for a sign-in within the last 10 minutes: sign out, sign in again and approve"
                        .into(),
                )
            }
            None => {
                return Err("this target asks for a fresh sign-in for each approval: approve it in the console".into())
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    const TWO: Rule = Rule { approvals: 2, fresh_sign_in: false };

    #[test]
    fn only_deploy_and_delete_on_production_are_guarded() {
        assert!(guarded("prod", &["deploy"]) && guarded("prod", &["read", "delete"]));
        assert!(!guarded("prod", &["read", "write"]) && !guarded("staging", &["deploy", "delete"]));
    }

    #[test]
    fn the_starter_counts_only_when_nobody_else_could_approve() {
        assert_eq!(need(TWO, &ids(&["ada", "bob", "cy"]), Some("ada")), Need { approvals: 2, starter_excluded: true });
        // Two owners, one of them the starter: the other alone approves (all the workspace has).
        assert_eq!(need(TWO, &ids(&["ada", "bob"]), Some("ada")), Need { approvals: 1, starter_excluded: true });
        // A one-owner workspace: its owner approves their own agent's request, or nobody could.
        assert_eq!(need(TWO, &ids(&["ada"]), Some("ada")), Need { approvals: 1, starter_excluded: false });
        // A member started it: every owner and admin counts.
        assert_eq!(need(TWO, &ids(&["ada", "bob"]), Some("mo")), Need { approvals: 2, starter_excluded: false });
        assert_eq!(need(Rule::default(), &ids(&["ada", "bob"]), Some("ada")).approvals, 1);
    }

    #[test]
    fn each_approver_once_never_the_starter_and_never_a_member() {
        let n = need(TWO, &ids(&["ada", "bob", "cy"]), Some("ada"));
        let who = |id, may_approve| Approver { account_id: id, may_approve, console_sign_in_ms: None };
        assert!(refusal(TWO, &n, &who("bob", true), Some("ada"), &[], 0).is_ok());
        assert!(refusal(TWO, &n, &who("ada", true), Some("ada"), &[], 0).unwrap_err().contains("you started"));
        assert!(refusal(TWO, &n, &who("bob", true), Some("ada"), &ids(&["bob"]), 0).unwrap_err().contains("1 more"));
        assert!(refusal(TWO, &n, &who("mo", false), Some("ada"), &[], 0).unwrap_err().contains("owners or admins"));
    }

    #[test]
    fn step_up_takes_a_console_sign_in_of_the_last_ten_minutes() {
        let rule = Rule { approvals: 1, fresh_sign_in: true };
        let n = need(rule, &ids(&["ada"]), Some("ada"));
        let at = |console_sign_in_ms| Approver { account_id: "ada", may_approve: true, console_sign_in_ms };
        let now = 100 * 60_000;
        assert!(refusal(rule, &n, &at(Some(now - 9 * 60_000)), None, &[], now).is_ok());
        assert!(refusal(rule, &n, &at(Some(now - 11 * 60_000)), None, &[], now).unwrap_err().contains("sign in again"));
        assert!(refusal(rule, &n, &at(None), None, &[], now).unwrap_err().contains("in the console"));
    }
}

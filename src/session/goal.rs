//! A session's standing goal: an objective (with optional criteria) the session keeps working toward on
//! its own. After every turn the goal is checked; while it is unmet and within its limits, a new turn
//! starts with a continuation message. Every check is a `goal_check` event in the transcript.

use crate::rules::params::{self, Text};
use serde::de::{Deserializer, Error as _};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A criterion as callers give it: plain text, or text with a command that proves it.
#[derive(Debug, Clone, Serialize, PartialEq, schemars::JsonSchema)]
#[serde(untagged)]
pub enum CriterionInput {
    Text(CriterionText),
    Full {
        /// What must be true.
        text: CriterionText,
        /// Exit code 0 proves it (where the session can run commands).
        command: Option<Text<1, 2_000>>,
    },
}

/// What a criterion says must be true.
pub type CriterionText = Text<1, 1_000>;

/// By hand rather than `untagged`, whose refusal is "did not match any variant": a text or an object
/// is decoded as that shape, so a refusal names the rule broken (`criteria[0].text` must be …).
impl<'de> Deserialize<'de> for CriterionInput {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Full {
            text: CriterionText,
            command: Option<Text<1, 2_000>>,
        }
        match Value::deserialize(d)? {
            Value::String(s) => CriterionText::try_from(s).map(CriterionInput::Text).map_err(D::Error::custom),
            v @ Value::Object(_) => params::decode::<Full>(v)
                .map(|f| CriterionInput::Full { text: f.text, command: f.command })
                .map_err(D::Error::custom),
            _ => Err(D::Error::custom("must be a text, or an object {text, command}")),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Criterion {
    pub text: String,
    pub command: Option<String>,
}

impl From<CriterionInput> for Criterion {
    fn from(c: CriterionInput) -> Self {
        match c {
            CriterionInput::Text(text) => Criterion { text: text.into(), command: None },
            CriterionInput::Full { text, command } => {
                Criterion { text: text.into(), command: command.map(String::from) }
            }
        }
    }
}

/// One criterion's verdict at a check: `met` is `null` when it could not be checked here.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Verdict {
    pub criterion: String,
    pub met: Option<bool>,
    pub reason: String,
}

#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GoalStatus {
    Active,
    Met,
    LimitReached,
    NotCheckable,
    Cleared,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, schemars::JsonSchema)]
pub struct Goal {
    pub objective: String,
    pub criteria: Vec<Criterion>,
    pub max_iterations: u32,
    pub max_spend_cents: Option<i64>,
    pub max_minutes: Option<i64>,
    /// `active`, `met`, `limit_reached`, `not_checkable` or `cleared`.
    pub status: GoalStatus,
    /// Why it stopped, in words, once it has.
    pub stopped_reason: Option<String>,
    /// Turns the goal started.
    pub iterations: u32,
    /// What the session spent since the goal was set, in cents.
    pub spent_cents: i64,
    /// Minutes since the goal was set.
    pub minutes: i64,
    pub last_verdicts: Vec<Verdict>,
    pub set_ms: i64,
    /// The session's spend when the goal was set (spend is counted from there).
    #[serde(default)]
    pub spent_at_set: i64,
}

/// The criteria a check grades: the given ones, or the objective itself.
pub fn graded(goal: &Goal) -> Vec<Criterion> {
    if goal.criteria.is_empty() {
        vec![Criterion { text: goal.objective.clone(), command: None }]
    } else {
        goal.criteria.clone()
    }
}

/// The message that starts the goal's next turn.
pub fn continuation(goal: &Goal) -> String {
    let n = goal.iterations + 1;
    let unmet: Vec<String> = goal
        .last_verdicts
        .iter()
        .filter(|v| v.met != Some(true))
        .map(|v| format!("- {} ({})", v.criterion, v.reason))
        .collect();
    let mut text =
        format!("Keep working toward the goal: {} (iteration {n} of {})", goal.objective, goal.max_iterations);
    if !unmet.is_empty() {
        text.push_str(&format!("\nNot met yet:\n{}", unmet.join("\n")));
    }
    text
}

/// The echo harness's deterministic grader: a criterion is met when the first line of the latest reply
/// contains its text (the first line only, so the unmet criteria a continuation quotes do not count).
pub fn echo_verdict(criterion: &Criterion, last_reply: &str) -> Verdict {
    let first_line = last_reply.lines().next().unwrap_or_default().to_lowercase();
    let met = first_line.contains(&criterion.text.to_lowercase());
    Verdict {
        criterion: criterion.text.clone(),
        met: Some(met),
        reason: if met { "the latest reply contains it" } else { "the latest reply does not contain it" }.into(),
    }
}

/// A criterion's command as a runner ran it in the turn's working folder at the turn's end: the runner
/// protocol's own type, kept with the goal as it came.
pub use agentsky_wire::runner::Check as CommandCheck;

/// A command criterion graded by what the runner reported for the turn: exit 0 meets it; none reported
/// means it could not be checked here.
pub fn command_verdict(criterion: &Criterion, checks: &[CommandCheck]) -> Verdict {
    let command = criterion.command.as_deref().unwrap_or_default();
    let Some(c) = checks.iter().find(|c| c.command == command) else { return not_checkable(criterion) };
    let last_line = c.output.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
    let tail: String = last_line.chars().take(200).collect();
    let (met, reason) = match (c.exit_code, c.timed_out) {
        (Some(0), _) => (true, format!("`{command}` exited 0")),
        (_, true) => (false, format!("`{command}` timed out")),
        (Some(code), _) if tail.is_empty() => (false, format!("`{command}` exited {code}")),
        (Some(code), _) => (false, format!("`{command}` exited {code}: {tail}")),
        (None, _) => (false, format!("`{command}` was killed")),
    };
    Verdict { criterion: criterion.text.clone(), met: Some(met), reason }
}

/// A command criterion where the session has no place to run commands.
pub fn not_checkable(criterion: &Criterion) -> Verdict {
    not_checked(criterion, "no runner ran its command for this turn")
}

/// A command criterion whose command did not run, and why: never met.
pub fn not_checked(criterion: &Criterion, why: &str) -> Verdict {
    Verdict { criterion: criterion.text.clone(), met: None, reason: format!("not checked: {why}") }
}

/// After a check: the goal's new status, or `None` to keep working.
pub fn decide(goal: &Goal, now_ms: i64, spent_cents: i64) -> Option<(GoalStatus, String)> {
    // A criterion that could not be checked is never taken as met, and no further turn can meet it.
    if let Some(v) = goal.last_verdicts.iter().find(|v| v.met.is_none()) {
        return Some((GoalStatus::NotCheckable, format!("\"{}\" could not be checked ({})", v.criterion, v.reason)));
    }
    if goal.last_verdicts.iter().all(|v| v.met == Some(true)) {
        return Some((GoalStatus::Met, format!("met after {} iteration(s)", goal.iterations)));
    }
    if goal.iterations >= goal.max_iterations {
        return Some((GoalStatus::LimitReached, format!("max_iterations ({}) reached", goal.max_iterations)));
    }
    if let Some(max) = goal.max_spend_cents {
        if spent_cents - goal.spent_at_set >= max {
            return Some((GoalStatus::LimitReached, format!("max_spend_cents ({max}) reached")));
        }
    }
    if let Some(max) = goal.max_minutes {
        if now_ms - goal.set_ms >= max * 60_000 {
            return Some((GoalStatus::LimitReached, format!("max_minutes ({max}) reached")));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn goal(criteria: Vec<Criterion>) -> Goal {
        Goal {
            objective: "ship it".into(),
            criteria,
            max_iterations: 3,
            max_spend_cents: Some(100),
            max_minutes: Some(10),
            status: GoalStatus::Active,
            stopped_reason: None,
            iterations: 1,
            spent_cents: 0,
            minutes: 0,
            last_verdicts: vec![],
            set_ms: 0,
            spent_at_set: 0,
        }
    }

    #[test]
    fn met_when_every_criterion_is_met_and_never_past_one_not_checked() {
        let mut g = goal(vec![]);
        g.last_verdicts = vec![echo_verdict(&graded(&g)[0], "we SHIP IT today")];
        assert_eq!(decide(&g, 0, 0).map(|d| d.0), Some(GoalStatus::Met));
        let tests = Criterion { text: "tests pass".into(), command: Some("make test".into()) };
        g.last_verdicts.push(not_checked(&tests, "no runner of the workspace is online to run `make test`"));
        let (status, why) = decide(&g, 0, 0).unwrap();
        assert_eq!(status, GoalStatus::NotCheckable, "a criterion not checked is never met");
        assert!(why.contains("\"tests pass\" could not be checked") && why.contains("no runner"), "{why}");
        g.last_verdicts = vec![not_checkable(&Criterion { text: "t".into(), command: Some("x".into()) })];
        assert_eq!(decide(&g, 0, 0).map(|d| d.0), Some(GoalStatus::NotCheckable));
    }

    #[test]
    fn limits_stop_an_unmet_goal() {
        let mut g = goal(vec![]);
        g.last_verdicts = vec![echo_verdict(&graded(&g)[0], "nothing yet")];
        assert_eq!(decide(&g, 0, 0), None, "keep working");
        assert_eq!(decide(&g, 0, 100).map(|d| d.0), Some(GoalStatus::LimitReached));
        assert_eq!(decide(&g, 600_000, 0).map(|d| d.0), Some(GoalStatus::LimitReached));
        g.iterations = 3;
        assert!(decide(&g, 0, 0).unwrap().1.contains("max_iterations"));
    }

    #[test]
    fn command_criteria_are_graded_by_the_runners_exit_codes() {
        let c = |cmd: &str| Criterion { text: format!("{cmd} passes"), command: Some(cmd.into()) };
        let check = |cmd: &str, exit_code, output: &str| CommandCheck {
            command: cmd.into(),
            exit_code,
            timed_out: exit_code.is_none(),
            output: output.into(),
        };
        let checks = [
            check("make test", Some(0), "ok\n"),
            check("make lint", Some(2), "lint: 3 problems\n\n"),
            check("slow", None, ""),
        ];
        let v = command_verdict(&c("make test"), &checks);
        assert_eq!((v.met, v.reason.as_str()), (Some(true), "`make test` exited 0"));
        let v = command_verdict(&c("make lint"), &checks);
        assert_eq!((v.met, v.reason.as_str()), (Some(false), "`make lint` exited 2: lint: 3 problems"));
        assert_eq!(command_verdict(&c("slow"), &checks).reason, "`slow` timed out");
        assert_eq!(command_verdict(&c("other"), &checks).met, None, "not run: not checkable");
    }

    #[test]
    fn the_continuation_names_what_is_unmet() {
        let mut g = goal(vec![Criterion { text: "done now".into(), command: None }]);
        g.last_verdicts = vec![echo_verdict(&graded(&g)[0], "nope")];
        let text = continuation(&g);
        assert!(text.contains("iteration 2 of 3") && text.contains("ship it") && text.contains("done now"), "{text}");
        assert!(
            !echo_verdict(&graded(&g)[0], &format!("echo: {text}")).met.unwrap(),
            "the quoted criterion is not a pass"
        );
        assert!(!text.starts_with('/'), "never an echo command");
    }
}

//! A standing goal's command criteria that no runner ran with the turn (a session of another harness, or
//! one whose runner is gone) follow `land`'s checks rule: they run as checkouts on any runner of the
//! workspace seen in the last minute, each in a fresh checkout of the session's lane (`store::checkouts`,
//! waited on by the one rule of [`jobs::progress`]). With no runner online they are not checked, and the
//! verdict says so; they are never met unrun.
//!
//! The session's object runs this as its goal check's step and, while runners work, steps again when a
//! result arrives (its key wakes the object) or after [`RECHECK_MS`]. A checkout's id comes from the
//! session, the turn and the command, so a step run again finds the checkouts it queued.

use crate::domain::jobs::{self, Progress};
use crate::rules::ids;
use crate::session::goal::CommandCheck;
use crate::session::SessionConfig;
use crate::store::{self, DbResult, Sql};
use serde_json::{json, Value};

/// How long a criterion's command may run on the runner.
pub const TIMEOUT_S: i64 = 600;
/// How often a goal check waiting on runners looks again without being woken (to see runners go away).
pub const RECHECK_MS: i64 = 5_000;
/// Where the commands ran, as verdicts say it.
pub const PLACE: &str = "on another runner of the workspace, in a fresh checkout of the lane";

/// What came of the commands so far.
#[derive(Debug, PartialEq)]
pub enum Ran {
    /// Runners still have some: the keys their results signal.
    Waiting(Vec<String>),
    /// Every command ran, or will not: the runs, and `(command, why)` for those not run.
    Done { checks: Vec<CommandCheck>, not_run: Vec<(String, String)> },
}

/// The checkout of `command` for the goal check after the turn of `message_id`.
fn job_id(config: &SessionConfig, message_id: &str, command: &str) -> String {
    let digest = ids::hash_secret(&format!("{}\n{message_id}\n{command}", config.session_id));
    format!("job_goal_{}", &digest[..32])
}

/// Runs `commands` for the goal check after the turn of `message_id`, or sees how far they got.
pub async fn run(
    env: &crate::cx::Env,
    config: &SessionConfig,
    message_id: &str,
    commands: &[String],
    now_ms: i64,
) -> DbResult<Ran> {
    let db: &dyn Sql = &env.db;
    let mut rows = Vec::new();
    for command in commands {
        let id = job_id(config, message_id, command);
        rows.push((command, store::checkouts::get(db, &id).await?, id));
    }
    // Queued for the session's sandbox when no person's runner is online to take them.
    let mut hosted = false;
    if rows.iter().all(|(_, row, _)| row.is_none()) {
        let since = now_ms - jobs::ONLINE_MS;
        // With no person's runner online, the session's hosted sandbox runs them, where there are sandboxes.
        let sandbox = crate::domain::sandboxes::For {
            workspace_id: &config.workspace_id,
            session_id: &config.session_id,
            harness: &config.harness,
            egress: &config.egress,
        };
        if store::runners::online(db, &config.workspace_id, since).await? == 0 {
            use crate::domain::sandboxes::{ensure, Ensured};
            let started = match env.sandboxes.available() {
                Ok(()) => match ensure(env, sandbox, now_ms).await {
                    Ok(Ensured::Full { cap }) => Err(Ensured::full(cap)),
                    Ok(_) => {
                        hosted = true;
                        Ok(())
                    }
                    Err(why) => Err(format!("the session's sandbox did not start: {why}")),
                },
                Err(_) => Err(String::new()),
            };
            if let Err(failed) = started {
                let why = |c: &String| {
                    match failed.is_empty() {
                    true => format!("no runner of the workspace is online to run `{c}` (start `sky runner` on a machine of the workspace)"),
                    false => failed.clone(),
                }
                };
                return Ok(Ran::Done {
                    checks: vec![],
                    not_run: commands.iter().map(|c| (c.clone(), why(c))).collect(),
                });
            }
        }
    }
    let (mut waiting, mut checks, mut not_run) = (Vec::new(), Vec::new(), Vec::new());
    for (command, row, id) in rows {
        let Some(row) = row else {
            let spec = json!({ "command": command, "timeout_s": TIMEOUT_S, "for": "goal" }).to_string();
            store::checkouts::insert(db, &id, &config.workspace_id, &config.session_id, &spec, hosted, now_ms).await?;
            waiting.push(jobs::wait_key(&id));
            continue;
        };
        let overdue = now_ms - row.created_ms >= (TIMEOUT_S + 60) * 1000;
        match jobs::progress(&row, now_ms) {
            Progress::Done(v) => match check_of(command, &v) {
                Ok(check) => checks.push(check),
                Err(why) => not_run.push((command.clone(), why)),
            },
            Progress::Waiting if !overdue => waiting.push(jobs::wait_key(&id)),
            Progress::Waiting => {
                let why = format!("no runner answered within {} s", TIMEOUT_S + 60);
                store::checkouts::abandon(db, &id, &why, now_ms).await?;
                not_run.push((command.clone(), why));
            }
            Progress::GiveUp(why) => {
                store::checkouts::abandon(db, &id, &why, now_ms).await?;
                not_run.push((command.clone(), why));
            }
        }
    }
    Ok(if waiting.is_empty() { Ran::Done { checks, not_run } } else { Ran::Waiting(waiting) })
}

/// A runner's result as a check, or why the command did not run.
fn check_of(command: &str, v: &Value) -> Result<CommandCheck, String> {
    let exit_code = v["exit_code"].as_i64();
    let timed_out = v["timed_out"] == true;
    if exit_code.is_none() && !timed_out {
        return Err(v["error"].as_str().map_or("the runner did not run it".into(), |e| format!("it did not run: {e}")));
    }
    let output = v["output"].as_str().unwrap_or_default().to_owned();
    Ok(CommandCheck { command: command.to_owned(), exit_code, timed_out, output })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_become_checks_and_failures_to_run_say_why() {
        let ok = check_of("make test", &json!({"exit_code": 1, "timed_out": false, "output": "1 failed"})).unwrap();
        assert_eq!((ok.exit_code, ok.output.as_str()), (Some(1), "1 failed"));
        assert!(check_of("slow", &json!({"exit_code": null, "timed_out": true})).unwrap().timed_out);
        let gone = check_of("x", &json!({"error": "no runner of the workspace took the checkout within 60 s"}));
        assert_eq!(gone.unwrap_err(), "it did not run: no runner of the workspace took the checkout within 60 s");
    }
}

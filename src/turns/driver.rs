//! The async half of a session that is still platform-free: running one due harness step, and writing a
//! transition's consequences (status and spend) to the D1 index, and answering a call in its own reply's
//! JSON. The session object's logic (`objects::session_shell`), which the Worker's object and the host
//! tests' stand-in both run, drives sessions through here.

use super::openai;
use super::ports::Ports;
use super::{agent_tools, wallet};
use crate::domain::sandboxes::{self, Ensured};
use crate::domain::{goal_checks, webhooks};
use crate::error::Code;
use crate::rules::harness::Harness;
use crate::rules::placement::{self, Placement};
use crate::session::TurnEnd;
use crate::session::{
    echo, goal, Accepted, Core, EventKind, LocalSql, Refusal, SessionCall, SessionConfig, SessionRequest, StepOutcome,
    Transition, TurnCancelled,
};
use crate::store::{self, DbResult, Sql};
use serde_json::Value;

/// The text of the message that started the running turn.
fn turn_text<S: LocalSql + ?Sized>(core: &Core<'_, S>, message_id: &str) -> Result<String, Refusal> {
    let page = core.page_of_message(message_id)?;
    Ok(page.and_then(|e| e.body["text"].as_str().map(str::to_owned)).unwrap_or_default())
}

/// Runs the running turn's next step if it is due, and persists it. `None` when nothing was due.
pub async fn step<S: LocalSql + ?Sized>(
    core: &Core<'_, S>,
    ports: &Ports<'_>,
    now_ms: i64,
) -> Result<Option<(SessionConfig, Transition)>, Refusal> {
    let Some((config, turn)) = core.due(now_ms)? else { return Ok(None) };
    if turn.goal_check {
        let t = check_goal(core, ports, &config, now_ms).await?;
        core.hold_index(&t)?;
        if t.wake {
            (ports.wake)().await;
        }
        goal_events(core, ports, &config, turn.message_id.as_deref(), now_ms).await?;
        return Ok(Some((config, t)));
    }
    let message_id = turn.message_id.clone().unwrap_or_default();
    let outcome: StepOutcome = match config.harness.as_str() {
        "echo" => {
            let text = turn_text(core, &message_id)?;
            let mut outcome = echo::step(&text, &turn);
            // `/write <path> <text>` and `/delete <path>` go through the same file tools a model would call.
            if let (Some((tool, args)), true) = (echo::file_request(&text), outcome.end.is_some()) {
                let result = agent_tools::run(ports.env, &config, tool, &args, now_ms).await;
                let (content, is_error) = match result {
                    Ok(v) => (v.to_string(), false),
                    Err(e) => (serde_json::json!({ "error": e }).to_string(), true),
                };
                let id = format!("echo-{}", tool.trim_end_matches("_task_file"));
                let call = serde_json::json!({ "call_id": id, "name": tool, "arguments": args });
                let done = serde_json::json!({ "call_id": id, "name": tool, "content": content, "is_error": is_error });
                outcome.events.splice(0..0, [(EventKind::ToolCall, call), (EventKind::ToolResult, done)]);
            }
            outcome
        }
        "openai" => openai::step(core, ports, &config, &turn, now_ms).await,
        // A runner claims the turn and reports its events (`SessionCall::External`); until then the turn
        // waits, queued once. A hosted agent's turn is claimed by its session's sandbox, booted here.
        h if Harness::word_on_runner(h) => {
            let (hosted, first) = (config.placement == Placement::Hosted, turn.step == 0);
            if hosted && first {
                if let Err(why) = ports.env.sandboxes.available() {
                    let why = placement::unavailable(&why);
                    return fail_turn(core, ports, config, &message_id, &why, now_ms).await;
                }
            }
            store::runners::enqueue(ports.db(), &config.session_id, &message_id, &config.workspace_id, hosted, now_ms)
                .await
                .map_err(|e| Refusal::new(Code::Internal, e.to_string()))?;
            // While the turn waits, its sandbox must run: started on the first step, and again on a later
            // one if it went to sleep just as the turn came (its runner left before claiming it).
            let ensured = match hosted {
                true => match sandboxes::ensure(ports.env, sandbox_for(&config), now_ms).await {
                    Ok(ensured) => Some(ensured),
                    Err(why) => {
                        // Nobody else may claim it: it goes with the sandbox that did not start.
                        let _ = store::runners::cancel(ports.db(), &config.session_id, &message_id).await;
                        let why = format!("the session's sandbox did not start: {why}");
                        return fail_turn(core, ports, config, &message_id, &why, now_ms).await;
                    }
                },
                false => None,
            };
            let waiting = match ensured {
                Some(Ensured::Booted) => Some("starting sandbox".to_owned()),
                Some(Ensured::Running) if first => Some("running in the session's sandbox".to_owned()),
                Some(Ensured::Full { cap }) if first => Some(Ensured::full(cap)),
                None if first => Some("waiting for a runner to claim this turn".to_owned()),
                _ => None,
            };
            StepOutcome {
                events: waiting
                    .map(|text| (EventKind::Status, serde_json::json!({ "text": text })))
                    .into_iter()
                    .collect(),
                next_in_ms: Some(if hosted { sandboxes::RECHECK_MS } else { crate::session::RUNNER_RECHECK_MS }),
                harness_state: serde_json::json!({ "runner": "queued" }),
                ..StepOutcome::default()
            }
        }
        other => {
            let why = format!("the `{other}` harness cannot run turns on this server yet");
            return fail_turn(core, ports, config, &message_id, &why, now_ms).await;
        }
    };
    let end = outcome.end;
    let (t, applied) = core.apply_step(&message_id, outcome, now_ms)?;
    core.hold_index(&t)?;
    if t.wake {
        (ports.wake)().await;
    }
    if !applied {
        // Its turn was cancelled or stopped while the step ran: whoever ended it announced that.
        return Ok(Some((config, t)));
    }
    budget_events(ports, &config, turn.spent_cents, t.turn.spent_cents, now_ms).await;
    if let Some(end) = end {
        turn_events(ports, &config, &message_id, end, &t, None, now_ms).await;
        // A budget that ends the turn can stop a standing goal too.
        if end == TurnEnd::BudgetReached {
            goal_events(core, ports, &config, Some(&message_id), now_ms).await?;
        }
    }
    Ok(Some((config, t)))
}

/// Ends the running turn as failed, saying `why` in its error event, and tells the webhooks.
async fn fail_turn<S: LocalSql + ?Sized>(
    core: &Core<'_, S>,
    ports: &Ports<'_>,
    config: SessionConfig,
    message_id: &str,
    why: &str,
    now_ms: i64,
) -> Result<Option<(SessionConfig, Transition)>, Refusal> {
    let t = core.fail(message_id, why, now_ms)?;
    core.hold_index(&t)?;
    (ports.wake)().await;
    turn_events(ports, &config, message_id, TurnEnd::Failed, &t, Some(why), now_ms).await;
    Ok(Some((config, t)))
}

fn sandbox_for(config: &SessionConfig) -> sandboxes::For<'_> {
    sandboxes::For {
        workspace_id: &config.workspace_id,
        session_id: &config.session_id,
        harness: &config.harness,
        egress: &config.egress,
    }
}

/// `turn.finished` for every turn that ended, and `session.failed` besides when it failed. Sent after the
/// object committed the turn's end; the event id comes from the turn, so a step run again sends nothing
/// new.
async fn turn_events(
    ports: &Ports<'_>,
    config: &SessionConfig,
    message_id: &str,
    end: TurnEnd,
    t: &Transition,
    error: Option<&str>,
    now_ms: i64,
) {
    let reason = serde_json::to_value(end).unwrap_or_default();
    let data = serde_json::json!({ "session_id": config.session_id, "task_id": config.task_id,
        "agent_id": config.agent_id, "message_id": message_id, "reason": reason,
        "spent_cents": t.turn.spent_cents, "error": error });
    let source = format!("{}/{message_id}", config.session_id);
    let (env, ws) = (ports.env, &config.workspace_id);
    webhooks::emit(env, ws, "turn.finished", Some(&source), data.clone(), now_ms).await;
    if end == TurnEnd::Failed {
        webhooks::emit(env, ws, "session.failed", Some(&source), data, now_ms).await;
    }
}

/// `budget.threshold` when this step's spend crossed 50, 80 or 100 % of the session's budget: once each,
/// by its event id.
async fn budget_events(ports: &Ports<'_>, config: &SessionConfig, before: i64, after: i64, now_ms: i64) {
    let Some(budget) = config.budget_cents else { return };
    for percent in crate::rules::webhooks::thresholds_crossed(before, after, budget) {
        let data = serde_json::json!({ "scope": "session", "session_id": config.session_id,
            "task_id": config.task_id, "percent": percent, "budget_cents": budget, "spent_cents": after });
        let source = format!("{}/{percent}", config.session_id);
        webhooks::emit(ports.env, &config.workspace_id, "budget.threshold", Some(&source), data, now_ms).await;
    }
}

/// `goal.met` or `goal.limit_reached` once a goal check stopped the goal.
async fn goal_events<S: LocalSql + ?Sized>(
    core: &Core<'_, S>,
    ports: &Ports<'_>,
    config: &SessionConfig,
    message_id: Option<&str>,
    now_ms: i64,
) -> Result<(), Refusal> {
    let Some(g) = core.goal()? else { return Ok(()) };
    let event = match g.status {
        goal::GoalStatus::Met => "goal.met",
        goal::GoalStatus::LimitReached => "goal.limit_reached",
        _ => return Ok(()),
    };
    let data = serde_json::json!({ "session_id": config.session_id, "task_id": config.task_id,
        "objective": g.objective, "iterations": g.iterations, "spent_cents": g.spent_cents,
        "reason": g.stopped_reason, "verdicts": g.last_verdicts });
    let source = format!("{}/{}/{}", config.session_id, message_id.unwrap_or_default(), g.iterations);
    webhooks::emit(ports.env, &config.workspace_id, event, Some(&source), data, now_ms).await;
    Ok(())
}

/// Grades the standing goal's criteria after a turn: text criteria by the harness's grader (a separate
/// model call for `openai`, the deterministic rule for `echo` and `runner`), command criteria by the exit
/// codes the runner reported at the turn's end; commands no runner ran with the turn run on another
/// runner of the workspace ([`goal_checks`]), the check waiting for them; not checked when none is online.
async fn check_goal<S: LocalSql + ?Sized>(
    core: &Core<'_, S>,
    ports: &Ports<'_>,
    config: &SessionConfig,
    now_ms: i64,
) -> Result<Transition, Refusal> {
    let Some(g) = core.goal()? else { return core.finish_goal_check(vec![], None, None, now_ms) };
    let last_reply = core.summary()?.last_reply.unwrap_or_default();
    let mut verdicts = Vec::new();
    let mut charge: Option<crate::session::Charge> = None;
    let turn = core.turn()?;
    let message_id = turn.message_id.clone().unwrap_or_default();
    let mut checks = core.turn_checks(&message_id)?;
    let mut unrun: Vec<String> = Vec::new();
    for cmd in goal::graded(&g).into_iter().filter_map(|c| c.command) {
        if !checks.iter().any(|c| c.command == cmd) && !unrun.contains(&cmd) {
            unrun.push(cmd);
        }
    }
    let (mut elsewhere, mut not_run) = (Vec::new(), Vec::new());
    if !unrun.is_empty() && g.status == goal::GoalStatus::Active {
        let ran = goal_checks::run(ports.env, config, &message_id, &unrun, now_ms)
            .await
            .map_err(|e| Refusal::new(Code::Internal, e.to_string()))?;
        match ran {
            goal_checks::Ran::Waiting(keys) => {
                return core.await_goal_checkouts(keys, now_ms + goal_checks::RECHECK_MS);
            }
            goal_checks::Ran::Done { checks: ran, not_run: why } => {
                elsewhere = ran.iter().map(|c| c.command.clone()).collect();
                checks.extend(ran);
                not_run = why;
            }
        }
    }
    for (i, c) in goal::graded(&g).into_iter().enumerate() {
        let cmd = c.command.as_deref();
        let v = if let Some((_, why)) = not_run.iter().find(|(run, _)| Some(run.as_str()) == cmd) {
            goal::not_checked(&c, why)
        } else if let Some(cmd) = cmd {
            let mut v = goal::command_verdict(&c, &checks);
            if elsewhere.iter().any(|e| e == cmd) {
                v.reason = format!("{} ({})", v.reason, goal_checks::PLACE);
            }
            v
        } else if config.harness == "openai" {
            let entry_id = format!(
                "use_{}_{}_g{}_{i}",
                config.session_id,
                turn.message_id.as_deref().unwrap_or_default(),
                turn.step
            );
            match openai::grade(ports, config, &entry_id, &g.objective, &c, &last_reply, now_ms).await {
                Ok((v, ch)) => {
                    charge = Some(match charge.take() {
                        Some(mut total) => {
                            total.cents += ch.cents;
                            total.input_tokens += ch.input_tokens;
                            total.output_tokens += ch.output_tokens;
                            total
                        }
                        None => ch,
                    });
                    v
                }
                Err(e) => goal::Verdict {
                    criterion: c.text.clone(),
                    met: Some(false),
                    reason: format!("the grader failed: {e}"),
                },
            }
        } else {
            goal::echo_verdict(&c, &last_reply)
        };
        verdicts.push(v);
    }
    // The goal's next iteration is a turn like any other: the wallet and the budgets admit it first.
    let spent_cents = turn.spent_cents + charge.as_ref().map_or(0, |c| c.cents);
    let next = crate::session::Opening { config: config.clone(), spent_cents, first: false };
    let unaffordable = match wallet::admit(ports.db(), &next).await {
        Ok(()) => None,
        Err(r) if r.code == Code::InsufficientCredits => Some(r.message),
        Err(r) => return Err(r),
    };
    core.finish_goal_check(verdicts, charge, unaffordable, now_ms)
}

/// Copies what the object holds for the D1 index (its status and spend) there, and forgets it once
/// written. Held marks survive any crash with the state that made them, so calling this on the object's
/// next activation (any call, or its alarm) makes the index converge.
pub async fn publish<S: LocalSql + ?Sized>(
    core: &Core<'_, S>,
    db: &dyn Sql,
    config: &SessionConfig,
    now_ms: i64,
) -> DbResult<()> {
    let Some(mark) = core.index_due().map_err(|r| store::DbError::Other(r.message))? else { return Ok(()) };
    db.all(store::sessions::mark(
        &config.session_id,
        mark.status,
        mark.spent_cents,
        mark.message_id.as_deref(),
        now_ms,
    ))
    .await?;
    core.index_done(&mark).map_err(|r| store::DbError::Other(r.message))
}

/// Answers a call as [`answer`] does, once the money allows it: a call that would begin a turn is admitted
/// by the budgets and the wallet first ([`wallet::admit`]), and a session's start pays its run's price
/// ([`wallet::pay_run`]). Every turn begun from outside the object passes here; the goal's own next turns
/// pass the same check in [`check_goal`].
pub async fn serve<S: LocalSql + ?Sized>(
    core: &Core<'_, S>,
    db: &dyn Sql,
    call: &SessionCall,
    now_ms: i64,
) -> Result<(Value, Option<Transition>), Refusal> {
    if let Some(opening) = core.opens_turn(call)? {
        wallet::admit(db, &opening).await?;
        if opening.first {
            wallet::pay_run(db, &opening.config, now_ms).await?;
        }
    }
    let answered = answer(core, call, now_ms)?;
    if let Some(t) = &answered.1 {
        core.hold_index(t)?;
    }
    Ok(answered)
}

/// `reply` as the answer to `call`: typed by the call, so no call is answered with another's reply.
pub fn reply<C: SessionRequest>(_call: &C, reply: C::Reply) -> Value {
    serde_json::to_value(reply).unwrap_or(Value::Null)
}

/// Answers a call that needs no waiting and no network, in the JSON of the call's reply. `Read` is
/// answered without waiting here; the shells add the wait.
pub fn answer<S: LocalSql + ?Sized>(
    core: &Core<'_, S>,
    call: &SessionCall,
    now_ms: i64,
) -> Result<(Value, Option<Transition>), Refusal> {
    use crate::session::SessionCall as C;
    let accepted = |t: &Transition| {
        let (message_id, seq) = t.accepted.clone().unwrap_or_default();
        Accepted { message_id, seq }
    };
    Ok(match call {
        C::Init(c) => {
            let t = core.init(&c.config, &c.message, now_ms)?;
            (reply(c, accepted(&t)), Some(t))
        }
        C::Send(c) => {
            let t = core.send(&c.message, now_ms)?;
            (reply(c, accepted(&t)), Some(t))
        }
        C::Read(c) => (reply(c, core.page(c.after, c.message_id.as_deref(), c.limit)?), None),
        C::Stop(c) => {
            let t = core.stop(now_ms)?;
            (reply(c, core.summary()?), Some(t))
        }
        C::CancelTurn(c) => {
            let (message_id, replayed, t) = core.cancel_turn(c.message_id.as_deref(), now_ms)?;
            let status = core.summary()?.status;
            (reply(c, TurnCancelled { message_id, replayed, status }), Some(t))
        }
        C::Configure(c) => (reply(c, core.configure(c.model.clone(), c.thinking.clone())?), None),
        C::Summary(c) => (reply(c, core.summary()?), None),
        C::Purge(c) => (reply(c, ()), Some(core.purge()?)),
        C::SetGoal(c) => {
            let t = core.set_goal((*c.goal).clone(), now_ms)?;
            (reply(c, core.goal()?), Some(t))
        }
        C::ClearGoal(c) => (reply(c, core.clear_goal(now_ms)?), None),
        // Waiting is the shell's; without one a wait returns at once.
        C::Wait(c) => (reply(c, false), None),
        C::Signal(c) => (reply(c, ()), Some(core.signal(&c.key, now_ms)?)),
        C::External(c) => {
            let t = core.external(&c.message_id, &c.events, c.end, &c.checks, c.reported_cents, now_ms)?;
            (reply(c, core.summary()?), Some(t))
        }
        C::Note(c) => (reply(c, ()), Some(core.note(&c.message, now_ms)?)),
        C::GetGoal(c) => (reply(c, core.goal_now(now_ms)?), None),
    })
}

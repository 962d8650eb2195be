//! Money, in the one place every turn passes through: the session. Before a turn begins (a start, a
//! message from the owner, a share-link visitor or a routine, a goal's next iteration), [`admit`] checks
//! the session's budget, its task's budget and the wallet, and a session's start pays a paid public
//! agent's price once ([`pay_run`]). During the turn every model call holds what it may cost and settles
//! what it did cost ([`metered`]), so the wallet never goes below zero, however many sessions spend from
//! it at once.
//!
//! Must never: begin a turn a budget or the wallet refuses, charge a step twice, or move money without a
//! ledger entry (the statements are in `store::usage`).

use super::ports::Ports;
use crate::cx::Outbound;
use crate::error::Code;
use crate::http::HttpResponse;
use crate::session::{Charge, EventKind, Opening, Refusal, SessionConfig, StepOutcome, TurnEnd};
use crate::store::{self, usage::Hold, Sql};
use serde_json::{json, Value};

/// Output tokens a model call is held for besides its input: the most a reply is expected to write. A
/// longer reply is charged as far as the hold and the rest of the wallet cover it.
pub const OUTPUT_ALLOWANCE_TOKENS: i64 = 8_192;

fn refused(message: String) -> Refusal {
    Refusal::new(Code::InsufficientCredits, message)
}

fn internal(e: impl std::fmt::Display) -> Refusal {
    Refusal::new(Code::Internal, format!("the wallet: {e}"))
}

/// Whether the turn may begin: its session's budget, its task's budget and the wallet, for what the turn
/// needs (a paid harness needs a cent to hold from; a first turn its run's price, unless already paid).
/// `Err` is an `insufficient_credits` refusal that says what is short.
pub async fn admit(db: &dyn Sql, o: &Opening) -> Result<(), Refusal> {
    let config = &o.config;
    let price = if o.first { config.run_price.as_ref().map_or(0, |p| p.cents) } else { 0 };
    if let Some(budget) = config.budget_cents {
        if o.spent_cents >= budget {
            return Err(refused(format!(
                "this session's budget of {budget} cents is spent; start a new session with a budget"
            )));
        }
        if price > budget {
            return Err(refused(format!(
                "the agent's price per run, {price} cents, is more than this session's budget of {budget} cents"
            )));
        }
    }
    let s = store::usage::standing(db, &config.workspace_id, &config.task_id, &config.session_id)
        .await
        .map_err(internal)?;
    if let Some(budget) = s.task_budget_cents {
        if s.task_spent_cents >= budget || s.task_spent_cents + price > budget {
            return Err(refused(format!(
                "task `{}` has spent {} of its {budget} cents budget{}; raise it to continue",
                config.task_id,
                s.task_spent_cents,
                if price > 0 { format!(" and this run costs {price}") } else { String::new() },
            )));
        }
    }
    let due = if s.run_paid { 0 } else { price };
    let needs = due + i64::from(config.harness == "openai");
    let balance = s.balance_cents.unwrap_or(0);
    if balance < needs {
        return Err(refused(format!(
            "the wallet of `{}` holds {balance} cents; this needs at least {needs}",
            s.slug.unwrap_or_default()
        )));
    }
    Ok(())
}

/// Pays the run's price from the caller's wallet to the agent's owner, once per session: a replayed
/// start finds it paid. Refused when the wallet cannot cover it (another session spent it meanwhile).
pub async fn pay_run(db: &dyn Sql, config: &SessionConfig, now_ms: i64) -> Result<(), Refusal> {
    let Some(price) = config.run_price.as_ref().filter(|p| p.cents > 0) else { return Ok(()) };
    let payment = store::usage::RunPayment {
        session_id: &config.session_id,
        payer_workspace_id: &config.workspace_id,
        payee_workspace_id: &price.payee_workspace_id,
        key_id: config.started_by_key_id.as_deref(),
        agent_id: &config.agent_id,
        cents: price.cents,
        now_ms,
    };
    if store::usage::pay_run(db, &payment).await.map_err(internal)? {
        Ok(())
    } else {
        Err(refused(format!("the wallet cannot pay the agent's price per run, {} cents", price.cents)))
    }
}

/// Why a metered call was not made, or failed.
#[derive(Debug)]
pub enum Unpaid {
    /// Not made: the task's budget or the wallet is short. A turn stops here ([`stop`]).
    Short { reason: TurnEnd, why: String },
    /// The call failed (the network, the database); nothing is charged.
    Failed(String),
}

/// The step that ends a turn a budget or the wallet stopped, saying why.
pub fn stop(reason: TurnEnd, why: String) -> StepOutcome {
    StepOutcome {
        events: vec![(EventKind::Status, json!({ "text": why }))],
        end: Some(reason),
        ..StepOutcome::default()
    }
}

/// The tokens a chat-completions answer says it used.
fn usage(reply: &Value) -> (i64, i64) {
    (reply["usage"]["prompt_tokens"].as_i64().unwrap_or(0), reply["usage"]["completion_tokens"].as_i64().unwrap_or(0))
}

/// One model call paid from the wallet under ledger entry `entry_id` (the step's own, so a replayed step
/// finds its hold or its entry and is charged once): checks the task's budget, holds what the call may
/// cost (its request's bytes as input tokens, a bound since no token is shorter than a byte, and
/// [`OUTPUT_ALLOWANCE_TOKENS`]), makes the call, then settles what the answer's `usage` says it cost and
/// gives the rest back. The charge is what the ledger holds for the entry.
pub async fn metered(
    ports: &Ports<'_>,
    config: &SessionConfig,
    entry_id: &str,
    req: Outbound,
    now_ms: i64,
) -> Result<(HttpResponse, Charge), Unpaid> {
    let db = ports.db();
    let failed = |e: store::DbError| Unpaid::Failed(format!("the wallet: {e}"));
    if let Some((spent, Some(budget))) = store::tasks::spend(db, &config.task_id).await.map_err(failed)? {
        if spent >= budget {
            let why = format!("the task's budget of {budget} cents is spent; the turn stops here");
            return Err(Unpaid::Short { reason: TurnEnd::BudgetReached, why });
        }
    }
    let prices = &ports.config().prices;
    let hold_cents = prices.cents(&config.model, req.body.len() as i64, OUTPUT_ALLOWANCE_TOKENS);
    if let Hold::Short { balance_cents } =
        store::usage::hold(db, entry_id, &config.workspace_id, hold_cents, now_ms).await.map_err(failed)?
    {
        let why = format!(
            "the wallet holds {balance_cents} cents and the next model call may cost up to {hold_cents}; add credit \
             to continue"
        );
        return Err(Unpaid::Short { reason: TurnEnd::InsufficientCredits, why });
    }
    let resp = ports.egress().post("OPENAI_BASE_URL", req).await;
    let (input_tokens, output_tokens) = match &resp {
        Ok(r) if r.status == 200 => usage(&r.json_body()),
        _ => (0, 0),
    };
    let entry = store::usage::Entry {
        entry_id,
        workspace_id: &config.workspace_id,
        session_id: Some(&config.session_id),
        key_id: config.started_by_key_id.as_deref(),
        agent_id: Some(&config.agent_id),
        model: &config.model,
        cents: prices.cents(&config.model, input_tokens, output_tokens),
        input_tokens,
        output_tokens,
        now_ms,
    };
    let (cents, top_up) = store::usage::settle_claiming(db, &entry).await.map_err(failed)?;
    if let Some(t) = top_up {
        // The wallet fell under the workspace's threshold and this settlement claimed the one top-up.
        crate::domain::billing::start_auto_top_up(db, ports.net, ports.config(), &t).await;
    }
    let resp = resp.map_err(Unpaid::Failed)?;
    Ok((resp, Charge { model: config.model.clone(), cents, input_tokens, output_tokens }))
}

//! A session object's side of operability: the trace a turn continues (the `traceparent` of the call
//! that started it, kept in the object's SQLite until the turn's alarms run), one log line and one
//! metrics row per step, and the turn's spans (turn → step → model and tool calls) exported to the
//! workspace's OpenTelemetry endpoint.

use crate::cx::{Env, Net};
use crate::rules::otlp::{Attr, Span};
use crate::rules::traceparent::{self, TraceContext};
use crate::session::{LocalSql, SessionConfig, Transition, Turn, TurnState};
use crate::store::{Param, Sql};
use serde::{Deserialize, Serialize};
use serde_json::json;

const SCHEMA: &str = "CREATE TABLE IF NOT EXISTS obs_trace (k TEXT PRIMARY KEY, v TEXT NOT NULL)";

/// The trace of the turn under way.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct TurnTrace {
    message_id: String,
    trace_id: String,
    turn_span_id: String,
    /// The span of the request that started the turn; empty when it came without a trace.
    parent_span_id: String,
    started_ms: i64,
    cents_at_start: i64,
    input_tokens: i64,
    output_tokens: i64,
    failed: bool,
}

fn load<T: for<'de> Deserialize<'de>>(sql: &dyn LocalSql, k: &str) -> Option<T> {
    sql.exec(SCHEMA, &[]).ok()?;
    let rows = sql.exec("SELECT v FROM obs_trace WHERE k = ?1", &[Param::Text(k.into())]).ok()?;
    serde_json::from_str(rows.first()?.get("v")?.as_str()?).ok()
}

fn save<T: Serialize>(sql: &dyn LocalSql, k: &str, v: &T) {
    let _ = sql.exec(SCHEMA, &[]);
    let v = serde_json::to_string(v).unwrap_or_default();
    let _ = sql.exec(
        "INSERT INTO obs_trace (k, v) VALUES (?1, ?2) ON CONFLICT (k) DO UPDATE SET v = excluded.v",
        &[Param::Text(k.into()), Param::Text(v)],
    );
}

/// Keeps the `traceparent` a call came with, for the turn it may start.
pub fn remember(sql: &dyn LocalSql, header: Option<&str>) {
    if let Some(t) = header.and_then(traceparent::parse) {
        save(sql, "next", &t.header());
    }
}

/// A step under way.
pub struct Step {
    trace: TurnTrace,
    span_id: String,
    started_ms: i64,
    spent_before: i64,
}

fn random_span() -> String {
    hex::encode(crate::rules::ids::random_bytes::<8>())
}

/// Starts a step's span: of the running turn's trace, which starts here on the turn's first step (under
/// the remembered caller's span, or as a new trace). The step's outbound calls carry it.
pub fn begin(sql: &dyn LocalSql, env: &Env, turn: &Turn, now_ms: i64) -> Step {
    let message_id = turn.message_id.clone().unwrap_or_default();
    let trace = match load::<TurnTrace>(sql, "turn") {
        Some(t) if t.message_id == message_id => t,
        _ => {
            let parent = load::<String>(sql, "next").and_then(|h| traceparent::parse(&h));
            let fresh = TraceContext::fresh(crate::rules::ids::random_bytes(), crate::rules::ids::random_bytes());
            let t = TurnTrace {
                message_id,
                trace_id: parent.as_ref().map_or(fresh.trace_id, |p| p.trace_id.clone()),
                turn_span_id: random_span(),
                parent_span_id: parent.map(|p| p.span_id).unwrap_or_default(),
                started_ms: if turn.started_ms > 0 { turn.started_ms } else { now_ms },
                cents_at_start: turn.spent_cents,
                ..Default::default()
            };
            save(sql, "turn", &t);
            t
        }
    };
    let span_id = random_span();
    env.meter.set_trace(TraceContext { trace_id: trace.trace_id.clone(), span_id: span_id.clone(), sampled: true });
    Step { trace, span_id, started_ms: now_ms, spent_before: turn.spent_cents }
}

fn int_attr(span: &Span, key: &str) -> i64 {
    span.attributes.iter().find(|(k, _)| k == key).map_or(0, |(_, v)| if let Attr::Int(i) = v { *i } else { 0 })
}

/// Ends a step: its log line, its metrics row, and its spans (with the turn's own span when the turn is
/// over) sent to the workspace's trace endpoint.
pub async fn end(sql: &dyn LocalSql, env: &Env, net: &dyn Net, config: &SessionConfig, t: &Transition, step: Step) {
    let now = env.clock.now_ms();
    let mut spans = env.meter.take_spans();
    let (input, output) = spans.iter().fold((0, 0), |(i, o), s| {
        (i + int_attr(s, "gen_ai.usage.input_tokens"), o + int_attr(s, "gen_ai.usage.output_tokens"))
    });
    let failed = spans.iter().any(|s| s.error.is_some());
    let mut trace = step.trace;
    trace.input_tokens += input;
    trace.output_tokens += output;
    trace.failed |= failed;
    let ended = t.turn.state != TurnState::Running;
    let cents = (t.turn.spent_cents - step.spent_before).max(0);
    let common = |s: Span| {
        s.attr("agentsky.session_id", Attr::Str(config.session_id.clone()))
            .attr("agentsky.agent_id", Attr::Str(config.agent_id.clone()))
            .attr("agentsky.workspace_id", Attr::Str(config.workspace_id.clone()))
    };
    let step_span = Span {
        trace_id: trace.trace_id.clone(),
        span_id: step.span_id.clone(),
        parent_span_id: trace.turn_span_id.clone(),
        name: format!("step {}", t.turn.step),
        kind: 1,
        start_ms: step.started_ms,
        end_ms: now,
        attributes: vec![],
        error: None,
    };
    spans.push(
        common(step_span)
            .attr("gen_ai.usage.input_tokens", Attr::Int(input))
            .attr("gen_ai.usage.output_tokens", Attr::Int(output))
            .attr("agentsky.cost_cents", Attr::Int(cents)),
    );
    if ended {
        let turn_span = Span {
            trace_id: trace.trace_id.clone(),
            span_id: trace.turn_span_id.clone(),
            parent_span_id: trace.parent_span_id.clone(),
            name: "turn".into(),
            kind: 2,
            start_ms: trace.started_ms,
            end_ms: now,
            attributes: vec![],
            error: trace.failed.then(|| "a model or tool call in the turn failed".to_owned()),
        };
        spans.push(
            common(turn_span)
                .attr("gen_ai.request.model", Attr::Str(config.model.clone()))
                .attr("gen_ai.usage.input_tokens", Attr::Int(trace.input_tokens))
                .attr("gen_ai.usage.output_tokens", Attr::Int(trace.output_tokens))
                .attr("agentsky.cost_cents", Attr::Int((t.turn.spent_cents - trace.cents_at_start).max(0)))
                .attr("agentsky.steps", Attr::Int(i64::from(t.turn.step))),
        );
    }
    save(sql, "turn", &trace);

    let metrics = crate::store::metrics::add_turn(
        &config.workspace_id,
        &config.agent_id,
        now.div_euclid(60_000),
        &crate::store::metrics::TurnUse {
            turns: i64::from(ended),
            failed: ended && trace.failed,
            cents,
            input_tokens: input,
            output_tokens: output,
        },
    );
    let metrics_error = env.db.all(metrics).await.err().map(|e| e.to_string());
    let export = crate::domain::otel::export(env, net, &config.workspace_id, &spans).await;
    let outbound: Vec<_> =
        env.meter.outbound().iter().map(|o| json!({ "host": o.host, "status": o.status, "ms": o.ms })).collect();
    let line = json!({
        "log": "turn_step",
        "session_id": config.session_id,
        "workspace_id": config.workspace_id,
        "agent_id": config.agent_id,
        "trace_id": trace.trace_id,
        "step": t.turn.step,
        "state": t.turn.state.as_str(),
        "turn_ended": ended,
        "input_tokens": input,
        "output_tokens": output,
        "cost_cents": cents,
        "duration_ms": now - step.started_ms,
        "d1_round_trips": env.db.calls(),
        "object_calls": env.meter.object_calls(),
        "outbound": outbound,
        "trace_exported": matches!(export, Ok(true)),
        "trace_export_error": export.err().unwrap_or_default(),
        "metrics_error": metrics_error.unwrap_or_default(),
    });
    crate::error::log_record(&line);
}

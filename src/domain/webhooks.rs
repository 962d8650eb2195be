//! Outgoing webhooks, emitting and delivering (issue 15; the endpoints' operations are `ops::webhooks`):
//! the events sent to a workspace's endpoints, and their delivery through the Queue. Standard Webhooks signing ([`crate::rules::webhooks`]); secrets are sealed at rest
//! ([`crate::rules::seal`]) and shown once, at creation or rotation, never in a list, a log or an event.
//!
//! Delivery is at least once: [`emit`] writes one `webhook_delivery` row per subscribed endpoint and
//! enqueues it; the consumer ([`deliver`]) claims one attempt at a time, retries on the schedule
//! (`WEBHOOK_RETRY_SCHEDULE`, about a day by default) with jitter and the same `webhook-id`, then marks
//! the delivery `failed` (the dead letter, shown in the console with the last answer). An attempt waits
//! [`rule::ATTEMPT_TIMEOUT_MS`] for its answer, and its claim holds the delivery only that long (and the
//! schedule's wait), so one cut by a crash is due again on the schedule. The cron sweep ([`sweep`], every
//! minute) re-enqueues a pending delivery past due: its message was lost, or its attempt was cut. A batch
//! goes out to different endpoints at once, to each one in order ([`by_endpoint`]). Emitting never fails
//! the work that caused the event: what goes wrong is logged.

use crate::cx::{Cx, Env, Net, Outbound};
use crate::egress::Egress;
use crate::error::log_line;
use crate::rules::{ids, outbound, seal, webhooks as rule};
use crate::store::{self, webhooks as db, Sql};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// What [`deliver`] keeps of a receiver's answer.
const LAST_BODY_CHARS: usize = 300;

/// The event `test_webhook` sends, to any endpoint whatever it subscribed to.
pub const TEST_EVENT: &str = "webhook.test";

/// The Standard Webhooks envelope: `type`, `timestamp` (RFC 3339), `data`.
pub fn envelope(event: &str, now_ms: i64, data: Value) -> Value {
    json!({ "type": event, "timestamp": rfc3339(now_ms), "data": data })
}

/// `YYYY-MM-DDThh:mm:ss.mmmZ`.
fn rfc3339(ms: i64) -> String {
    let t = ms.rem_euclid(86_400_000);
    let (h, m, s, milli) = (t / 3_600_000, t / 60_000 % 60, t / 1000 % 60, t % 1000);
    format!("{}T{h:02}:{m:02}:{s:02}.{milli:03}Z", crate::rules::time::format_day(ms))
}

/// The `webhook-id` of an event: derived from `source` (what happened, e.g. a request's id) when given, so
/// emitting the same happening twice (a retried step) makes one delivery per endpoint, random otherwise.
fn event_id(workspace_id: &str, event: &str, source: Option<&str>) -> String {
    match source {
        Some(s) => {
            let digest = Sha256::digest(format!("{workspace_id}/{event}/{s}").as_bytes());
            format!("msg_{}", &hex::encode(digest)[..26])
        }
        None => ids::new_id("msg"),
    }
}

/// Sends `event` with `data` to every endpoint of the workspace subscribed to it. `source` names the
/// happening for de-duplication (see [`event_id`]). Best effort: a failure is logged, never returned, so
/// the work that caused the event is not undone by its notification.
pub async fn emit(env: &Env, workspace_id: &str, event: &'static str, source: Option<&str>, data: Value, now_ms: i64) {
    if let Err(e) = try_emit(env, workspace_id, event, source, data, now_ms).await {
        log_line(&format!("webhooks: emitting {event} in {workspace_id} failed: {e}"));
    }
}

async fn try_emit(
    env: &Env,
    workspace_id: &str,
    event: &'static str,
    source: Option<&str>,
    data: Value,
    now_ms: i64,
) -> Result<(), String> {
    let endpoints = db::subscribed(&env.db, workspace_id, event).await.map_err(|e| e.to_string())?;
    if endpoints.is_empty() {
        return Ok(());
    }
    let event_id = event_id(workspace_id, event, source);
    let payload = envelope(event, now_ms, data).to_string();
    let deliveries: Vec<(String, String)> =
        endpoints.into_iter().map(|webhook_id| (ids::new_id("whd"), webhook_id)).collect();
    let stmts = deliveries
        .iter()
        .map(|(delivery_id, webhook_id)| {
            db::insert_delivery(&db::NewDelivery {
                delivery_id,
                webhook_id,
                workspace_id,
                event_id: &event_id,
                event,
                payload: &payload,
                now_ms,
            })
        })
        .collect();
    env.db.batch(stmts).await.map_err(|e| e.to_string())?;
    for (delivery_id, _) in &deliveries {
        enqueue(env, delivery_id, 0, 0).await;
    }
    Ok(())
}

/// Enqueues attempt `attempt` + 1 of a delivery after `delay_s`; a lost message is found by [`sweep`].
pub async fn enqueue(env: &Env, delivery_id: &str, attempt: i64, delay_s: u32) {
    let mut message = json!({ "webhook_delivery": delivery_id, "attempt": attempt });
    // The delivery continues the trace of the work that caused it (ids only, no secret).
    if let Some(tp) = env.meter.child_traceparent() {
        message["traceparent"] = json!(tp);
    }
    if let Err(e) = env.queue.send_after(message, delay_s).await {
        log_line(&format!("webhooks: enqueue {delivery_id} failed ({e}); the cron sweep sends it again"));
    }
}

/// How long past due the sweep leaves a delivery to its own message: a delayed message arrives about on
/// time, and the queue waits up to a second to fill a batch. A duplicate would claim nothing anyway.
const SWEEP_GRACE_MS: i64 = 10_000;

/// The cron sweep, every minute: re-enqueues pending deliveries past due whose message never came (lost,
/// sent from a place without the queue, or consumed by an attempt cut before it settled). A duplicate
/// message claims nothing ([`db::claim`]). So a lost message goes out within about a minute and ten
/// seconds of its time, and a cut attempt within the same after its claim's hold ([`rule::claim_hold_ms`]).
pub async fn sweep(cx: &Cx<'_>) -> Result<usize, String> {
    let due = db::overdue(cx.db(), cx.now_ms - SWEEP_GRACE_MS).await.map_err(|e| e.to_string())?;
    for (delivery_id, attempts) in &due {
        enqueue(cx.env, delivery_id, *attempts, 0).await;
    }
    Ok(due.len())
}

// ── Delivering ──

/// The retry schedule in force: `WEBHOOK_RETRY_SCHEDULE`, else the default day.
fn schedule<'a>(cx: &Cx<'a>) -> &'a [u32] {
    cx.env.config.webhook_retry_schedule_s.as_deref().unwrap_or(rule::DEFAULT_SCHEDULE_S)
}

/// How many endpoints a batch delivers to at once: a Worker invocation keeps 6 outgoing connections open
/// at a time, and a seventh POST would wait for one while its timeout runs.
pub const CONCURRENT_ENDPOINTS: usize = 6;

/// Runs `run` on each of `items` (a delivery id and what the caller keeps with it, such as its queue
/// message): for different endpoints at once, up to [`CONCURRENT_ENDPOINTS`], and for each endpoint one
/// at a time, oldest delivery first, so a receiver sees its events in order and is never sent two at once.
/// A delivery no longer in the database goes alone (its attempt finds nothing to do); when the lookup
/// fails, all go one at a time, as they came.
pub async fn by_endpoint<T, Fut>(db: &dyn Sql, items: Vec<(String, T)>, run: impl Fn(T) -> Fut)
where
    Fut: std::future::Future<Output = ()>,
{
    use futures::StreamExt;
    let ids: Vec<&str> = items.iter().map(|(id, _)| id.as_str()).collect();
    let order = match db::endpoints_of(db, &ids).await {
        Ok(order) => order,
        Err(e) => {
            log_line(&format!("webhooks: grouping a batch by endpoint failed ({e}); delivering one at a time"));
            for (_, item) in items {
                run(item).await;
            }
            return;
        }
    };
    let mut slots: Vec<Option<(String, T)>> = items.into_iter().map(Some).collect();
    let mut lines: Vec<(String, Vec<T>)> = Vec::new();
    for (delivery_id, webhook_id) in order {
        let at = match lines.iter().position(|(w, _)| *w == webhook_id) {
            Some(at) => at,
            None => {
                lines.push((webhook_id, Vec::new()));
                lines.len() - 1
            }
        };
        // A duplicate message is in the batch twice: both go in the line, the second claims nothing.
        for slot in &mut slots {
            if let Some((_, item)) = slot.take_if(|(id, _)| *id == delivery_id) {
                lines[at].1.push(item);
            }
        }
    }
    lines.extend(slots.into_iter().flatten().map(|(id, item)| (id, vec![item])));
    let run = &run;
    futures::stream::iter(lines)
        .for_each_concurrent(CONCURRENT_ENDPOINTS, |(_, line)| async move {
            for item in line {
                run(item).await;
            }
        })
        .await;
}

/// The queue consumer: one attempt of a delivery. `Err` only when the database failed (the message is
/// retried, and after the queue's own budget dead-lettered to [`give_up`]). Times are read from the clock
/// at the claim and at the outcome, not the context's start: a delivery may wait its turn behind others
/// to the same endpoint ([`by_endpoint`]).
pub async fn deliver(cx: &Cx<'_>, net: &dyn Net, delivery_id: &str, attempt: i64) -> Result<(), String> {
    let random = u32::from_le_bytes(ids::random_bytes());
    let retry = usize::try_from(attempt + 1).unwrap_or(usize::MAX);
    let hold_ms = rule::claim_hold_ms(schedule(cx), retry, random);
    let claimed_ms = cx.env.clock.now_ms();
    let claim = db::claim(cx.db(), delivery_id, attempt, claimed_ms, hold_ms).await.map_err(|e| e.to_string())?;
    let Some(d) = claim else {
        return Ok(()); // delivered, failed, deleted, or another message's attempt: nothing to do
    };
    let Some(endpoint) = db::secrets(cx.db(), &d.webhook_id).await.map_err(|e| e.to_string())? else {
        return Ok(());
    };
    cx.env.meter.label(|l| l.workspace_id.clone_from(&endpoint.workspace_id));
    let outcome = attempt_once(cx, net, &endpoint, &d, claimed_ms).await;
    let ended_ms = cx.env.clock.now_ms();
    let (status, body) = match outcome {
        Ok((s, _)) if (200..300).contains(&s) => {
            let s = db::Settle {
                delivery_id,
                status: db::DeliveryStatus::Delivered,
                next_attempt_ms: ended_ms,
                last_status: Some(s as i64),
                last_body: None,
                now_ms: ended_ms,
                attempts: d.attempts,
            };
            return db::settle(cx.db(), &s).await.map(drop).map_err(|e| e.to_string());
        }
        Ok((s, body)) => (Some(s as i64), body),
        Err(why) => (None, why),
    };
    let retry = usize::try_from(d.attempts).unwrap_or(usize::MAX);
    let next = rule::retry_delay_s(schedule(cx), retry, random);
    let s = db::Settle {
        delivery_id,
        status: if next.is_some() { db::DeliveryStatus::Pending } else { db::DeliveryStatus::Failed },
        next_attempt_ms: ended_ms + next.map_or(0, |s| s as i64 * 1000),
        last_status: status,
        last_body: Some(&body),
        now_ms: ended_ms,
        attempts: d.attempts,
    };
    if !db::settle(cx.db(), &s).await.map_err(|e| e.to_string())? {
        return Ok(()); // a later attempt took over while this one was late: its outcome is the one that counts
    }
    match next {
        Some(delay_s) => enqueue(cx.env, delivery_id, d.attempts, delay_s).await,
        None => log_line(&format!(
            "webhooks: delivery {delivery_id} ({}) failed after {} attempts; dead-lettered",
            d.event, d.attempts
        )),
    }
    Ok(())
}

/// One POST at `now_ms`: the receiver's status and the start of its answer, or why it could not be
/// reached or gave no answer within [`rule::ATTEMPT_TIMEOUT_MS`].
async fn attempt_once(
    cx: &Cx<'_>,
    net: &dyn Net,
    e: &db::EndpointSecrets,
    d: &db::Outgoing,
    now_ms: i64,
) -> Result<(u16, String), String> {
    use futures::future::{select, Either};
    use std::pin::pin;
    let master = cx.env.config.secrets_key.as_deref().ok_or("this deployment has no SECRETS_KEY")?;
    let row = seal::webhook_aad(&e.workspace_id, &e.webhook_id);
    let current = seal::open(master, &row, &e.secret_sealed).ok_or("the endpoint's secret does not open")?;
    let previous = e
        .previous_sealed
        .as_deref()
        .filter(|_| e.previous_until_ms.is_some_and(|until| until > now_ms))
        .and_then(|s| seal::open(master, &row, s));
    let mut secrets = vec![current.as_str()];
    secrets.extend(previous.as_deref());
    let body = match e.format.as_str() {
        "slack" => slack_message(&d.event, &d.payload).to_string().into_bytes(),
        _ => d.payload.clone().into_bytes(),
    };
    let timestamp_s = now_ms / 1000;
    let headers = vec![
        ("content-type".to_owned(), "application/json".to_owned()),
        ("user-agent".to_owned(), "agentsky-webhooks/1".to_owned()),
        ("webhook-id".to_owned(), d.event_id.clone()),
        ("webhook-timestamp".to_owned(), timestamp_s.to_string()),
        ("webhook-signature".to_owned(), rule::signature_header(&secrets, &d.event_id, timestamp_s, &body)),
    ];
    let egress = Egress::new(net, &cx.env.config);
    let post = egress.post("url", Outbound { url: e.url.clone(), headers, body });
    // The timer starts only when the answer is not there at the first poll (a host test's network answers
    // at once, and its clock's sleep moves time on).
    let timeout = async { cx.env.clock.sleep(rule::ATTEMPT_TIMEOUT_MS).await };
    let resp = match select(pin!(post), pin!(timeout)).await {
        Either::Left((resp, _)) => resp?,
        Either::Right(_) => return Err(format!("no answer within {} seconds", rule::ATTEMPT_TIMEOUT_MS / 1000)),
    };
    let shown: String = outbound::snippet(&String::from_utf8_lossy(&resp.body)).chars().take(LAST_BODY_CHARS).collect();
    Ok((resp.status, shown))
}

/// The dead-letter queue's consumer: a delivery whose messages kept failing in the consumer is failed.
pub async fn give_up(cx: &Cx<'_>, delivery_id: &str) -> Result<(), String> {
    db::give_up(cx.db(), delivery_id, cx.now_ms).await.map_err(|e| e.to_string())
}

/// A Slack incoming-webhook message for an event: a request with a button to answer it in the console;
/// other events as one line.
pub fn slack_message(event: &str, payload: &str) -> Value {
    let envelope: Value = serde_json::from_str(payload).unwrap_or(Value::Null);
    let data = &envelope["data"];
    if event == "request.opened" {
        let asks = data["agent_name"].as_str().unwrap_or("An agent");
        let what = crate::rules::webhooks::asks(data);
        let url = data["answer_url"].as_str().unwrap_or_default();
        let text = format!("{asks} asks ({}): {what}", data["kind"].as_str().unwrap_or("request"));
        let mut blocks = vec![json!({ "type": "section", "text": { "type": "mrkdwn", "text": slack_escape(&text) } })];
        if !url.is_empty() {
            blocks.push(json!({ "type": "actions", "elements": [{ "type": "button",
                "text": { "type": "plain_text", "text": "Answer in agentsky" }, "url": url }] }));
        }
        let text = if url.is_empty() { text } else { format!("{text} Answer: {url}") };
        return json!({ "text": slack_escape(&text), "blocks": blocks });
    }
    json!({ "text": slack_escape(&format!("agentsky: {event} {}", data)) })
}

/// Slack's three control characters in message text.
fn slack_escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// The data of a request's events: what a person needs to decide it, and where to answer.
pub fn request_data(req: &store::requests::RequestRow, answer_url: Option<String>) -> Value {
    json!({
        "request_id": req.request_id, "task_id": req.task_id, "session_id": req.session_id,
        "kind": req.kind, "payload": req.payload, "status": req.status, "answer": req.answer,
        "answered_ms": req.answered_ms, "answer_url": answer_url,
    })
}

/// `request.expired`, for whatever expires a request (issue 15 item 5 calls this where it expires one).
pub async fn request_expired(env: &Env, req: &store::requests::RequestRow, now_ms: i64) {
    emit(env, &req.workspace_id, "request.expired", Some(&req.request_id), request_data(req, None), now_ms).await;
}

/// What a new request tells: `request.opened`'s data, and a push's.
pub fn opened_data(
    cx: &Cx<'_>,
    me: &store::sessions::SessionRow,
    request_id: &str,
    kind: &str,
    payload: &Value,
) -> Value {
    json!({
        "request_id": request_id, "task_id": me.task_id, "session_id": me.session_id,
        "agent_id": me.agent_id, "agent_name": me.agent_name, "kind": kind, "payload": payload, "status": "open",
        // The console's approvals page of the person's default workspace (links are made only where the
        // deployment knows its origin).
        "answer_url": cx.link_base().ok().map(|b| format!("{b}/console")),
    })
}

/// `request.opened` ([`opened_data`]), from the session server where an agent's `ask_user` or
/// `request_access` opened one.
pub async fn request_opened(cx: &Cx<'_>, workspace_id: &str, request_id: &str, data: Value) {
    emit(cx.env, workspace_id, "request.opened", Some(request_id), data, cx.now_ms).await;
}

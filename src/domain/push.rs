//! Web Push to people's browsers and phones (issue 39): when an agent opens a request, every browser
//! subscribed by a member of its workspace gets a notification naming the agent, the task and what is
//! asked; tapping it opens the request in the console. Decisions and safe access requests carry buttons
//! that answer them, each a one-time token bound to the request, the answer and the subscriber
//! (`ops::push::answer_from_push` redeems it as the subscriber, through `answer_request`).
//!
//! Sending never delays the agent: [`request_opened`] enqueues one message, and the queue consumer
//! ([`deliver`]) encrypts and posts to each push service ([`crate::rules::webpush`]). A subscription the
//! push service says is gone (404 or 410) is removed. The deployment's VAPID key pair is made on first
//! need and kept sealed with `SECRETS_KEY` ([`vapid_keys`]).

use crate::cx::{Cx, Net, Outbound};
use crate::egress::Egress;
use crate::error::{log_line, ApiError, Code};
use crate::rules::webpush::{self, Keys};
use crate::rules::{approvals, ids, seal};
use crate::store::push as db;
use serde_json::{json, Value};

/// What the private key is sealed with: its row.
const VAPID_AAD: &str = "deployment/push_vapid";

/// How long a notification's answer buttons work.
pub const ACTION_TTL_MS: i64 = 24 * 3600 * 1000;

/// How long a push service keeps a message for a browser that is offline (RFC 8030 `TTL`), in seconds.
const TTL_S: i64 = 12 * 3600;

/// The deployment's VAPID key pair, made and stored sealed the first time one is needed. A deployment
/// without `SECRETS_KEY` cannot keep one: `not_implemented`, naming it.
pub async fn vapid_keys(cx: &Cx<'_>) -> Result<Keys, ApiError> {
    let master = cx.env.config.secrets_key.as_deref().ok_or_else(|| {
        ApiError::new(
            Code::NotImplemented,
            "this deployment has no SECRETS_KEY configured, so it cannot keep a Web Push (VAPID) key",
        )
    })?;
    if db::vapid(cx.db()).await?.is_none() {
        let keys = Keys::generate().await.map_err(ApiError::cause)?;
        let sealed = seal::seal(master, VAPID_AAD, &keys.private_b64());
        // Racing first uses: the first row stays, and both read it back below.
        db::insert_vapid(cx.db(), &keys.public_b64(), &sealed, cx.now_ms).await?;
    }
    let row = db::vapid(cx.db()).await?.ok_or_else(|| ApiError::cause("the VAPID key vanished"))?;
    let private = seal::open(master, VAPID_AAD, &row.private_sealed)
        .ok_or_else(|| ApiError::cause("the VAPID key does not open with this SECRETS_KEY"))?;
    Keys::from_b64(&private, &row.public_key).ok_or_else(|| ApiError::cause("the stored VAPID key is malformed"))
}

/// After an agent opened a request: one queue message, when anyone in the workspace takes pushes. Best
/// effort, like the webhooks: what goes wrong is logged.
pub async fn request_opened(cx: &Cx<'_>, workspace_id: &str, data: &Value) {
    match db::of_workspace(cx.db(), workspace_id).await {
        Ok(targets) if targets.is_empty() => {}
        Ok(_) => {
            let message = json!({ "web_push": data["request_id"], "workspace_id": workspace_id, "data": data });
            if let Err(e) = cx.env.queue.send(message).await {
                log_line(&format!("push: enqueueing a request's notification failed: {e}"));
            }
        }
        Err(e) => log_line(&format!("push: reading subscriptions failed: {e}")),
    }
}

/// One answer button: what it says, and the answer it gives.
struct Button {
    title: String,
    answer: String,
}

/// The buttons a request's notification carries: a decision's options (the first two; a phone shows no
/// more), or an access request's approve-once and deny, unless it is a production deploy or delete (its
/// target's rule may ask more, such as a fresh sign-in). Never `always`; questions and plans need words.
fn buttons(kind: &str, payload: &Value) -> Vec<Button> {
    match kind {
        "decision" => payload["options"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .take(2)
            .map(|o| Button { title: o.chars().take(40).collect(), answer: o.to_owned() })
            .collect(),
        "access" => {
            let scopes: Vec<&str> =
                payload["scope"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
            if approvals::guarded(payload["env"].as_str().unwrap_or_default(), &scopes) {
                return vec![];
            }
            vec![
                Button { title: "Approve once".into(), answer: "approve".into() },
                Button { title: "Deny".into(), answer: "deny".into() },
            ]
        }
        _ => vec![],
    }
}

/// What the notification says: who asks, in which task, and what.
fn words(data: &Value, task_title: &str) -> (String, String) {
    let agent = data["agent_name"].as_str().filter(|a| !a.is_empty()).unwrap_or("An agent");
    let asked = crate::rules::webhooks::asks(data);
    let title = match task_title {
        "" => format!("{agent} asks"),
        t => format!("{agent} asks · {t}"),
    };
    (title.chars().take(120).collect(), asked.chars().take(400).collect())
}

/// The queue consumer's part: the message [`request_opened`] enqueued, pushed to each subscription of
/// the workspace's members. `Err` only when the database failed (the queue retries).
pub async fn deliver(cx: &Cx<'_>, net: &dyn Net, message: &Value) -> Result<usize, String> {
    let workspace_id = message["workspace_id"].as_str().unwrap_or_default();
    let data = &message["data"];
    let request_id = data["request_id"].as_str().unwrap_or_default();
    let task_id = data["task_id"].as_str().unwrap_or_default();
    let keys = match vapid_keys(cx).await {
        Ok(k) => k,
        Err(e) => {
            log_line(&format!("push: no VAPID key: {}", e.message));
            return Ok(0);
        }
    };
    let targets = db::of_workspace(cx.db(), workspace_id).await.map_err(|e| e.to_string())?;
    let place = db::place(cx.db(), workspace_id, task_id).await.map_err(|e| e.to_string())?;
    let Some(place) = place else { return Ok(0) };
    let (title, body) = words(data, &place.task_title);
    let url = format!("/console/w/{}#request-{request_id}", place.slug);
    let buttons = buttons(data["kind"].as_str().unwrap_or_default(), &data["payload"]);
    let subject = match cx.base_url.starts_with("https://") {
        true => cx.base_url.clone(),
        false => "mailto:webpush@localhost".to_owned(),
    };
    let mut sent = 0;
    for t in targets {
        let mut actions = Vec::new();
        let mut stmts = Vec::new();
        for (i, b) in buttons.iter().enumerate() {
            let token = ids::new_secret("pa_");
            let hash = ids::hash_secret(&token);
            stmts.push(db::insert_action(&db::NewAction {
                token_hash: &hash,
                request_id,
                task_id,
                answer: &b.answer,
                account_id: &t.account_id,
                key_id: &t.key_id,
                expires_ms: cx.now_ms + ACTION_TTL_MS,
            }));
            actions.push(json!({ "action": format!("a{i}"), "title": b.title, "answer": b.answer, "token": token }));
        }
        if !stmts.is_empty() {
            cx.db().batch(stmts).await.map_err(|e| e.to_string())?;
        }
        let payload = json!({
            "title": title, "body": body, "url": url, "request_id": request_id, "task_id": task_id,
            "workspace": place.slug, "actions": actions,
        });
        match push_one(cx, net, &keys, &subject, &t, payload.to_string().as_bytes()).await {
            Ok(status) if (200..300).contains(&status) => {
                sent += 1;
                db::delivered(cx.db(), &t.subscription_id, cx.clock_now()).await.map_err(|e| e.to_string())?;
            }
            Ok(404 | 410) => db::gone(cx.db(), &t.subscription_id).await.map_err(|e| e.to_string())?,
            Ok(status) => log_line(&format!("push: {} answered {status}", t.subscription_id)),
            Err(why) => log_line(&format!("push: {} failed: {why}", t.subscription_id)),
        }
    }
    Ok(sent)
}

/// One encrypted POST to a subscription's push service (RFC 8030 §5): its status.
async fn push_one(
    cx: &Cx<'_>,
    net: &dyn Net,
    keys: &Keys,
    subject: &str,
    t: &db::Target,
    plaintext: &[u8],
) -> Result<u16, String> {
    let (ua_public, auth) = webpush::subscription_keys(&t.p256dh, &t.auth)?;
    let body = webpush::encrypt(plaintext, &ua_public, &auth).await?;
    let exp_s = cx.now_ms / 1000 + webpush::MAX_VAPID_S / 2;
    let authorization = webpush::vapid_authorization(&t.endpoint, subject, exp_s, keys).await?;
    let headers = vec![
        ("authorization".to_owned(), authorization),
        ("content-encoding".to_owned(), "aes128gcm".to_owned()),
        ("content-type".to_owned(), "application/octet-stream".to_owned()),
        ("ttl".to_owned(), TTL_S.to_string()),
        ("urgency".to_owned(), "high".to_owned()),
    ];
    let egress = Egress::new(net, &cx.env.config);
    let resp = egress.post("endpoint", Outbound { url: t.endpoint.clone(), headers, body }).await?;
    Ok(resp.status)
}

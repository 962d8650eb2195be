//! Web Push, the operations (issue 39): the deployment's public VAPID key, a person's browser subscribed
//! (the Push API's `PushSubscription` JSON, from the console or with a key), their subscriptions listed
//! and removed; and a notification's one-time answer ([`answer_from_push`]). Sending is
//! [`crate::domain::push`].

use crate::cx::{Channel, Cx};
use crate::domain::push::vapid_keys;
use crate::error::{ApiError, Code};
use crate::rules::ids::PushSubscriptionId;
use crate::rules::params::Text;
use crate::rules::{ids, outbound, webpush};
use crate::store::push as db;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PushVapidKey {}

#[derive(Debug, Serialize, JsonSchema)]
pub struct VapidKey {
    /// The deployment's VAPID public key (uncompressed P-256, base64url): a browser's
    /// `pushManager.subscribe({userVisibleOnly: true, applicationServerKey})` takes it.
    pub public_key: String,
}

/// push_vapid_key
pub async fn vapid_key(cx: &Cx<'_>, _: PushVapidKey) -> Result<VapidKey, ApiError> {
    Ok(VapidKey { public_key: vapid_keys(cx).await?.public_b64() })
}

/// A subscription's keys, as the browser gives them.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PushKeys {
    /// The browser's P-256 public key (uncompressed point, base64url).
    pub p256dh: Text<1, 200>,
    /// Its 16-byte authentication secret (base64url).
    pub auth: Text<1, 100>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubscribePush {
    /// The push service's URL for this browser (`PushSubscription.endpoint`): an `https://` URL on a
    /// public host.
    pub endpoint: Text<1, 2_000>,
    /// `PushSubscription.toJSON().keys`.
    pub keys: PushKeys,
    /// `PushSubscription.expirationTime`, as the browser sends it; not used.
    #[serde(rename = "expirationTime")]
    pub expiration_time: Option<i64>,
    /// A name for the device, shown on the Devices page (default: the push service's host).
    pub label: Option<Text<0, 200>>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PushSubscribed {
    pub subscription: db::Subscription,
}

/// subscribe_push — the caller's own browser; the same endpoint again replaces its keys.
pub async fn subscribe(cx: &Cx<'_>, p: SubscribePush) -> Result<PushSubscribed, ApiError> {
    let caller = cx.caller()?.clone();
    let url = outbound::check("endpoint", &p.endpoint, cx.env.config.allow_loopback_http).map_err(ApiError::invalid)?;
    webpush::subscription_keys(&p.keys.p256dh, &p.keys.auth).map_err(ApiError::invalid)?;
    let endpoint = url.as_str();
    if db::count_other(cx.db(), &caller.account_id, endpoint).await? >= db::MAX_PER_ACCOUNT {
        return Err(ApiError::new(
            Code::Conflict,
            format!("an account takes pushes on at most {} devices; remove one first", db::MAX_PER_ACCOUNT),
        ));
    }
    let label = match p.label.map(String::from).filter(|l| !l.trim().is_empty()) {
        Some(l) => l,
        None => url.host_str().unwrap_or_default().to_owned(),
    };
    let subscription_id = db::upsert(
        cx.db(),
        &db::NewSubscription {
            subscription_id: &ids::new_id("psub"),
            account_id: &caller.account_id,
            key_id: &caller.key_id,
            endpoint,
            p256dh: &p.keys.p256dh,
            auth: &p.keys.auth,
            label: &label,
            now_ms: cx.now_ms,
        },
    )
    .await?;
    let subscription = db::list(cx.db(), &caller.account_id)
        .await?
        .into_iter()
        .find(|s| s.subscription_id == subscription_id)
        .ok_or_else(|| ApiError::cause("subscription vanished"))?;
    Ok(PushSubscribed { subscription })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListPushSubscriptions {}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PushSubscriptions {
    /// Your browsers and devices that take pushes, newest first (never their keys).
    pub subscriptions: Vec<db::Subscription>,
}

/// list_push_subscriptions — the caller's own.
pub async fn list(cx: &Cx<'_>, _: ListPushSubscriptions) -> Result<PushSubscriptions, ApiError> {
    Ok(PushSubscriptions { subscriptions: db::list(cx.db(), &cx.caller()?.account_id).await? })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeletePushSubscription {
    /// From `list_push_subscriptions`.
    pub subscription_id: PushSubscriptionId,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct PushSubscriptionDeleted {
    pub subscription_id: String,
    pub deleted: bool,
}

/// delete_push_subscription — the caller's own.
pub async fn delete(cx: &Cx<'_>, p: DeletePushSubscription) -> Result<PushSubscriptionDeleted, ApiError> {
    let account = cx.caller()?.account_id.clone();
    let id = p.subscription_id.to_string();
    if !db::delete(cx.db(), &account, &id).await? {
        return Err(ApiError::not_found("push subscription"));
    }
    Ok(PushSubscriptionDeleted { subscription_id: id, deleted: true })
}

/// A notification's action button, pressed: the one-time `token` it carried (a hash of it is stored,
/// bound to one request, one answer and the subscriber's account and key) answers the request as that
/// key through `answer_request`, so its roles and rules hold (a read key, a member where an owner must
/// approve, a target that wants a fresh console sign-in are refused as there). The audit log names the
/// channel `push`. A token works once, for a day; every other button of the request goes with it.
pub async fn answer_from_push(cx: &Cx<'_>, token: &str) -> Result<Value, ApiError> {
    let gone = || ApiError::new(Code::NotFound, "this button was used or expired; open the request instead");
    if token.is_empty() || token.len() > 200 {
        return Err(gone());
    }
    let hash = ids::hash_secret(token);
    let action = db::use_action(cx.db(), &hash, cx.now_ms).await?.ok_or_else(gone)?;
    // The index found the row by digest; comparing the digests again in constant time costs nothing.
    if !ids::constant_time_eq(&action.token_hash, &hash) {
        return Err(gone());
    }
    let caller = crate::store::keys::caller_by_id(cx.db(), &action.key_id, &action.account_id, cx.now_ms)
        .await?
        .ok_or_else(|| ApiError::new(Code::Unauthorized, "the key this device subscribed with was revoked; sign in"))?;
    let acting = Cx {
        env: cx.env,
        now_ms: cx.now_ms,
        request_id: cx.request_id.clone(),
        caller: Some(caller),
        universe: None,
        base_url: cx.base_url.clone(),
        client_ip: cx.client_ip.clone(),
        admin: false,
        touched: Default::default(),
        channel: Channel::Push,
        verdict: None,
    };
    let params = crate::ops::requests::AnswerRequest {
        task_id: action.task_id.clone().try_into().map_err(ApiError::cause)?,
        request_id: action.request_id.clone().try_into().map_err(ApiError::cause)?,
        answer: action.answer.clone().try_into().map_err(ApiError::cause)?,
        note: None,
        always: None,
        expires_in_minutes: None,
        workspace: None,
    };
    let answered = crate::ops::call::answer_request(&acting, params).await?;
    db::spend_request(cx.db(), &action.request_id, cx.now_ms).await?;
    Ok(json!({ "request_id": action.request_id, "answer": action.answer, "status": answered.request.status }))
}

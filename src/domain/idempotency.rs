//! Exactly-once mutations under retries: Stripe's idempotency keys, plus coalescing of concurrent
//! duplicates and crash-safe ids.
//!
//! - Same key, same inputs (fingerprinted as canonical JSON): the original result, replayed.
//! - Same key, other inputs: `idempotency_conflict`.
//! - Concurrent duplicates: one claims the receipt and works; the others wait for its result.
//! - The ids the work creates are chosen when the receipt is claimed (`reserved`), so if the claimant
//!   dies, whoever takes the receipt over finishes the same work instead of starting a second one.
//! - Failures before the work starts (auth, scope, limits, validation, credits) store nothing; a failure
//!   during it releases the receipt so a retry can try again.
//!
//! Retention: 30 days for session starts, 24 hours for everything else.

use crate::cx::Cx;
use crate::error::{ApiError, Code};
use crate::rules::fingerprint;
use crate::store::receipts::{self, Claim};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use std::future::Future;

pub const START_TTL_MS: i64 = 30 * 86_400_000;
pub const DEFAULT_TTL_MS: i64 = 86_400_000;
/// A claimant silent this long is presumed dead and may be replaced.
const STALE_MS: i64 = 20_000;
/// How long a duplicate waits for the claimant's result before giving up.
const WAIT_MS: i64 = 30_000;

/// Which receipt a call uses, and how long it is kept.
pub struct Scope<'a> {
    pub workspace_id: &'a str,
    pub tool: &'static str,
    pub key: &'a str,
    pub ttl_ms: i64,
}

/// Runs `work` once per (workspace, tool, key). `args` are the call's arguments as the caller sent them;
/// `reserve` makes the ids the work will use.
pub async fn once<T, R, F, Fut>(
    cx: &Cx<'_>,
    scope: Scope<'_>,
    args: &Value,
    reserve: impl FnOnce() -> R,
    work: F,
) -> Result<T, ApiError>
where
    T: Serialize + DeserializeOwned,
    R: Serialize + DeserializeOwned,
    F: Fn(R) -> Fut,
    Fut: Future<Output = Result<T, ApiError>>,
{
    let Scope { workspace_id, tool, key, ttl_ms } = scope;
    let print = fingerprint::of_arguments(args);
    let reserved = serde_json::to_string(&reserve()).map_err(ApiError::cause)?;
    let clock = &cx.env.clock;
    let deadline = clock.now_ms() + WAIT_MS;
    let mut pause = 25;
    loop {
        let now = clock.now_ms();
        let claim = Claim {
            workspace_id,
            tool,
            key,
            fingerprint: &print,
            reserved: &reserved,
            now_ms: now,
            expires_ms: now + ttl_ms,
        };
        let mine = if receipts::claim(cx.db(), &claim).await? {
            Some(reserved.clone())
        } else {
            match receipts::get(cx.db(), workspace_id, tool, key, now).await? {
                None => continue, // expired between the two statements: claim again
                Some(r) if !crate::rules::ids::constant_time_eq(&r.fingerprint, &print) => {
                    return Err(ApiError::new(
                        Code::IdempotencyConflict,
                        format!(
                            "this idempotency_key was used for `{tool}` with other inputs; use a new key for new work"
                        ),
                    ))
                }
                Some(r) if r.state == receipts::ReceiptState::Done => {
                    let text = r.result.unwrap_or_default();
                    return serde_json::from_str(&text).map_err(ApiError::cause);
                }
                Some(r) if r.claimed_ms < now - STALE_MS => {
                    let won = receipts::take_over(cx.db(), workspace_id, tool, key, r.claimed_ms, now).await?;
                    won.then_some(r.reserved)
                }
                Some(_) => None,
            }
        };
        if let Some(reserved) = mine {
            let ids: R = serde_json::from_str(&reserved).map_err(ApiError::cause)?;
            return match work(ids).await {
                Ok(result) => {
                    let text = serde_json::to_string(&result).map_err(ApiError::cause)?;
                    receipts::complete(cx.db(), workspace_id, tool, key, &text).await?;
                    Ok(result)
                }
                Err(e) => {
                    // Best effort: if this fails too, the receipt goes stale and is taken over.
                    let _ = receipts::release(cx.db(), workspace_id, tool, key).await;
                    Err(e)
                }
            };
        }
        if clock.now_ms() + pause > deadline {
            return Err(ApiError::new(
                Code::Conflict,
                "the first request with this idempotency_key is still running; retry the same call shortly",
            ));
        }
        clock.sleep(pause).await;
        pause = (pause * 2).min(400);
    }
}

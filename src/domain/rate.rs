//! The per-minute buckets every face counts against: sessions and addresses over the `Limiter`; keys in
//! D1 ([`crate::store::rate`], counted by `ops::invoke` in the batch of the call's first statement).

use crate::cx::Cx;
use crate::error::ApiError;
use crate::rules::rate::{self, Decision};

/// A decision as the call's outcome: `rate_limited` with the wait until a call would pass, in
/// `retry_after_ms` and in the message alike.
pub fn decided(decision: Decision, limit: u32) -> Result<(), ApiError> {
    match decision {
        Decision::Allowed { .. } => Ok(()),
        Decision::Limited { retry_after_ms } => Err(ApiError::rate_limited(
            format!("rate limit of {limit} calls a minute reached; retry in {}", rate::seconds(retry_after_ms)),
            retry_after_ms,
        )),
    }
}

/// Counts one hit on a bucket of `limit` per minute (an exact sliding window, [`rate`]); `rate_limited`
/// with the wait until a call would pass, in `retry_after_ms` and in the message alike, when it is full.
pub async fn rate_limit(cx: &Cx<'_>, bucket: String, limit: u32) -> Result<(), ApiError> {
    decided(cx.env.limiter.hit(bucket, limit, 60_000, cx.now_ms).await.map_err(ApiError::cause)?, limit)
}

//! The per-minute buckets every face counts against (keys, sessions, addresses), over the `Limiter`.

use crate::cx::Cx;
use crate::error::ApiError;
use crate::rules::rate::{self, Decision};

/// Counts one hit on a bucket of `limit` per minute (an exact sliding window, [`rate`]); `rate_limited`
/// with the wait until a call would pass, in `retry_after_ms` and in the message alike, when it is full.
pub async fn rate_limit(cx: &Cx<'_>, bucket: String, limit: u32) -> Result<(), ApiError> {
    match cx.env.limiter.hit(bucket, limit, 60_000, cx.now_ms).await.map_err(ApiError::cause)? {
        Decision::Allowed { .. } => Ok(()),
        Decision::Limited { retry_after_ms } => Err(ApiError::rate_limited(
            format!("rate limit of {limit} calls a minute reached; retry in {}", rate::seconds(retry_after_ms)),
            retry_after_ms,
        )),
    }
}

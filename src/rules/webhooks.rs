//! Outgoing webhooks by the Standard Webhooks convention (standardwebhooks.com): the event names a
//! workspace may subscribe to, the signing of a delivery, and the retry schedule. Pure: the secret's
//! random bytes and the jitter's are passed in.
//!
//! A signature is `v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">`, keyed by the
//! base64-decoded part of the `whsec_…` secret. Several signatures (a rotation's overlap) are separated by
//! spaces, and a receiver accepts the delivery when any one matches.

use super::hmac::hmac_sha256;
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::Value;

/// Every event an endpoint may subscribe to, as receivers see it in `type`.
pub const EVENTS: &[&str] = &[
    "request.opened",
    "request.answered",
    "request.expired",
    "turn.finished",
    "session.failed",
    "goal.met",
    "goal.limit_reached",
    "routine.fired",
    "routine.failed",
    "budget.threshold",
    // What `test_webhook` sends; every endpoint receives it, whatever it subscribed to.
    "webhook.test",
];

/// The formats an endpoint's body may take: the Standard Webhooks JSON envelope, or a Slack incoming
/// webhook's message (`text` and `blocks`).
pub const FORMATS: &[&str] = &["standard", "slack"];

/// Percentages of a budget at which `budget.threshold` fires, once each.
pub const BUDGET_THRESHOLDS: [i64; 3] = [50, 80, 100];

/// The thresholds (percent) a spend crossed going from `before` to `after` cents of `budget`.
pub fn thresholds_crossed(before: i64, after: i64, budget: i64) -> Vec<i64> {
    if budget <= 0 {
        return vec![];
    }
    BUDGET_THRESHOLDS.into_iter().filter(|p| before * 100 < p * budget && after * 100 >= p * budget).collect()
}

/// A new signing secret: `whsec_` and 32 random bytes in standard base64.
pub fn new_secret(bytes: [u8; 32]) -> String {
    format!("whsec_{}", STANDARD.encode(bytes))
}

/// The key a secret signs with: its base64 part decoded (the whole text when it is not base64, as the
/// reference libraries do not accept; ours are always base64).
fn key(secret: &str) -> Vec<u8> {
    let b64 = secret.strip_prefix("whsec_").unwrap_or(secret);
    STANDARD.decode(b64).unwrap_or_else(|_| b64.as_bytes().to_vec())
}

/// One `v1,…` signature of a delivery.
pub fn sign(secret: &str, id: &str, timestamp_s: i64, body: &[u8]) -> String {
    let mut message = format!("{id}.{timestamp_s}.").into_bytes();
    message.extend_from_slice(body);
    format!("v1,{}", STANDARD.encode(hmac_sha256(&key(secret), &message)))
}

/// The `webhook-signature` header: one signature per secret in force, space-separated.
pub fn signature_header(secrets: &[&str], id: &str, timestamp_s: i64, body: &[u8]) -> String {
    secrets.iter().map(|s| sign(s, id, timestamp_s, body)).collect::<Vec<_>>().join(" ")
}

/// A receiver's check: true when any signature in `header` is this secret's (constant-time).
pub fn verify(secret: &str, id: &str, timestamp_s: i64, body: &[u8], header: &str) -> bool {
    let expected = sign(secret, id, timestamp_s, body);
    header.split(' ').any(|s| crate::rules::ids::constant_time_eq(s, &expected))
}

/// Seconds between attempts when `WEBHOOK_RETRY_SCHEDULE` is not set: exponential, each at most 12 hours
/// (the queue's longest delay), about a day in all, so a receiver down for a day loses nothing.
pub const DEFAULT_SCHEDULE_S: &[u32] = &[5, 30, 120, 600, 1800, 3600, 7200, 14400, 28800, 30000];

/// How long one attempt waits for the receiver's answer, redirects included. Standard Webhooks asks a
/// receiver to answer at once and do its work afterwards; one that does not is cut here and retried on
/// the schedule, so a hung receiver holds neither its delivery nor the consumer for long.
pub const ATTEMPT_TIMEOUT_MS: i64 = 15_000;

/// What a claim holds beyond its attempt's timeout: the claim's and the outcome's writes around the POST.
pub const CLAIM_MARGIN_MS: i64 = 5_000;

/// How long a claim for retry `retry` holds its delivery (its `next_attempt_ms` while the attempt runs):
/// the attempt's timeout and margin, then the wait the schedule gives that retry's failure. An attempt
/// cut by a crash never writes its outcome, so this is when it is due again, exactly as if it had timed
/// out. Once the schedule is spent, no wait: the cut attempt may never have reached the receiver, and the
/// one after it is the last.
pub fn claim_hold_ms(schedule: &[u32], retry: usize, random: u32) -> i64 {
    let wait_s = retry_delay_s(schedule, retry, random).unwrap_or(0);
    ATTEMPT_TIMEOUT_MS + CLAIM_MARGIN_MS + i64::from(wait_s) * 1000
}

/// Parses `WEBHOOK_RETRY_SCHEDULE` (comma-separated seconds, each 0–43200); `None` when malformed.
pub fn parse_schedule(raw: &str) -> Option<Vec<u32>> {
    let v: Option<Vec<u32>> = raw.split(',').map(|s| s.trim().parse::<u32>().ok().filter(|n| *n <= 43_200)).collect();
    v.filter(|v| !v.is_empty() && v.len() <= 30)
}

/// The wait before retry `n` (1-based) with up to ±20 % jitter from `random` (0..=u32::MAX), so many
/// endpoints failing together do not retry in lockstep; `None` once the schedule is spent (dead letter).
pub fn retry_delay_s(schedule: &[u32], retry: usize, random: u32) -> Option<u32> {
    let base = *schedule.get(retry.checked_sub(1)?)? as i64;
    let spread = base / 5;
    let jitter = if spread == 0 { 0 } else { (random as i64 % (2 * spread + 1)) - spread };
    Some((base + jitter).clamp(0, 43_200) as u32)
}

/// What a request asks, in one line, from its events' data (webhooks, Slack and push say it alike): an access request's target and scopes, a question's prompt, a plan's
/// summary.
pub fn asks(data: &Value) -> String {
    let p = &data["payload"];
    let text = match data["kind"].as_str() {
        Some("access") => format!(
            "access to {} ({}) for {}: {}",
            p["target"].as_str().unwrap_or("?"),
            p["env"].as_str().unwrap_or("?"),
            p["scope"]
                .as_array()
                .map(|s| s.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", "))
                .unwrap_or_default(),
            p["reason"].as_str().unwrap_or_default()
        ),
        Some("plan") => p["summary"].as_str().unwrap_or_default().to_owned(),
        _ => p["prompt"].as_str().unwrap_or_default().to_owned(),
    };
    text.chars().take(500).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signatures_match_the_standard_webhooks_test_vector() {
        // The specification's example (standard-webhooks/libraries, README).
        let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
        let body = br#"{"test": 2432232314}"#;
        let sig = sign(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body);
        assert_eq!(sig, "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=");
        assert!(verify(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body, &format!("v1,bad {sig}")));
        assert!(!verify(secret, "msg_other", 1614265330, body, &sig));
    }

    #[test]
    fn each_threshold_is_crossed_once() {
        assert_eq!(thresholds_crossed(0, 49, 100), Vec::<i64>::new());
        assert_eq!(thresholds_crossed(0, 50, 100), vec![50]);
        assert_eq!(thresholds_crossed(50, 120, 100), vec![80, 100]);
        assert_eq!(thresholds_crossed(100, 130, 100), Vec::<i64>::new());
        assert_eq!(thresholds_crossed(0, 10, 0), Vec::<i64>::new());
    }

    #[test]
    fn the_schedule_jitters_within_a_fifth_and_ends() {
        let s = [10, 100];
        assert_eq!(retry_delay_s(&s, 0, 0), None);
        for r in [0, 1, 7, u32::MAX] {
            let d = retry_delay_s(&s, 2, r).unwrap();
            assert!((80..=120).contains(&d), "{d}");
        }
        assert_eq!(retry_delay_s(&s, 3, 0), None);
        assert_eq!(parse_schedule("1, 2,3"), Some(vec![1, 2, 3]));
        assert_eq!(parse_schedule("1,x"), None);
        assert_eq!(parse_schedule("99999"), None);
        assert!(DEFAULT_SCHEDULE_S.iter().map(|s| *s as i64).sum::<i64>() >= 80_000);
    }

    #[test]
    fn a_claim_holds_its_delivery_for_the_timeout_and_the_retry_wait_only() {
        let s = [10, 100];
        let held = ATTEMPT_TIMEOUT_MS + CLAIM_MARGIN_MS;
        assert_eq!(claim_hold_ms(&s, 1, 0), held + 8_000, "the first retry's wait, jittered");
        assert!((held + 80_000..=held + 120_000).contains(&claim_hold_ms(&s, 2, 7)));
        assert_eq!(claim_hold_ms(&s, 3, 0), held, "the schedule spent: only the attempt itself");
        assert!(held <= 20_000, "a crashed attempt is not held for minutes");
    }
}

//! Stripe's side of money in, pure: the bounds of a top-up, the form encoding Stripe's API reads, and
//! the `Stripe-Signature` check its webhooks are verified by (`t=<unix seconds>,v1=<hex>`: the
//! HMAC-SHA256 of `"{t}.{raw body}"` under the endpoint's secret, compared in constant time, refused
//! when older than [`TOLERANCE_S`] so a captured event cannot be replayed later).

use crate::rules::hmac::hmac_sha256;
use crate::rules::ids::constant_time_eq;
use crate::rules::params::Int;

/// The one currency wallets hold.
pub const CURRENCY: &str = "usd";
/// A one-off or automatic top-up, in cents: $5 to $1,000.
pub const MIN_TOP_UP_CENTS: i64 = 500;
pub const MAX_TOP_UP_CENTS: i64 = 100_000;
/// How old a signed event may be when it arrives.
pub const TOLERANCE_S: i64 = 300;

/// A top-up's amount, refused outside the bounds when decoded and published as `minimum`/`maximum`.
pub type TopUpCents = Int<MIN_TOP_UP_CENTS, MAX_TOP_UP_CENTS>;
/// The balance under which an automatic top-up fires.
pub type ThresholdCents = Int<0, MAX_TOP_UP_CENTS>;

/// `application/x-www-form-urlencoded`, with Stripe's bracketed keys (`metadata[workspace]`) as written.
pub fn form(fields: &[(&str, &str)]) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (k, v) in fields {
        out.append_pair(k, v);
    }
    out.finish()
}

/// Why a webhook's signature was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// No `t=` or no `v1=` in the header.
    Malformed,
    /// No `v1` signature matches the body under the secret.
    Mismatch,
    /// Signed more than [`TOLERANCE_S`] ago.
    TooOld,
}

impl Refused {
    pub fn message(&self) -> &'static str {
        match self {
            Refused::Malformed => "the Stripe-Signature header must hold `t=` and `v1=`",
            Refused::Mismatch => "the Stripe-Signature does not match this deployment's webhook secret",
            Refused::TooOld => "the Stripe-Signature timestamp is more than 5 minutes old",
        }
    }
}

/// The hex `v1` signature of `body` signed at `t`.
pub fn signature(secret: &str, t: i64, body: &[u8]) -> String {
    let mut signed = format!("{t}.").into_bytes();
    signed.extend_from_slice(body);
    hex::encode(hmac_sha256(secret.as_bytes(), &signed))
}

/// The header a sender computes (for tests and the local fake).
pub fn header(secret: &str, t: i64, body: &[u8]) -> String {
    format!("t={t},v1={}", signature(secret, t, body))
}

/// Verifies `header` for `body` at `now_s`. Any of several `v1` entries may match (Stripe sends one per
/// active secret while a secret is rolled).
pub fn verify(secret: &str, header: &str, body: &[u8], now_s: i64) -> Result<(), Refused> {
    let mut t = None;
    let mut given = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = v.parse::<i64>().ok(),
            Some(("v1", v)) => given.push(v.to_ascii_lowercase()),
            _ => {}
        }
    }
    let Some(t) = t.filter(|_| !given.is_empty()) else { return Err(Refused::Malformed) };
    let expected = signature(secret, t, body);
    if !given.iter().any(|g| constant_time_eq(g, &expected)) {
        return Err(Refused::Mismatch);
    }
    if now_s - t > TOLERANCE_S {
        return Err(Refused::TooOld);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const BODY: &[u8] = br#"{"id":"evt_1","type":"checkout.session.completed"}"#;

    #[test]
    fn a_signature_verifies_for_its_secret_body_and_recent_time_only() {
        let h = header("whsec_a", 1_000, BODY);
        assert_eq!(verify("whsec_a", &h, BODY, 1_000), Ok(()));
        assert_eq!(verify("whsec_a", &h, BODY, 1_000 + TOLERANCE_S), Ok(()));
        assert_eq!(verify("whsec_b", &h, BODY, 1_000), Err(Refused::Mismatch), "another secret");
        assert_eq!(verify("whsec_a", &h, b"{}", 1_000), Err(Refused::Mismatch), "another body");
        assert_eq!(verify("whsec_a", &h, BODY, 1_001 + TOLERANCE_S), Err(Refused::TooOld));
        let moved = h.replace("t=1000", "t=2000");
        assert_eq!(verify("whsec_a", &moved, BODY, 2_000), Err(Refused::Mismatch), "the time is signed too");
        assert_eq!(verify("whsec_a", "v1=abc", BODY, 1_000), Err(Refused::Malformed));
        assert_eq!(verify("whsec_a", "t=1000", BODY, 1_000), Err(Refused::Malformed));
    }

    #[test]
    fn any_v1_entry_may_match_and_other_schemes_are_ignored() {
        let good = signature("whsec_a", 5, BODY);
        let h = format!("t=5,v0=deadbeef,v1={},v1={good}", "0".repeat(64));
        assert_eq!(verify("whsec_a", &h, BODY, 5), Ok(()));
    }

    #[test]
    fn forms_encode_brackets_and_spaces_as_stripe_reads_them() {
        assert_eq!(form(&[("metadata[workspace]", "ws_1"), ("a", "b c&d")]), "metadata%5Bworkspace%5D=ws_1&a=b+c%26d");
    }
}

//! HMAC-SHA256 (the `hmac` crate), and the `X-Hub-Signature-256` check GitHub-style webhooks are signed with.
//! Pure; comparisons are constant-time.

use hmac::{Hmac, Mac};
use sha2::Sha256;

pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

/// True when `header` (`sha256=<hex>`) is the HMAC of `body` under `secret`.
pub fn signature_matches(secret: &str, body: &[u8], header: &str) -> bool {
    let Some(hex) = header.trim().strip_prefix("sha256=") else { return false };
    let expected = hex::encode(hmac_sha256(secret.as_bytes(), body));
    crate::rules::ids::constant_time_eq(&expected, &hex.to_ascii_lowercase())
}

/// The header value a sender computes: `sha256=<hex>`.
pub fn signature(secret: &str, body: &[u8]) -> String {
    format!("sha256={}", hex::encode(hmac_sha256(secret.as_bytes(), body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_test_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(hex::encode(mac), "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
    }

    #[test]
    fn a_signature_checks_against_its_body_only() {
        let sig = signature("s3cret", b"{\"a\":1}");
        assert!(signature_matches("s3cret", b"{\"a\":1}", &sig));
        assert!(!signature_matches("s3cret", b"{\"a\":2}", &sig));
        assert!(!signature_matches("other", b"{\"a\":1}", &sig));
        assert!(!signature_matches("s3cret", b"{\"a\":1}", "sha1=abc"));
    }
}

//! Identifiers and secrets. Ids carry a type prefix (`ws_`, `ag_`, …) so a wrong id fails loudly; keys are
//! 32 random bytes shown once and stored only as a SHA-256 hex digest.

use base64::Engine;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// Fills a buffer from the platform's CSPRNG (crypto.getRandomValues in the Worker).
pub fn random_bytes<const N: usize>() -> [u8; N] {
    let mut buf = [0u8; N];
    getrandom::fill(&mut buf).expect("the platform CSPRNG is available");
    buf
}

const ALPHABET: &[u8; 32] = b"0123456789abcdefghjkmnpqrstvwxyz";

/// A new id: the prefix, then 128 random bits in lower-case Crockford base32 (26 characters).
pub fn new_id(prefix: &str) -> String {
    let bytes: [u8; 16] = random_bytes();
    let mut n = u128::from_be_bytes(bytes);
    let mut out = String::with_capacity(prefix.len() + 27);
    out.push_str(prefix);
    out.push('_');
    for _ in 0..26 {
        out.push(ALPHABET[(n & 31) as usize] as char);
        n >>= 5;
    }
    out
}

/// True when `id` looks like one of ours with this prefix; lets handlers refuse garbage before a query.
pub fn is_id(id: &str, prefix: &str) -> bool {
    id.strip_prefix(prefix)
        .and_then(|rest| rest.strip_prefix('_'))
        .is_some_and(|body| body.len() == 26 && body.bytes().all(|b| ALPHABET.contains(&b)))
}

/// A secret token: the prefix, then 32 random bytes in base64url (43 characters).
pub fn new_secret(prefix: &str) -> String {
    let bytes: [u8; 32] = random_bytes();
    format!("{prefix}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

/// The stored form of a secret.
pub fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// Compares two secrets (or digests) without leaking where they differ.
pub fn constant_time_eq(a: &str, b: &str) -> bool {
    a.len() == b.len() && bool::from(a.as_bytes().ct_eq(b.as_bytes()))
}

/// What lists show of a key: enough to recognise it, far too little to use it.
pub fn key_prefix(key: &str) -> String {
    key.chars().take(12).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_their_prefix_and_128_bits() {
        let id = new_id("ws");
        assert!(is_id(&id, "ws"), "{id}");
        assert!(!is_id(&id, "ag"));
        assert_ne!(new_id("ws"), new_id("ws"));
        assert!(!is_id("ws_../../etc", "ws"));
    }

    #[test]
    fn secrets_are_long_and_hash_to_hex() {
        let key = new_secret("ast_");
        assert!(key.starts_with("ast_") && key.len() == 47);
        let h = hash_secret(&key);
        assert_eq!(h.len(), 64);
        assert!(constant_time_eq(&h, &hash_secret(&key)));
        assert!(!constant_time_eq(&h, &hash_secret("ast_other")));
        assert_eq!(key_prefix(&key).len(), 12);
    }
}

//! RS256 JSON Web Tokens, as a GitHub App signs one to ask for an installation token (and a Google
//! service account its assertion): the header and claims base64url-encoded, signed with RSASSA-PKCS1-v1_5
//! over SHA-256 (RFC 7515, RFC 7518 §3.3).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::pkcs1v15::SigningKey;
use rsa::pkcs8::DecodePrivateKey;
use rsa::signature::{SignatureEncoding, Signer};
use rsa::RsaPrivateKey;
use serde_json::{json, Value};
use sha2::Sha256;

/// A private key in PEM, as GitHub hands it out (PKCS #1, `BEGIN RSA PRIVATE KEY`) or Google does
/// (PKCS #8, `BEGIN PRIVATE KEY`); an error that says which forms are taken.
pub fn private_key(pem: &str) -> Result<RsaPrivateKey, String> {
    let pem = pem.trim();
    RsaPrivateKey::from_pkcs1_pem(pem).or_else(|_| RsaPrivateKey::from_pkcs8_pem(pem)).map_err(|_| {
        "the private key is not an RSA key in PEM (`-----BEGIN RSA PRIVATE KEY-----` or `-----BEGIN PRIVATE KEY-----`)"
            .to_owned()
    })
}

/// `claims` signed with `key` as a compact RS256 JWT.
pub fn rs256(key: &RsaPrivateKey, claims: &Value) -> String {
    let header = URL_SAFE_NO_PAD.encode(json!({"alg": "RS256", "typ": "JWT"}).to_string());
    let body = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signing_input = format!("{header}.{body}");
    let signature = SigningKey::<Sha256>::new(key.clone()).sign(signing_input.as_bytes());
    format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature.to_bytes()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use rsa::pkcs1v15::{Signature, VerifyingKey};
    use rsa::signature::Verifier;

    const KEY: &str = include_str!("../../tests/fixtures/github-app-test-key.pem");

    #[test]
    fn a_token_verifies_with_the_public_key_and_carries_its_claims() {
        let key = private_key(KEY).unwrap();
        let token = rs256(&key, &json!({"iss": "123", "iat": 1}));
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header, json!({"alg": "RS256", "typ": "JWT"}));
        let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "123");
        let signature = Signature::try_from(URL_SAFE_NO_PAD.decode(parts[2]).unwrap().as_slice()).unwrap();
        let verifier = VerifyingKey::<Sha256>::new(key.to_public_key());
        verifier.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature).unwrap();
    }

    #[test]
    fn a_key_that_is_no_rsa_pem_is_refused_in_words() {
        let e = private_key("-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n").unwrap_err();
        assert!(e.contains("BEGIN RSA PRIVATE KEY"), "{e}");
    }
}

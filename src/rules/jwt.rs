//! RS256 JSON Web Tokens, as a GitHub App signs one to ask for an installation token (and a Google
//! service account its assertion): the header and claims base64url-encoded, signed with RSASSA-PKCS1-v1_5
//! over SHA-256 (RFC 7515, RFC 7518 §3.3).
//!
//! The Worker signs with the runtime's WebCrypto (`crypto.subtle`), as its keys never need more than
//! that; host builds (the tests) sign with the `rsa` crate. Bundling `rsa` and its ASN.1 and big-number
//! crates was about 30 KB of the Worker's gzipped wasm. Both take the key as PKCS #8 DER, which this file
//! makes from either PEM form.

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use serde_json::{json, Value};

const NOT_RSA_PEM: &str =
    "the private key is not an RSA key in PEM (`-----BEGIN RSA PRIVATE KEY-----` or `-----BEGIN PRIVATE KEY-----`)";

/// An RSA private key as PKCS #8 DER.
#[derive(Clone)]
pub struct PrivateKey {
    pkcs8: Vec<u8>,
}

/// A private key in PEM, as GitHub hands it out (PKCS #1, `BEGIN RSA PRIVATE KEY`) or Google does
/// (PKCS #8, `BEGIN PRIVATE KEY`), checked by signing with it once; an error that says which forms are taken.
pub async fn private_key(pem: &str) -> Result<PrivateKey, String> {
    let key = armoured(pem).ok_or_else(|| NOT_RSA_PEM.to_owned())?;
    engine::sign(&key.pkcs8, b"probe").await.map_err(|_| NOT_RSA_PEM.to_owned())?;
    Ok(key)
}

/// `claims` signed with `key` as a compact RS256 JWT.
pub async fn rs256(key: &PrivateKey, claims: &Value) -> Result<String, String> {
    let header = URL_SAFE_NO_PAD.encode(json!({"alg": "RS256", "typ": "JWT"}).to_string());
    let body = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signing_input = format!("{header}.{body}");
    let signature = engine::sign(&key.pkcs8, signing_input.as_bytes()).await.map_err(|_| NOT_RSA_PEM.to_owned())?;
    Ok(format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature)))
}

/// The DER inside a PEM's armour, PKCS #1 wrapped as PKCS #8 (RFC 5208: version 0, the `rsaEncryption`
/// algorithm, the PKCS #1 key as an octet string).
fn armoured(pem: &str) -> Option<PrivateKey> {
    let pem = pem.trim();
    let (pkcs1, inner) =
        [("RSA PRIVATE KEY", true), ("PRIVATE KEY", false)].into_iter().find_map(|(label, pkcs1)| {
            let body = pem
                .strip_prefix(&format!("-----BEGIN {label}-----"))?
                .strip_suffix(&format!("-----END {label}-----"))?;
            Some((pkcs1, body))
        })?;
    let der = STANDARD.decode(inner.split_whitespace().collect::<String>()).ok()?;
    if der.first() != Some(&0x30) {
        return None;
    }
    if !pkcs1 {
        return Some(PrivateKey { pkcs8: der });
    }
    const VERSION_AND_ALGORITHM: &[u8] =
        &[0x02, 0x01, 0x00, 0x30, 0x0d, 0x06, 0x09, 0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01, 0x05, 0x00];
    let octets = [&[0x04][..], &der_length(der.len()), &der].concat();
    let body = [VERSION_AND_ALGORITHM, &octets].concat();
    Some(PrivateKey { pkcs8: [&[0x30][..], &der_length(body.len()), &body].concat() })
}

/// A DER length: one byte below 128, else the count of big-endian bytes that follow, then those.
fn der_length(n: usize) -> Vec<u8> {
    if n < 0x80 {
        return vec![n as u8];
    }
    let bytes: Vec<u8> = n.to_be_bytes().into_iter().skip_while(|b| *b == 0).collect();
    [&[0x80 | bytes.len() as u8][..], &bytes].concat()
}

#[cfg(not(target_arch = "wasm32"))]
mod engine {
    use rsa::pkcs1v15::SigningKey;
    use rsa::pkcs8::DecodePrivateKey;
    use rsa::signature::{SignatureEncoding, Signer};
    use sha2::Sha256;

    pub async fn sign(pkcs8: &[u8], message: &[u8]) -> Result<Vec<u8>, String> {
        let key = rsa::RsaPrivateKey::from_pkcs8_der(pkcs8).map_err(|e| e.to_string())?;
        Ok(SigningKey::<Sha256>::new(key).sign(message).to_vec())
    }
}

/// `crypto.subtle.importKey("pkcs8", …, RSASSA-PKCS1-v1_5 SHA-256)`, then `sign`.
#[cfg(target_arch = "wasm32")]
mod engine {
    use crate::rules::webcrypto::{call, said, subtle};
    use js_sys::{Array, Object, Reflect, Uint8Array};
    use wasm_bindgen::JsValue;

    pub async fn sign(pkcs8: &[u8], message: &[u8]) -> Result<Vec<u8>, String> {
        let subtle = subtle()?;
        let algorithm = Object::new();
        Reflect::set(&algorithm, &"name".into(), &"RSASSA-PKCS1-v1_5".into()).map_err(said)?;
        Reflect::set(&algorithm, &"hash".into(), &"SHA-256".into()).map_err(said)?;
        let usages = Array::of1(&"sign".into());
        let import: [JsValue; 5] =
            ["pkcs8".into(), Uint8Array::from(pkcs8).into(), algorithm.clone().into(), JsValue::FALSE, usages.into()];
        let key = call(&subtle, "importKey", import.iter().collect()).await?;
        let signed = call(&subtle, "sign", Array::of3(&algorithm, &key, &Uint8Array::from(message))).await?;
        Ok(Uint8Array::new(&signed).to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;
    use rsa::pkcs1::DecodeRsaPrivateKey;
    use rsa::pkcs1v15::{Signature, VerifyingKey};
    use rsa::pkcs8::DecodePrivateKey;
    use rsa::signature::Verifier;
    use rsa::RsaPrivateKey;
    use sha2::Sha256;

    const GITHUB_KEY: &str = include_str!("../../tests/fixtures/github-app-test-key.pem");
    const GOOGLE_KEY: &str = include_str!("../../tests/fixtures/gcp-service-account-test-key.pem");

    #[test]
    fn a_token_verifies_with_the_public_key_and_carries_its_claims() {
        let key = block_on(private_key(GITHUB_KEY)).unwrap();
        let token = block_on(rs256(&key, &json!({"iss": "123", "iat": 1}))).unwrap();
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[0]).unwrap()).unwrap();
        assert_eq!(header, json!({"alg": "RS256", "typ": "JWT"}));
        let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "123");
        let signature = Signature::try_from(URL_SAFE_NO_PAD.decode(parts[2]).unwrap().as_slice()).unwrap();
        let public = RsaPrivateKey::from_pkcs1_pem(GITHUB_KEY.trim()).unwrap().to_public_key();
        let verifier = VerifyingKey::<Sha256>::new(public);
        verifier.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature).unwrap();
    }

    #[test]
    fn a_pkcs1_key_is_wrapped_as_the_same_pkcs8_key_and_a_pkcs8_one_is_kept() {
        let wrapped = armoured(GITHUB_KEY).unwrap();
        assert_eq!(
            RsaPrivateKey::from_pkcs8_der(&wrapped.pkcs8).unwrap(),
            RsaPrivateKey::from_pkcs1_pem(GITHUB_KEY.trim()).unwrap()
        );
        let kept = armoured(GOOGLE_KEY).unwrap();
        assert_eq!(
            RsaPrivateKey::from_pkcs8_der(&kept.pkcs8).unwrap(),
            RsaPrivateKey::from_pkcs8_pem(GOOGLE_KEY.trim()).unwrap()
        );
        assert_eq!(der_length(0x7f), [0x7f]);
        assert_eq!(der_length(0x80), [0x81, 0x80]);
        assert_eq!(der_length(0x04a3), [0x82, 0x04, 0xa3]);
    }

    #[test]
    fn a_key_that_is_no_rsa_pem_is_refused_in_words() {
        for bad in [
            "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----",
            "-----BEGIN RSA PRIVATE KEY-----\n!!!\n-----END RSA PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----\nMIIB\n-----END PRIVATE KEY-----",
        ] {
            let e = block_on(private_key(bad)).err().unwrap();
            assert!(e.contains("BEGIN RSA PRIVATE KEY"), "{e}");
        }
    }
}

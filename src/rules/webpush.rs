//! Web Push (issue 39): a message encrypted to one browser's subscription (RFC 8291, the `aes128gcm`
//! content coding of RFC 8188 in one record) and the application server's VAPID identification (RFC
//! 8292: an ES256 JWT for the push service's origin).
//!
//! The layout is written here once; only the primitives differ per platform. The Worker uses the
//! runtime's WebCrypto (`crypto.subtle`: ECDH P-256, ECDSA P-256 with SHA-256, AES-128-GCM), as
//! [`super::jwt`] does for RS256; host builds (the tests) use the `p256` and `aes-gcm` crates. HKDF is
//! HMAC-SHA-256 (RFC 5869), which both already have.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use serde_json::json;
use sha2::Sha256;

/// The record size this server writes: one record, as RFC 8291 §4 recommends (4096).
pub const RECORD_SIZE: u32 = 4096;

/// The most plaintext one record holds: the record size less the 16-byte tag and the padding delimiter
/// (RFC 8291 §4 asks push services to take 4096-byte bodies, so the header's 86 bytes count too).
pub const MAX_PLAINTEXT: usize = RECORD_SIZE as usize - 86 - 16 - 1;

/// A P-256 key pair: the private scalar and the uncompressed public point (65 bytes, `0x04 || x || y`).
#[derive(Clone)]
pub struct Keys {
    pub private: [u8; 32],
    pub public: [u8; 65],
}

impl Keys {
    /// A fresh key pair from the platform.
    pub async fn generate() -> Result<Keys, String> {
        engine::generate().await
    }

    /// The public key as browsers take it (`applicationServerKey`, VAPID's `k`): base64url, no padding.
    pub fn public_b64(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.public)
    }

    /// From the private scalar and the public point, both base64url.
    pub fn from_b64(private: &str, public: &str) -> Option<Keys> {
        let private = URL_SAFE_NO_PAD.decode(private).ok()?.try_into().ok()?;
        let public: [u8; 65] = URL_SAFE_NO_PAD.decode(public).ok()?.try_into().ok()?;
        (public[0] == 4).then_some(Keys { private, public })
    }

    pub fn private_b64(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.private)
    }
}

/// A browser's subscription keys, decoded and checked: `p256dh` an uncompressed P-256 point, `auth` 16
/// bytes (the W3C Push API's `PushSubscription.toJSON().keys`).
pub fn subscription_keys(p256dh: &str, auth: &str) -> Result<([u8; 65], [u8; 16]), String> {
    let point: [u8; 65] = URL_SAFE_NO_PAD
        .decode(p256dh.trim_end_matches('='))
        .ok()
        .and_then(|b| b.try_into().ok())
        .filter(|b: &[u8; 65]| b[0] == 4)
        .ok_or("`keys.p256dh` must be an uncompressed P-256 public key (65 bytes, base64url)")?;
    let secret: [u8; 16] = URL_SAFE_NO_PAD
        .decode(auth.trim_end_matches('='))
        .ok()
        .and_then(|b| b.try_into().ok())
        .ok_or("`keys.auth` must be 16 bytes, base64url")?;
    Ok((point, secret))
}

fn hmac(key: &[u8], parts: &[&[u8]]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    for p in parts {
        mac.update(p);
    }
    mac.finalize().into_bytes().into()
}

/// HKDF-SHA-256 (RFC 5869) for one block of output: `len` ≤ 32.
fn hkdf(salt: &[u8], ikm: &[u8], info: &[u8], len: usize) -> Vec<u8> {
    let prk = hmac(salt, &[ikm]);
    hmac(&prk, &[info, &[1]])[..len].to_vec()
}

/// `plaintext` encrypted to a subscription (RFC 8291 §3–4) with the given sender keys and salt: the
/// `aes128gcm` header (salt, record size, key id = the sender's public key) and one record.
pub async fn encrypt_with(
    plaintext: &[u8],
    ua_public: &[u8; 65],
    auth_secret: &[u8; 16],
    sender: &Keys,
    salt: &[u8; 16],
) -> Result<Vec<u8>, String> {
    if plaintext.len() > MAX_PLAINTEXT {
        return Err(format!("a push message holds at most {MAX_PLAINTEXT} bytes"));
    }
    let ecdh_secret = engine::ecdh(sender, ua_public).await?;
    let key_info = [&b"WebPush: info\0"[..], ua_public, &sender.public].concat();
    let ikm = hkdf(auth_secret, &ecdh_secret, &key_info, 32);
    let cek = hkdf(salt, &ikm, b"Content-Encoding: aes128gcm\0", 16);
    let nonce = hkdf(salt, &ikm, b"Content-Encoding: nonce\0", 12);
    // The last (only) record: its padding delimiter is 0x02 (RFC 8188 §2).
    let mut record = plaintext.to_vec();
    record.push(2);
    let sealed = engine::aes128gcm(&cek, &nonce, &record).await?;
    let mut out = Vec::with_capacity(86 + sealed.len());
    out.extend_from_slice(salt);
    out.extend_from_slice(&RECORD_SIZE.to_be_bytes());
    out.push(65);
    out.extend_from_slice(&sender.public);
    out.extend_from_slice(&sealed);
    Ok(out)
}

/// `plaintext` encrypted to a subscription with a fresh sender key pair and salt.
pub async fn encrypt(plaintext: &[u8], ua_public: &[u8; 65], auth_secret: &[u8; 16]) -> Result<Vec<u8>, String> {
    let sender = engine::generate().await?;
    let salt: [u8; 16] = super::ids::random_bytes();
    encrypt_with(plaintext, ua_public, auth_secret, &sender, &salt).await
}

/// The longest a VAPID token may live (RFC 8292 §2: no more than 24 hours).
pub const MAX_VAPID_S: i64 = 24 * 3600;

/// The push service's origin, a VAPID token's `aud`: scheme, host and port of the endpoint.
pub fn audience(endpoint: &str) -> Option<String> {
    let url = url::Url::parse(endpoint).ok()?;
    let origin = url.origin();
    origin.is_tuple().then(|| origin.ascii_serialization())
}

/// The `Authorization` header for a push to `endpoint` (RFC 8292 §3): `vapid t=<ES256 JWT>, k=<public
/// key>`, the token for the endpoint's origin, with `sub` (a `mailto:` or `https:` URL) and `exp`.
pub async fn vapid_authorization(endpoint: &str, subject: &str, exp_s: i64, keys: &Keys) -> Result<String, String> {
    let aud = audience(endpoint).ok_or("the endpoint is no URL with an origin")?;
    let header = URL_SAFE_NO_PAD.encode(json!({"typ": "JWT", "alg": "ES256"}).to_string());
    let claims = URL_SAFE_NO_PAD.encode(json!({"aud": aud, "exp": exp_s, "sub": subject}).to_string());
    let signing_input = format!("{header}.{claims}");
    let signature = engine::sign(keys, signing_input.as_bytes()).await?;
    Ok(format!("vapid t={signing_input}.{}, k={}", URL_SAFE_NO_PAD.encode(signature), keys.public_b64()))
}

#[cfg(not(target_arch = "wasm32"))]
mod engine {
    use super::Keys;
    use aes_gcm::aead::{Aead, KeyInit};
    use aes_gcm::{Aes128Gcm, Nonce};
    use p256::ecdsa::signature::Signer;
    use p256::elliptic_curve::sec1::ToEncodedPoint;

    pub async fn generate() -> Result<Keys, String> {
        loop {
            let private: [u8; 32] = crate::rules::ids::random_bytes();
            if let Ok(secret) = p256::SecretKey::from_slice(&private) {
                let point = secret.public_key().to_encoded_point(false);
                let public: [u8; 65] = point.as_bytes().try_into().map_err(|_| "not an uncompressed point")?;
                return Ok(Keys { private, public });
            }
        }
    }

    pub async fn ecdh(own: &Keys, peer: &[u8; 65]) -> Result<[u8; 32], String> {
        let secret = p256::SecretKey::from_slice(&own.private).map_err(|e| e.to_string())?;
        let peer = p256::PublicKey::from_sec1_bytes(peer).map_err(|_| "not a P-256 public key".to_owned())?;
        let shared = p256::ecdh::diffie_hellman(secret.to_nonzero_scalar(), peer.as_affine());
        Ok((*shared.raw_secret_bytes()).into())
    }

    pub async fn sign(keys: &Keys, message: &[u8]) -> Result<[u8; 64], String> {
        let key = p256::ecdsa::SigningKey::from_slice(&keys.private).map_err(|e| e.to_string())?;
        let signature: p256::ecdsa::Signature = key.sign(message);
        Ok(signature.to_bytes().into())
    }

    pub async fn aes128gcm(key: &[u8], nonce: &[u8], plain: &[u8]) -> Result<Vec<u8>, String> {
        let cipher = Aes128Gcm::new_from_slice(key).map_err(|e| e.to_string())?;
        cipher.encrypt(Nonce::from_slice(nonce), plain).map_err(|e| e.to_string())
    }
}

/// `crypto.subtle`: `generateKey`/`exportKey("jwk")`, `importKey("jwk")` then `deriveBits` (ECDH) or
/// `sign` (ECDSA, whose signature is already the raw `r || s` JWS wants), `importKey("raw")` then
/// `encrypt` (AES-GCM, the tag appended).
#[cfg(target_arch = "wasm32")]
mod engine {
    use super::Keys;
    use crate::rules::webcrypto::{call, said, subtle};
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;
    use js_sys::{Array, Object, Reflect, Uint8Array};
    use wasm_bindgen::JsValue;

    fn object(fields: &[(&str, JsValue)]) -> Result<Object, String> {
        let o = Object::new();
        for (k, v) in fields {
            Reflect::set(&o, &(*k).into(), v).map_err(said)?;
        }
        Ok(o)
    }

    fn curve(name: &str) -> Result<Object, String> {
        object(&[("name", name.into()), ("namedCurve", "P-256".into())])
    }

    async fn import_private(keys: &Keys, algorithm: &str, usage: &str) -> Result<JsValue, String> {
        let b = |bytes: &[u8]| JsValue::from(URL_SAFE_NO_PAD.encode(bytes));
        let jwk = object(&[
            ("kty", "EC".into()),
            ("crv", "P-256".into()),
            ("x", b(&keys.public[1..33])),
            ("y", b(&keys.public[33..65])),
            ("d", b(&keys.private)),
        ])?;
        let args: [JsValue; 5] =
            ["jwk".into(), jwk.into(), curve(algorithm)?.into(), JsValue::FALSE, Array::of1(&usage.into()).into()];
        call(&subtle()?, "importKey", args.iter().collect()).await
    }

    fn bytes_of(v: &JsValue) -> Vec<u8> {
        Uint8Array::new(v).to_vec()
    }

    pub async fn generate() -> Result<Keys, String> {
        let usages = Array::of2(&"sign".into(), &"verify".into());
        let algorithm: JsValue = curve("ECDSA")?.into();
        let pair = call(&subtle()?, "generateKey", Array::of3(&algorithm, &JsValue::TRUE, &usages)).await?;
        let private = Reflect::get(&pair, &"privateKey".into()).map_err(said)?;
        let jwk = call(&subtle()?, "exportKey", Array::of2(&"jwk".into(), &private)).await?;
        let field = |name: &str| -> Result<Vec<u8>, String> {
            let s = Reflect::get(&jwk, &name.into()).map_err(said)?.as_string().unwrap_or_default();
            URL_SAFE_NO_PAD.decode(s).map_err(|e| e.to_string())
        };
        let private: [u8; 32] = field("d")?.try_into().map_err(|_| "a P-256 private key is 32 bytes")?;
        let public: [u8; 65] =
            [vec![4u8], field("x")?, field("y")?].concat().try_into().map_err(|_| "a P-256 point is 65 bytes")?;
        Ok(Keys { private, public })
    }

    pub async fn ecdh(own: &Keys, peer: &[u8; 65]) -> Result<[u8; 32], String> {
        let private = import_private(own, "ECDH", "deriveBits").await?;
        let import: [JsValue; 5] = [
            "raw".into(),
            Uint8Array::from(&peer[..]).into(),
            curve("ECDH")?.into(),
            JsValue::TRUE,
            Array::new().into(),
        ];
        let public = call(&subtle()?, "importKey", import.iter().collect()).await?;
        let algorithm = object(&[("name", "ECDH".into()), ("public", public)])?;
        let bits = call(&subtle()?, "deriveBits", Array::of3(&algorithm, &private, &JsValue::from(256))).await?;
        bytes_of(&bits).try_into().map_err(|_| "ECDH gave no 32 bytes".to_owned())
    }

    pub async fn sign(keys: &Keys, message: &[u8]) -> Result<[u8; 64], String> {
        let key = import_private(keys, "ECDSA", "sign").await?;
        let algorithm = object(&[("name", "ECDSA".into()), ("hash", "SHA-256".into())])?;
        let signed = call(&subtle()?, "sign", Array::of3(&algorithm, &key, &Uint8Array::from(message))).await?;
        bytes_of(&signed).try_into().map_err(|_| "ECDSA gave no 64-byte signature".to_owned())
    }

    pub async fn aes128gcm(key: &[u8], nonce: &[u8], plain: &[u8]) -> Result<Vec<u8>, String> {
        let algorithm = object(&[("name", "AES-GCM".into())])?;
        let import: [JsValue; 5] = [
            "raw".into(),
            Uint8Array::from(key).into(),
            algorithm.into(),
            JsValue::FALSE,
            Array::of1(&"encrypt".into()).into(),
        ];
        let key = call(&subtle()?, "importKey", import.iter().collect()).await?;
        let params = object(&[("name", "AES-GCM".into()), ("iv", Uint8Array::from(nonce).into())])?;
        let sealed = call(&subtle()?, "encrypt", Array::of3(&params, &key, &Uint8Array::from(plain))).await?;
        Ok(bytes_of(&sealed))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::executor::block_on;
    use p256::ecdsa::signature::Verifier;

    fn b64(s: &str) -> Vec<u8> {
        URL_SAFE_NO_PAD.decode(s).unwrap()
    }

    /// RFC 8291 §5 and Appendix A: the example's keys and salt give its message byte for byte.
    #[test]
    fn the_rfc_8291_example_is_reproduced_byte_for_byte() {
        let sender = Keys::from_b64(
            "yfWPiYE-n46HLnH0KqZOF1fJJU3MYrct3AELtAQ-oRw",
            "BP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27mlmlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A8",
        )
        .unwrap();
        let (ua_public, auth) = subscription_keys(
            "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
            "BTBZMqHH6r4Tts7J_aSIgg",
        )
        .unwrap();
        let salt: [u8; 16] = b64("DGv6ra1nlYgDCS1FRnbzlw").try_into().unwrap();
        let plaintext = b64("V2hlbiBJIGdyb3cgdXAsIEkgd2FudCB0byBiZSBhIHdhdGVybWVsb24");
        assert_eq!(plaintext, b"When I grow up, I want to be a watermelon");
        let body = block_on(encrypt_with(&plaintext, &ua_public, &auth, &sender, &salt)).unwrap();
        assert_eq!(
            URL_SAFE_NO_PAD.encode(body),
            "DGv6ra1nlYgDCS1FRnbzlwAAEABBBP4z9KsN6nGRTbVYI_c7VJSPQTBtkgcy27ml\
             mlMoZIIgDll6e3vCYLocInmYWAmS6TlzAC8wEqKK6PBru3jl7A_yl95bQpu6cVPT\
             pK4Mqgkf1CXztLVBSt2Ks3oZwbuwXPXLWyouBWLVWGNWQexSgSxsj_Qulcy4a-fN"
        );
        // Appendix A's intermediate values, for a failure that says where.
        let ecdh = block_on(engine::ecdh(&sender, &ua_public)).unwrap();
        assert_eq!(ecdh.to_vec(), b64("kyrL1jIIOHEzg3sM2ZWRHDRB62YACZhhSlknJ672kSs"));
        let key_info = [&b"WebPush: info\0"[..], &ua_public, &sender.public].concat();
        let ikm = hkdf(&auth, &ecdh, &key_info, 32);
        assert_eq!(ikm, b64("S4lYMb_L0FxCeq0WhDx813KgSYqU26kOyzWUdsXYyrg"));
        assert_eq!(hkdf(&salt, &ikm, b"Content-Encoding: aes128gcm\0", 16), b64("oIhVW04MRdy2XN9CiKLxTg"));
    }

    #[test]
    fn a_fresh_message_has_a_new_key_and_salt_and_refuses_what_one_record_cannot_hold() {
        let ua = block_on(Keys::generate()).unwrap();
        let auth = [7u8; 16];
        let a = block_on(encrypt(b"hi", &ua.public, &auth)).unwrap();
        let b = block_on(encrypt(b"hi", &ua.public, &auth)).unwrap();
        assert_ne!(a[..86], b[..86]);
        assert_eq!(&a[16..21], &[0, 0, 16, 0, 65]);
        assert_eq!(a.len(), 86 + 2 + 1 + 16);
        assert!(block_on(encrypt(&vec![b'x'; MAX_PLAINTEXT], &ua.public, &auth)).is_ok());
        assert!(block_on(encrypt(&vec![b'x'; MAX_PLAINTEXT + 1], &ua.public, &auth)).is_err());
    }

    #[test]
    fn the_vapid_header_carries_an_es256_token_for_the_push_services_origin() {
        let keys = block_on(Keys::generate()).unwrap();
        let header = block_on(vapid_authorization(
            "https://push.example.net:8443/wpush/v2/abc?x=1",
            "mailto:ops@example.com",
            1_700_000_000,
            &keys,
        ))
        .unwrap();
        let rest = header.strip_prefix("vapid t=").unwrap();
        let (token, k) = rest.split_once(", k=").unwrap();
        assert_eq!(k, keys.public_b64());
        let parts: Vec<&str> = token.split('.').collect();
        let head: serde_json::Value = serde_json::from_slice(&b64(parts[0])).unwrap();
        assert_eq!(head, json!({"typ": "JWT", "alg": "ES256"}));
        let claims: serde_json::Value = serde_json::from_slice(&b64(parts[1])).unwrap();
        assert_eq!(
            claims,
            json!({"aud": "https://push.example.net:8443", "exp": 1_700_000_000, "sub": "mailto:ops@example.com"})
        );
        let verifier = p256::ecdsa::VerifyingKey::from_sec1_bytes(&keys.public).unwrap();
        let signature = p256::ecdsa::Signature::from_slice(&b64(parts[2])).unwrap();
        verifier.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature).unwrap();
        assert_eq!(audience("http://127.0.0.1:9000/p/1").as_deref(), Some("http://127.0.0.1:9000"));
        assert_eq!(audience("not a url"), None);
    }

    #[test]
    fn subscription_keys_are_checked() {
        assert!(subscription_keys("AAAA", "BTBZMqHH6r4Tts7J_aSIgg").is_err());
        assert!(subscription_keys(
            "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4",
            "short"
        )
        .is_err());
    }
}

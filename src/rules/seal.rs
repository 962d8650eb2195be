//! Secrets at rest: AES-256-GCM with a random 96-bit nonce, the key derived from the deployment's
//! `SECRETS_KEY` by SHA-256, and the workspace and name bound in as associated data, so a sealed value
//! copied to another row does not open.

use aes_gcm::aead::{Aead, KeyInit, Payload};
use aes_gcm::{Aes256Gcm, Nonce};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use sha2::{Digest, Sha256};

fn cipher(master: &str) -> Aes256Gcm {
    let key = Sha256::digest(master.as_bytes());
    Aes256Gcm::new_from_slice(&key).expect("a SHA-256 digest is a 256-bit key")
}

/// The associated data a workspace secret is sealed with: its row.
pub fn secret_aad(workspace_id: &str, name: &str) -> String {
    format!("{workspace_id}/{name}")
}

/// The associated data both of a webhook endpoint's signing secrets are sealed with: its row.
pub fn webhook_aad(workspace_id: &str, webhook_id: &str) -> String {
    format!("{workspace_id}/webhook/{webhook_id}")
}

/// The associated data a connector's credentials are sealed with: its row.
pub fn slack_aad(workspace_id: &str) -> String {
    format!("{workspace_id}/slack")
}

pub fn connector_aad(workspace_id: &str, connector_id: &str) -> String {
    format!("{workspace_id}/connector/{connector_id}")
}

/// The associated data a credential minted for a grant is sealed with: its row.
pub fn grant_credential_aad(workspace_id: &str, grant_id: &str) -> String {
    format!("{workspace_id}/grant_credential/{grant_id}")
}

/// The associated data a workspace's trace-export header is sealed with: its row.
pub fn trace_export_aad(workspace_id: &str) -> String {
    format!("{workspace_id}/trace_export")
}

/// Seals `plain` for the row (`aad` names it).
pub fn seal(master: &str, aad: &str, plain: &str) -> String {
    let nonce: [u8; 12] = crate::rules::ids::random_bytes();
    let sealed = cipher(master)
        .encrypt(Nonce::from_slice(&nonce), Payload { msg: plain.as_bytes(), aad: aad.as_bytes() })
        .expect("AES-GCM encryption of an in-memory buffer cannot fail");
    let mut out = nonce.to_vec();
    out.extend(sealed);
    STANDARD.encode(out)
}

/// Opens a sealed value; `None` when the key, the row or the bytes are wrong.
pub fn open(master: &str, aad: &str, sealed: &str) -> Option<String> {
    let bytes = STANDARD.decode(sealed).ok()?;
    if bytes.len() < 12 + 16 {
        return None;
    }
    let (nonce, body) = bytes.split_at(12);
    let plain = cipher(master).decrypt(Nonce::from_slice(nonce), Payload { msg: body, aad: aad.as_bytes() }).ok()?;
    String::from_utf8(plain).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sealed_values_open_only_with_their_key_and_row() {
        let s = seal("k1", "ws_a/OPENAI_API_KEY", "sk-secret");
        assert!(!s.contains("sk-secret"));
        assert_eq!(open("k1", "ws_a/OPENAI_API_KEY", &s).as_deref(), Some("sk-secret"));
        assert_eq!(open("k2", "ws_a/OPENAI_API_KEY", &s), None);
        assert_eq!(open("k1", "ws_b/OPENAI_API_KEY", &s), None);
        assert_ne!(seal("k1", "a", "x"), seal("k1", "a", "x"), "a fresh nonce each time");
        assert_eq!(open("k1", "a", "garbage"), None);
    }
}

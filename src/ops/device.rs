//! Device sign-in for the `sky` CLI, in the manner of RFC 8628 (OAuth 2.0 Device Authorization Grant):
//! `sky auth login` asks for a code (`POST /v1/device/code`), shows the person a short code and a link,
//! and polls `POST /v1/device/token`. The person opens `/device`, proves an account (its email and one of
//! its write keys, or by creating the account when sign-up is open) and approves or denies. The next
//! poll mints a new API key named for the device, once. These are the two operations and the codes; the
//! page is [`crate::console::device`].
//!
//! Must never: keep either code or the minted key in clear (only SHA-256 digests are stored, and the key
//! exists only in the poll's response).

use crate::cx::Cx;
use crate::error::{ApiError, Code};
use crate::rules::params::Text;
use crate::rules::{ids, limits};
use crate::store;
use crate::store::devices::{self, DeviceStatus};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How long a code may wait for a person (RFC 8628 suggests minutes, not hours).
const EXPIRES_MS: i64 = 15 * 60_000;
/// How often the CLI may poll.
const INTERVAL_MS: i64 = 5_000;
/// A poll this much early is still on time: network jitter is not impatience.
const POLL_SLACK_MS: i64 = 1_000;
/// Codes issued per caller address per minute.
const CODES_PER_MIN: u32 = 10;
/// Polls per caller address per minute (one CLI polls 12 times a minute).
const POLLS_PER_MIN: u32 = 120;

/// RFC 8628 §6.1: consonants only, so no code spells a word and none is mistaken for a digit.
const USER_CODE_ALPHABET: &[u8; 20] = b"BCDFGHJKLMNPQRSTVWXZ";
const USER_CODE_LEN: usize = 8;

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RequestDeviceCode {
    /// What the new key will be called, 1–100 characters; `sky` sends `sky on <host name>`.
    pub device_name: Text<1, 100>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DeviceCode {
    /// The secret to poll `POST /v1/device/token` with. Never shown to the person.
    pub device_code: String,
    /// The short code the person checks on the approval page, e.g. `BCDF-GHJK`.
    pub user_code: String,
    /// The approval page.
    pub verification_uri: String,
    /// The approval page with the code filled in: the link to show.
    pub verification_uri_complete: String,
    /// Seconds until the code expires.
    pub expires_in: i64,
    /// Seconds to wait between polls.
    pub interval: i64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PollDeviceToken {
    /// The `device_code` from `POST /v1/device/code`.
    pub device_code: String,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct DeviceToken {
    /// The new API key, `ast_…`, named for the device. Returned once; only its SHA-256 is kept.
    pub key: String,
    pub key_id: String,
    pub prefix: String,
    pub scopes: Vec<String>,
    /// The slug of the workspace calls use by default: the key's lock, else the personal workspace.
    pub workspace: String,
    /// The account's email.
    pub email: String,
}

/// A fresh short code, e.g. `BCDFGHJK` (shown as `BCDF-GHJK`), drawn without modulo bias.
fn new_user_code() -> String {
    let mut out = String::with_capacity(USER_CODE_LEN);
    while out.len() < USER_CODE_LEN {
        for b in ids::random_bytes::<16>() {
            // 240 is the largest multiple of 20 below 256.
            if b < 240 && out.len() < USER_CODE_LEN {
                out.push(USER_CODE_ALPHABET[(b % 20) as usize] as char);
            }
        }
    }
    out
}

/// `BCDF-GHJK`, `bcdfghjk`, ` bcdf ghjk ` → `BCDFGHJK`; `None` when it cannot be one of ours.
pub fn normalize_user_code(typed: &str) -> Option<String> {
    let code: String =
        typed.chars().filter(|c| !matches!(c, '-' | ' ' | '\t')).map(|c| c.to_ascii_uppercase()).collect();
    (code.len() == USER_CODE_LEN && code.bytes().all(|b| USER_CODE_ALPHABET.contains(&b))).then_some(code)
}

/// `BCDFGHJK` → `BCDF-GHJK`, as the person sees it.
pub fn display_user_code(code: &str) -> String {
    format!("{}-{}", &code[..4], &code[4..])
}

/// What is stored of a short code. Salted by purpose so it never equals another digest in the database.
pub fn user_code_hash(code: &str) -> String {
    ids::hash_secret(&format!("device-user-code:{code}"))
}

/// POST /v1/device/code
pub async fn request_code(cx: &Cx<'_>, p: RequestDeviceCode) -> Result<DeviceCode, ApiError> {
    crate::ops::rate_limit(cx, format!("device-code:{}", cx.client_ip), CODES_PER_MIN).await?;
    let page = format!("{}/device", cx.link_base()?);
    let device_code = ids::new_secret("skydc_");
    for _ in 0..5 {
        let user_code = new_user_code();
        let row = devices::NewDeviceCode {
            device_code_id: &ids::new_id("dev"),
            device_hash: &ids::hash_secret(&device_code),
            user_code_hash: &user_code_hash(&user_code),
            device_name: p.device_name.trim(),
            interval_ms: INTERVAL_MS,
            now_ms: cx.now_ms,
            expires_ms: cx.now_ms + EXPIRES_MS,
        };
        match devices::create(cx.db(), &row, cx.now_ms - 86_400_000).await {
            Ok(()) => {
                let shown = display_user_code(&user_code);
                return Ok(DeviceCode {
                    device_code,
                    verification_uri_complete: format!("{page}?code={shown}"),
                    verification_uri: page.clone(),
                    user_code: shown,
                    expires_in: EXPIRES_MS / 1000,
                    interval: INTERVAL_MS / 1000,
                });
            }
            Err(e) if e.is_unique_on("device_code.user_code_hash") => continue,
            Err(e) => return Err(ApiError::cause(e)),
        }
    }
    Err(ApiError::cause("could not draw a free user code"))
}

/// POST /v1/device/token
pub async fn poll(cx: &Cx<'_>, p: PollDeviceToken) -> Result<DeviceToken, ApiError> {
    crate::ops::rate_limit(cx, format!("device-token:{}", cx.client_ip), POLLS_PER_MIN).await?;
    let expired = || ApiError::new(Code::ExpiredToken, "this sign-in code expired or was already used; sign in again");
    if !p.device_code.starts_with("skydc_") || p.device_code.len() > 100 {
        return Err(expired());
    }
    let device_hash = ids::hash_secret(&p.device_code);
    let Some(code) = devices::poll(cx.db(), &device_hash, cx.now_ms).await? else {
        return Err(expired());
    };
    match code.status {
        // An approval just before expiry is still collected by the next poll.
        DeviceStatus::Approved if code.expires_ms + 2 * code.interval_ms <= cx.now_ms => return Err(expired()),
        DeviceStatus::Approved => {}
        DeviceStatus::Denied => return Err(ApiError::new(Code::AccessDenied, "the sign-in was denied in the browser")),
        DeviceStatus::Pending if code.expires_ms <= cx.now_ms => return Err(expired()),
        DeviceStatus::Pending
            if code.prev_poll_ms.is_some_and(|prev| cx.now_ms - prev < code.interval_ms - POLL_SLACK_MS) =>
        {
            return Err(ApiError::new(
                Code::SlowDown,
                format!("polling too fast: wait {} s between polls", code.interval_ms / 1000 + 5),
            ))
        }
        DeviceStatus::Pending => {
            return Err(ApiError::new(
                Code::AuthorizationPending,
                format!("waiting for the code to be approved at {}/device", cx.base_url),
            ))
        }
        // Its key was minted already: the code is used.
        DeviceStatus::Delivered => return Err(expired()),
    }
    for _ in 0..3 {
        let key = ids::new_secret("ast_");
        let minted = devices::NewDeviceKey {
            key_id: &ids::new_id("key"),
            key_hash: &ids::hash_secret(&key),
            prefix: &ids::key_prefix(&key),
            now_ms: cx.now_ms,
        };
        match devices::deliver(cx.db(), &device_hash, &minted, limits::MAX_ACTIVE_KEYS).await {
            Ok(devices::Delivery::Delivered(d)) => {
                return Ok(DeviceToken {
                    key_id: minted.key_id.to_owned(),
                    prefix: minted.prefix.to_owned(),
                    key,
                    scopes: d.scopes.split(' ').map(str::to_owned).collect(),
                    workspace: d.workspace,
                    email: d.email,
                })
            }
            // A racing poll collected it first.
            Ok(devices::Delivery::Gone) => return Err(expired()),
            // The approval stands: once a key is revoked, the next poll collects this one.
            Ok(devices::Delivery::TooManyKeys) => return Err(limits::too_many_keys()),
            Err(e) if store::keys::is_hash_collision(&e) => continue,
            Err(e) => return Err(ApiError::cause(e)),
        }
    }
    Err(ApiError::cause("could not mint a unique key"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_codes_use_the_consonant_alphabet_and_read_back_however_typed() {
        for _ in 0..50 {
            let code = new_user_code();
            assert_eq!(code.len(), 8);
            assert_eq!(normalize_user_code(&code).as_deref(), Some(code.as_str()));
            let shown = display_user_code(&code);
            assert_eq!(normalize_user_code(&shown.to_lowercase()).as_deref(), Some(code.as_str()));
        }
        assert_eq!(normalize_user_code(" bcdf-ghjk ").as_deref(), Some("BCDFGHJK"));
        for bad in ["", "BCDF", "BCDF-GHJKL", "ABCD-EFGH", "BCDF-GHJ1", "BCDF-GHJ<"] {
            assert_eq!(normalize_user_code(bad), None, "{bad}");
        }
    }
}

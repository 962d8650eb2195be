//! Cursors are opaque strings to clients. Inside they are a position: the sequence number of the last
//! event read (`read_session`), or a keyset of time and id (lists).

use crate::error::ApiError;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

/// The cursor after event `seq`.
pub fn event(seq: i64) -> String {
    format!("ev_{}", URL_SAFE_NO_PAD.encode(seq.to_be_bytes()))
}

/// Reads an event cursor; absent means "from the start".
pub fn parse_event(cursor: Option<&str>) -> Result<i64, ApiError> {
    let Some(c) = cursor.filter(|c| !c.is_empty()) else { return Ok(0) };
    c.strip_prefix("ev_")
        .and_then(|b| URL_SAFE_NO_PAD.decode(b).ok())
        .and_then(|bytes| <[u8; 8]>::try_from(bytes).ok())
        .map(i64::from_be_bytes)
        .filter(|n| *n >= 0)
        .ok_or_else(|| {
            ApiError::invalid(
                "`cursor` is not a cursor this server gave out; pass the `cursor` of the last read unchanged",
            )
        })
}

/// A list position: the last item's time and id.
pub fn keyset(at_ms: i64, id: &str) -> String {
    format!("ks_{}", URL_SAFE_NO_PAD.encode(format!("{at_ms}:{id}")))
}

pub fn parse_keyset(cursor: Option<&str>) -> Result<Option<(i64, String)>, ApiError> {
    let Some(c) = cursor.filter(|c| !c.is_empty()) else { return Ok(None) };
    let bad = || ApiError::invalid("`cursor` is not a cursor this server gave out; pass `next_cursor` unchanged");
    let text = c
        .strip_prefix("ks_")
        .and_then(|b| URL_SAFE_NO_PAD.decode(b).ok())
        .and_then(|b| String::from_utf8(b).ok())
        .ok_or_else(bad)?;
    let (at, id) = text.split_once(':').ok_or_else(bad)?;
    Ok(Some((at.parse().map_err(|_| bad())?, id.to_owned())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_round_trip_and_garbage_is_refused() {
        assert_eq!(parse_event(Some(&event(12_345))).unwrap(), 12_345);
        assert_eq!(parse_event(None).unwrap(), 0);
        assert!(parse_event(Some("ev_!!")).is_err());
        assert!(parse_event(Some("42")).is_err());
        assert_eq!(parse_keyset(Some(&keyset(7, "ses_x"))).unwrap(), Some((7, "ses_x".to_owned())));
        assert!(parse_keyset(Some("ks_bm9jb2xvbg")).is_err());
    }
}

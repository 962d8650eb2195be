//! AWS Signature Version 4 (`AWS4-HMAC-SHA256`), as AWS documents it for its query APIs: the canonical
//! request (method, path, query, the signed headers sorted by name, the body's SHA-256), the string to
//! sign for the day's credential scope, and a signing key derived from the secret through the date, the
//! region, the service and `aws4_request`. Pure.

use crate::rules::hmac::hmac_sha256;
use sha2::{Digest, Sha256};

/// One request to sign: `headers` are lowercase names with their values, and must include `host` and
/// `x-amz-date` (`YYYYMMDDTHHMMSSZ`); `query` is already canonical (sorted, encoded).
pub struct Signed<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub query: &'a str,
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
}

/// The `authorization` header for `req`, signed with the key pair for `region` and `service`.
pub fn authorization(access_key_id: &str, secret: &str, region: &str, service: &str, req: &Signed<'_>) -> String {
    let mut headers: Vec<(String, String)> =
        req.headers.iter().map(|(k, v)| (k.to_ascii_lowercase(), v.trim().to_owned())).collect();
    headers.sort();
    let amz_date = headers.iter().find(|(k, _)| k == "x-amz-date").map(|(_, v)| v.clone()).unwrap_or_default();
    let day = &amz_date[..amz_date.len().min(8)];
    let signed_headers = headers.iter().map(|(k, _)| k.as_str()).collect::<Vec<_>>().join(";");
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{v}\n")).collect();
    let canonical = format!(
        "{}\n{}\n{}\n{canonical_headers}\n{signed_headers}\n{}",
        req.method,
        req.path,
        req.query,
        hex::encode(Sha256::digest(req.body))
    );
    let scope = format!("{day}/{region}/{service}/aws4_request");
    let to_sign = format!("AWS4-HMAC-SHA256\n{amz_date}\n{scope}\n{}", hex::encode(Sha256::digest(canonical)));
    let mut key = hmac_sha256(format!("AWS4{secret}").as_bytes(), day.as_bytes());
    for part in [region, service, "aws4_request"] {
        key = hmac_sha256(&key, part.as_bytes());
    }
    let signature = hex::encode(hmac_sha256(&key, to_sign.as_bytes()));
    format!(
        "AWS4-HMAC-SHA256 Credential={access_key_id}/{scope}, SignedHeaders={signed_headers}, Signature={signature}"
    )
}

/// `x-amz-date` for a moment: `YYYYMMDDTHHMMSSZ`.
pub fn amz_date(ms: i64) -> String {
    crate::rules::time::iso(ms).replace(['-', ':'], "")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// AWS's own worked example of signing IAM's `ListUsers` (General Reference, "Signature Version 4").
    #[test]
    fn the_documented_list_users_example_signs_the_same() {
        let headers = [
            ("Content-Type".to_owned(), "application/x-www-form-urlencoded; charset=utf-8".to_owned()),
            ("Host".to_owned(), "iam.amazonaws.com".to_owned()),
            ("X-Amz-Date".to_owned(), "20150830T123600Z".to_owned()),
        ];
        let req = Signed {
            method: "GET",
            path: "/",
            query: "Action=ListUsers&Version=2010-05-08",
            headers: &headers,
            body: b"",
        };
        let auth = authorization("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "us-east-1", "iam", &req);
        assert_eq!(
            auth,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/iam/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date, \
             Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"
        );
    }

    #[test]
    fn an_amz_date_is_the_iso_moment_without_separators() {
        assert_eq!(amz_date(1_440_938_160_000), "20150830T123600Z");
    }
}

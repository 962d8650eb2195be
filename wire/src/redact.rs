//! The one redaction rule: what of a text may be kept where people and indexes read it (the audit log,
//! session events, the platform log, summaries of what a tenant's server answered). It replaces what
//! looks like a credential with [`MARK`] and keeps the rest, so a command line stays readable with its
//! secrets gone.
//!
//! Caught: secret flags (`--token x`, `--password=x`, `-t <random>`), `curl -u user:pass`, the value of
//! `Authorization:` and of `Bearer`/`Basic`, `key=value` and `key: value` for secret-ish keys, a URL's
//! password (`https://user:pass@host`), private key blocks, known token prefixes (`ghp_`, `sk-`, `xoxb-`,
//! `AKIA`, our own `ast_`/`sst_`/`srt_`, …), JWTs, and long random-looking hex or base64 runs.
//! Hex runs of exactly 40 or 64 characters are kept: they are the SHA-1 and SHA-256 digests git and
//! content stores print everywhere, and a credential of that shape is caught by its context instead.
//!
//! Here in the crate the server and the `sky` CLI share, so the server and the runner redact alike,
//! tested from one table.

/// What a secret is replaced with.
pub const MARK: &str = "[redacted]";

/// `text` with everything that looks like a credential replaced by [`MARK`].
pub fn redact(text: &str) -> String {
    let text = private_keys(text);
    let text = authorization(&text);
    let text = flags(&text);
    let text = key_values(&text);
    let text = url_passwords(&text);
    tokens(&text)
}

/// `text` with every occurrence of each `known` value (credentials the caller holds, such as the ones a
/// tool result carried) replaced by [`MARK`], the longest first so no part of one is left. Values
/// shorter than 4 characters are left alone: they would erase ordinary words.
pub fn mask(text: &str, known: &[String]) -> String {
    let mut known: Vec<&String> = known.iter().filter(|k| k.chars().count() >= 4).collect();
    known.sort_by_key(|k| std::cmp::Reverse(k.len()));
    let mut out = text.to_owned();
    for k in known {
        if out.contains(k.as_str()) {
            out = out.replace(k.as_str(), MARK);
        }
    }
    out
}

/// Whether `text` holds anything [`redact`] would replace.
pub fn has_secret(text: &str) -> bool {
    redact(text) != text
}

/// Token prefixes of well-known credentials, and how many characters must follow each.
const PREFIXES: &[(&str, usize)] = &[
    ("ghp_", 16),
    ("gho_", 16),
    ("ghu_", 16),
    ("ghs_", 16),
    ("ghr_", 16),
    ("github_pat_", 16),
    ("glpat-", 16),
    ("sk-", 16),
    ("sk_live_", 8),
    ("sk_test_", 8),
    ("rk_live_", 8),
    ("rk_test_", 8),
    ("whsec_", 16),
    ("xoxb-", 8),
    ("xoxp-", 8),
    ("xoxa-", 8),
    ("xoxr-", 8),
    ("xoxs-", 8),
    ("xapp-", 8),
    ("AKIA", 16),
    ("ASIA", 16),
    ("AIza", 30),
    ("npm_", 30),
    ("hf_", 30),
    ("ast_", 16),
    ("sst_", 16),
    ("srt_", 16),
];

/// Long flags whose next word (or `=value`) is a secret.
const SECRET_FLAGS: &[&str] = &[
    "--token",
    "--password",
    "--passwd",
    "--pass",
    "--secret",
    "--api-key",
    "--apikey",
    "--access-token",
    "--auth-token",
    "--client-secret",
    "--private-key",
];

/// Key names (lower case) whose value is a secret when they end a key: `GITHUB_TOKEN`, `db_password`,
/// `x-api-key`. Keys that merely contain `secret` or `password` count too.
const SECRET_KEY_ENDS: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "apikey",
    "api_key",
    "api-key",
    "accesskey",
    "access_key",
    "access-key",
    "secretkey",
    "secret_key",
    "privatekey",
    "private_key",
    "credential",
    "credentials",
];

fn is_secret_key(key: &str) -> bool {
    let k = key.trim_start_matches(['-', '$', '.']).to_ascii_lowercase();
    !k.is_empty() && (SECRET_KEY_ENDS.iter().any(|e| k.ends_with(e)) || k.contains("secret") || k.contains("password"))
}

/// Characters a key name is made of.
fn is_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.')
}

/// Where an unquoted value ends.
fn ends_value(c: char) -> bool {
    c.is_whitespace() || matches!(c, '&' | ',' | ';' | '"' | '\'' | '`' | ')' | '}' | ']' | '<' | '>')
}

/// The byte length of the value starting `s`: a quoted string (its quotes kept outside) or a bare run.
/// Returns (start offset inside `s`, length).
fn value_span(s: &str) -> (usize, usize) {
    if s.starts_with(MARK) {
        return (0, MARK.len());
    }
    match s.chars().next() {
        Some(q @ ('"' | '\'' | '`')) => {
            let inner = &s[1..];
            let len = inner.find(q).unwrap_or(inner.len());
            (1, len)
        }
        _ => (0, s.find(ends_value).unwrap_or(s.len())),
    }
}

/// Replaces the value at the start of `rest` with the mark, unless it is empty, a JSON
/// literal, or already marked. Returns how many bytes of `rest` were consumed.
fn mark_value(out: &mut String, rest: &str) -> usize {
    let (off, len) = value_span(rest);
    let value = &rest[off..off + len];
    out.push_str(&rest[..off]);
    if value.is_empty() || value == MARK || matches!(value, "null" | "true" | "false") {
        out.push_str(value);
    } else {
        out.push_str(MARK);
    }
    off + len
}

/// `-----BEGIN … PRIVATE KEY-----` blocks, whole.
fn private_keys(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find("-----BEGIN ") {
        let header_end = rest[start + 11..].find("-----").map(|i| start + 11 + i);
        let Some(header_end) = header_end.filter(|&e| rest[start..e].contains("PRIVATE KEY")) else {
            out.push_str(&rest[..start + 11]);
            rest = &rest[start + 11..];
            continue;
        };
        out.push_str(&rest[..start]);
        out.push_str(MARK);
        let after = &rest[header_end + 5..];
        rest = match after.find("-----END ") {
            Some(e) => {
                let tail = &after[e + 9..];
                tail.find("-----").map_or("", |i| &tail[i + 5..])
            }
            None => "",
        };
    }
    out.push_str(rest);
    out
}

/// Finds `needle` (ASCII, lower case) in `hay` case-insensitively, from byte `from`.
fn find_ci(hay: &str, needle: &str, from: usize) -> Option<usize> {
    let h = hay.as_bytes();
    let n = needle.as_bytes();
    (from..h.len().saturating_sub(n.len() - 1)).find(|&i| h[i..i + n.len()].eq_ignore_ascii_case(n))
}

/// The value of `Authorization` (a header, or a JSON or config key), keeping its scheme word, and a
/// credential after a bare `Bearer` or `Basic`.
fn authorization(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let mut from = 0;
    loop {
        let header = find_ci(text, "authorization", from).map(|i| (i, "authorization".len(), true));
        let scheme = ["bearer ", "basic "]
            .iter()
            .filter_map(|s| find_ci(text, s, from).filter(|&i| word_start(text, i)).map(|i| (i, s.len(), false)))
            .min();
        let Some((i, len, is_header)) = [header, scheme].into_iter().flatten().min() else { break };
        from = i + len;
        let mut j = i + len;
        if is_header {
            // `Authorization:`, `"authorization": "…"`, `authorization=`: a key, then its value.
            j += text[j..].len() - text[j..].trim_start_matches(['"', '\'']).len();
            j += spaces(&text[j..]);
            if !text[j..].starts_with([':', '=']) {
                continue;
            }
            j += 1;
            j += spaces(&text[j..]);
            if text[j..].starts_with(['"', '\'']) {
                j += 1;
            }
            let word: String = text[j..].chars().take_while(char::is_ascii_alphabetic).collect();
            if ["bearer", "basic", "token", "digest"].contains(&word.to_ascii_lowercase().as_str()) {
                j += word.len();
                j += spaces(&text[j..]);
            }
        } else if !token68(&text[j..]) {
            continue;
        }
        out.push_str(&text[at..j]);
        j += mark_value(&mut out, &text[j..]);
        at = j;
        from = j;
    }
    out.push_str(&text[at..]);
    out
}

/// How many spaces and tabs `s` starts with.
fn spaces(s: &str) -> usize {
    s.len() - s.trim_start_matches([' ', '\t']).len()
}

/// Whether `s` starts with what a bare `Bearer`/`Basic` carries: 8 or more token characters, not all
/// letters (so "basic authentication" stays prose).
fn token68(s: &str) -> bool {
    let v: &str = &s[..s.find(ends_value).unwrap_or(s.len())];
    v.len() >= 8
        && v.chars().all(|c| c.is_ascii_alphanumeric() || "-._~+/=".contains(c))
        && !v.chars().all(|c| c.is_ascii_alphabetic())
}

/// Whether byte `i` of `text` starts a word (not inside another identifier).
fn word_start(text: &str, i: usize) -> bool {
    text[..i].chars().next_back().is_none_or(|c| !(c.is_ascii_alphanumeric() || c == '_'))
}

/// Splits `text` into runs of whitespace and runs of anything else, in order.
fn words(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_space = None;
    for (i, c) in text.char_indices() {
        let space = c.is_whitespace();
        if in_space.is_some_and(|s| s != space) {
            out.push(&text[start..i]);
            start = i;
        }
        in_space = Some(space);
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

/// Strips one layer of shell quotes from a word, for comparing flag names.
fn unquoted(word: &str) -> &str {
    word.trim_matches(['"', '\''])
}

/// A value that looks generated rather than typed: long enough, letters and digits mixed.
fn looks_random(v: &str) -> bool {
    v.len() >= 12
        && v.chars().any(|c| c.is_ascii_digit())
        && v.chars().any(|c| c.is_ascii_alphabetic())
        && v.chars().all(|c| c.is_ascii_alphanumeric() || "-_+/=.".contains(c))
}

/// The word after a secret flag (`--token x`, `-t <random>`), and the password of `-u user:pass`.
fn flags(text: &str) -> String {
    let parts = words(text);
    let mut out = String::with_capacity(text.len());
    let mut pending: Option<&str> = None;
    for part in parts {
        if part.starts_with(char::is_whitespace) {
            out.push_str(part);
            continue;
        }
        match pending.take() {
            Some("secret") => {
                let (q, v) = split_quotes(part);
                out.push_str(q.0);
                out.push_str(if v.is_empty() || v == MARK { v } else { MARK });
                out.push_str(q.1);
            }
            Some("random") => {
                let (q, v) = split_quotes(part);
                out.push_str(q.0);
                out.push_str(if looks_random(v) { MARK } else { v });
                out.push_str(q.1);
            }
            Some(_) => {
                // `-u user:pass`: the user stays, the password goes.
                let (q, v) = split_quotes(part);
                out.push_str(q.0);
                match v.split_once(':') {
                    Some((user, pass)) if !pass.is_empty() && pass != MARK => {
                        out.push_str(user);
                        out.push(':');
                        out.push_str(MARK);
                    }
                    _ => out.push_str(v),
                }
                out.push_str(q.1);
            }
            None => {
                let flag = unquoted(part);
                pending = if SECRET_FLAGS.contains(&flag) {
                    Some("secret")
                } else if flag == "-t" {
                    Some("random")
                } else if flag == "-u" || flag == "--user" {
                    Some("user")
                } else {
                    None
                };
                out.push_str(part);
            }
        }
    }
    out
}

/// A word's surrounding quotes and its inside.
fn split_quotes(word: &str) -> ((&str, &str), &str) {
    for q in ["\"", "'"] {
        if word.len() >= 2 && word.starts_with(q) && word.ends_with(q) {
            return ((q, q), &word[1..word.len() - 1]);
        }
    }
    (("", ""), word)
}

/// The value of `key=value`, `key: value`, `"key": "value"` and `key = value` for secret-ish keys.
fn key_values(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c != b'=' && c != b':' {
            i += 1;
            continue;
        }
        // `://` is a URL, `==` a comparison: neither assigns.
        if c == b':' && text[i + 1..].starts_with("//") || c == b'=' && text[i + 1..].starts_with('=') {
            i += 1;
            continue;
        }
        // The key just before the separator, past a closing quote and spaces.
        let before = text[..i].trim_end_matches([' ', '\t']);
        let before = before.strip_suffix(['"', '\'']).unwrap_or(before);
        let key_start = before
            .rfind(|ch: char| !is_key_char(ch))
            .map_or(0, |p| p + before[p..].chars().next().map_or(1, char::len_utf8));
        let key = &before[key_start..];
        if !is_secret_key(key) {
            i += 1;
            continue;
        }
        let after = &text[i + 1..];
        let spaces = after.len() - after.trim_start_matches([' ', '\t']).len();
        out.push_str(&text[at..i + 1 + spaces]);
        let consumed = mark_value(&mut out, &after[spaces..]);
        i = i + 1 + spaces + consumed;
        at = i;
    }
    out.push_str(&text[at..]);
    out
}

/// The password of a URL's userinfo: `https://user:pass@host` keeps `user`.
fn url_passwords(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    while let Some(p) = text[at..].find("://").map(|p| at + p + 3) {
        let authority_len =
            text[p..].find(|c: char| c == '/' || c == '?' || c == '#' || ends_value(c)).unwrap_or(text.len() - p);
        let authority = &text[p..p + authority_len];
        out.push_str(&text[at..p]);
        match authority.rfind('@').map(|a| &authority[..a]).and_then(|info| info.split_once(':')) {
            Some((user, pass)) if !pass.is_empty() && pass != MARK => {
                out.push_str(user);
                out.push(':');
                out.push_str(MARK);
                out.push_str(&authority[user.len() + 1 + pass.len()..]);
            }
            _ => out.push_str(authority),
        }
        at = p + authority_len;
    }
    out.push_str(&text[at..]);
    out
}

/// Characters of the runs [`tokens`] judges.
fn is_token_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '=')
}

/// Known prefixes, JWTs and long random-looking runs, each replaced whole.
fn tokens(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(is_token_char) {
        out.push_str(&rest[..start]);
        rest = &rest[start..];
        let mut len = rest.find(|c: char| !is_token_char(c)).unwrap_or(rest.len());
        // A JWT is three base64url runs joined by dots.
        let jwt = jwt_len(rest);
        if jwt > 0 {
            len = jwt;
        }
        // A digest is named, not secret: an SSH fingerprint (`SHA256:…`), a subresource integrity hash
        // (`sha512-…`), a Docker digest. It is kept whole, slashes and all.
        if is_digest(&out, &rest[..len]) {
            len = rest.find(|c: char| c.is_whitespace() || "\"'`,;)".contains(c)).unwrap_or(rest.len());
        }
        let run = &rest[..len];
        if is_digest(&out, run) {
            out.push_str(run);
        } else if jwt > 0 || is_credential(run) {
            out.push_str(MARK);
        } else {
            out.push_str(run);
        }
        rest = &rest[len..];
    }
    out.push_str(rest);
    out
}

/// Labels that name what follows as a digest.
const DIGESTS: &[&str] = &["sha1", "sha256", "sha384", "sha512", "md5"];

/// Whether `run`, after the text `before`, is a labelled digest: `sha512-…`, or `SHA256:…`.
fn is_digest(before: &str, run: &str) -> bool {
    let labelled = |label: &str| DIGESTS.iter().any(|d| label.eq_ignore_ascii_case(d));
    let sri = run.split_once('-').is_some_and(|(label, _)| labelled(label));
    // A base64 digest may begin with `/`, which is not a token character and so sits in `before`.
    let after_label = before
        .trim_end_matches('/')
        .strip_suffix(':')
        .map(|b| &b[b.rfind(|c: char| !c.is_ascii_alphanumeric()).map_or(0, |i| i + 1)..])
        .is_some_and(labelled);
    sri || after_label
}

/// The length of the JWT `s` starts with, or 0.
fn jwt_len(s: &str) -> usize {
    if !s.starts_with("eyJ") {
        return 0;
    }
    let part = |s: &str| s.find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == '-')).unwrap_or(s.len());
    let a = part(s);
    if a < 10 || !s[a..].starts_with('.') {
        return 0;
    }
    let b = part(&s[a + 1..]);
    if b < 10 || !s[a + 1 + b..].starts_with('.') {
        return 0;
    }
    let c = part(&s[a + 2 + b..]);
    a + 2 + b + c
}

fn is_credential(run: &str) -> bool {
    let word = run.trim_matches(['-', '=', '+']);
    if PREFIXES.iter().any(|(p, min)| {
        word.strip_prefix(p).is_some_and(|rest| {
            rest.len() >= *min && rest.chars().all(|c| c.is_ascii_alphanumeric() || "_-".contains(c))
        })
    }) {
        return true;
    }
    // Long runs judged alone: pure hex (digests of 40 and 64 kept), or base64-ish with every class of
    // character and few separators (identifiers like `some-long-name-2024` have many).
    if word.len() < 32 {
        return false;
    }
    let hex = word.chars().all(|c| c.is_ascii_hexdigit());
    if hex {
        return word.len() != 40
            && word.len() != 64
            && word.chars().any(|c| c.is_ascii_digit())
            && word.chars().any(|c| c.is_ascii_alphabetic());
    }
    let separators = word.chars().filter(|c| matches!(c, '-' | '_')).count();
    word.chars().any(|c| c.is_ascii_uppercase())
        && word.chars().any(|c| c.is_ascii_lowercase())
        && word.chars().any(|c| c.is_ascii_digit())
        && separators <= 3
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The one table: each input and what redaction keeps of it. The server and the `sky` CLI run it.
    const CASES: &[(&str, &str)] = &[
        // Flags.
        ("vercel deploy --token 3f9a1c0b7d2e4f6a8b9c", "vercel deploy --token [redacted]"),
        ("vercel --token=abc123 deploy", "vercel --token=[redacted] deploy"),
        ("mysql --password hunter2 db", "mysql --password [redacted] db"),
        ("psql --password='hunter 2'", "psql --password='[redacted]'"),
        ("vercel -t a8F3kd92LmQ0zX deploy", "vercel -t [redacted] deploy"),
        ("docker build -t web .", "docker build -t web ."),
        ("curl -u ada:s3cr3t https://api.example.com", "curl -u ada:[redacted] https://api.example.com"),
        ("curl --user 'ada:pass' x", "curl --user 'ada:[redacted]' x"),
        // Authorization.
        ("curl -H 'Authorization: Bearer abc.def' x", "curl -H 'Authorization: Bearer [redacted]' x"),
        ("authorization: token zzz", "authorization: token [redacted]"),
        ("Authorization: s3cr3t", "Authorization: [redacted]"),
        ("send it with Bearer xyz123abc", "send it with Bearer [redacted]"),
        ("a basic authentication scheme, Bearer tokens", "a basic authentication scheme, Bearer tokens"),
        (r#"{"Authorization": "Bearer abc"}"#, r#"{"Authorization": "Bearer [redacted]"}"#),
        ("Basic YWRhOnBhc3M=", "Basic [redacted]"),
        // Keys and values.
        ("DB_PASSWORD=hunter2 npm start", "DB_PASSWORD=[redacted] npm start"),
        ("export GITHUB_TOKEN=abc", "export GITHUB_TOKEN=[redacted]"),
        ("aws_secret_access_key = wJalrXUtnFEMI", "aws_secret_access_key = [redacted]"),
        (r#"{"api_key": "k-123", "name": "x"}"#, r#"{"api_key": "[redacted]", "name": "x"}"#),
        (r#"{"token": null}"#, r#"{"token": null}"#),
        ("https://x.example/cb?access_token=abc&state=1", "https://x.example/cb?access_token=[redacted]&state=1"),
        ("x-api-key: 12345", "x-api-key: [redacted]"),
        ("password: hunter2", "password: [redacted]"),
        ("max_tokens=4096 prompt_tokens: 7", "max_tokens=4096 prompt_tokens: 7"),
        ("if a == b: print(token_count)", "if a == b: print(token_count)"),
        // URLs with userinfo.
        ("git clone https://ada:pat123@github.com/o/r", "git clone https://ada:[redacted]@github.com/o/r"),
        ("postgres://app:pw@db:5432/app", "postgres://app:[redacted]@db:5432/app"),
        ("http://127.0.0.1:80@example.com/", "http://127.0.0.1:[redacted]@example.com/"),
        ("https://example.com/a:b@c", "https://example.com/a:b@c"),
        // Known prefixes.
        ("gh auth ghp_abcdefghijklmnopqrstu", "gh auth [redacted]"),
        ("use gho_16charactersABCD1234", "use [redacted]"),
        ("github_pat_11ABCDEFG0123456789_abcdefXYZ", "[redacted]"),
        ("run sk-live1234567890abcdefXYZ", "run [redacted]"),
        ("key sk_live_51Habcdef", "key [redacted]"),
        ("slack xoxb-123456-abcdef", "slack [redacted]"),
        ("slack xoxp-123456-abcdef", "slack [redacted]"),
        ("id AKIAIOSFODNN7EXAMPLE here", "id [redacted] here"),
        ("key ast_Qk9mZ2V0aGlzaXNhdGVzdGtleQ1234", "key [redacted]"),
        ("sst_abcdefghijklmnopqrstuvwx and srt_abcdefghijklmnopqrstuvwx", "[redacted] and [redacted]"),
        ("sk-learn is a package", "sk-learn is a package"),
        ("task-management", "task-management"),
        // JWTs and blobs.
        (
            "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U ok",
            "jwt [redacted] ok",
        ),
        ("blob 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822c end", "blob [redacted] end"),
        ("commit 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12", "commit 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12"),
        (
            "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
        ),
        ("secret Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MEFCQ0RFRg== end", "secret [redacted] end"),
        ("some-very-long-package-name-2024-Edition-X", "some-very-long-package-name-2024-Edition-X"),
        (
            "256 SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8/vYq sky-test (ED25519)",
            "256 SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8/vYq sky-test (ED25519)",
        ),
        (
            "256 SHA256:/0mXFh1yQ8gkLzR8TBaVw3rPZcq4jYn7EuS2dHk/J6rjoE granted-test (ED25519)",
            "256 SHA256:/0mXFh1yQ8gkLzR8TBaVw3rPZcq4jYn7EuS2dHk/J6rjoE granted-test (ED25519)",
        ),
        (
            r#""integrity": "sha512-Ffq1PqSu7NaXqY0oWCe3aDCdXzgLH0ZRPzI/dKcGh6o/dHjKxpFe8Ah7gHZ0c4uE4nPxQ4T5mWQ1a1+J5Q==""#,
            r#""integrity": "sha512-Ffq1PqSu7NaXqY0oWCe3aDCdXzgLH0ZRPzI/dKcGh6o/dHjKxpFe8Ah7gHZ0c4uE4nPxQ4T5mWQ1a1+J5Q==""#,
        ),
        // Private keys.
        (
            "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjE=\n-----END OPENSSH PRIVATE KEY-----\nbye",
            "key:\n[redacted]\nbye",
        ),
        // Left alone.
        ("npm test", "npm test"),
        ("cargo test --workspace", "cargo test --workspace"),
        ("vercel deploy --prod", "vercel deploy --prod"),
        ("make check && npm run lint", "make check && npm run lint"),
        ("ses_0123456789abcdefghjkmnpqrs", "ses_0123456789abcdefghjkmnpqrs"),
        ("a thought about tokens: many", "a thought about tokens: many"),
    ];

    #[test]
    fn credentials_are_replaced_and_everything_else_is_kept() {
        let mut wrong = Vec::new();
        for (input, want) in CASES {
            let got = redact(input);
            if got != *want {
                wrong.push(format!("{input:?}\n   got  {got:?}\n   want {want:?}"));
            }
        }
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    }

    #[test]
    fn redacting_twice_changes_nothing_more() {
        for (input, _) in CASES {
            let once = redact(input);
            assert_eq!(redact(&once), once, "{input}");
        }
    }

    #[test]
    fn known_values_are_masked_longest_first_and_short_ones_left() {
        let known = vec!["abcd".to_owned(), "abcdef".to_owned(), "ab".to_owned()];
        assert_eq!(mask("x abcdef y abcd z ab", &known), "x [redacted] y [redacted] z ab");
        assert!(has_secret("--token x") && !has_secret("npm test"));
    }
}

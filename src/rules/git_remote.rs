//! What a task's git remote may be: an `https://` repository URL that passes the outbound-URL rule
//! ([`super::outbound`]: public host, no credentials in it), or a repository on the runner's own machine
//! (`file:///abs/path` or `/abs/path`), which only that runner reaches. Credentials never go in the URL:
//! the push uses the connector's grant. And a branch name git accepts (`git check-ref-format`'s rules).

/// Checks the remote `raw` in `field`; returns it as the runner will use it.
pub fn check(field: &str, raw: &str, loopback_http: bool) -> Result<String, String> {
    let raw = raw.trim();
    if let Some(path) = raw.strip_prefix("file://") {
        return local(field, path).map(|_| raw.to_owned());
    }
    if raw.starts_with('/') {
        return local(field, raw).map(|_| raw.to_owned());
    }
    if raw.starts_with("https://") || raw.starts_with("http://") {
        return super::outbound::check(field, raw, loopback_http).map(|u| u.to_string());
    }
    Err(format!(
        "`{field}` must be an https:// repository URL, or a repository on the runner's machine (file:///abs/path or /abs/path)"
    ))
}

fn local(field: &str, path: &str) -> Result<(), String> {
    if !path.starts_with('/') {
        return Err(format!("`{field}`: a local repository is given by its absolute path (file:///abs/path)"));
    }
    if path.split('/').any(|part| part == "..") {
        return Err(format!("`{field}`: a local repository path must not contain `..`"));
    }
    Ok(())
}

/// The host a git-hosting provider's tokens are for; `None` for a provider that is not a git host.
pub fn provider_host(provider: &str) -> Option<&'static str> {
    match provider {
        "github" => Some("github.com"),
        _ => None,
    }
}

/// Whether a grant on a `provider` connector may push to the checked remote `url`: the connector must be a
/// git host, and an `https://` remote must be on that host, since the runner sends the grant's token to it.
/// A local remote carries no token.
pub fn bound(field: &str, url: &str, provider: &str) -> Result<(), String> {
    let Some(host) = provider_host(provider) else {
        return Err(format!(
            "`{field}`: the connector's provider `{provider}` is not a git host; use a `github` connector"
        ));
    };
    if is_local(url) {
        return Ok(());
    }
    let on_host =
        url::Url::parse(url).is_ok_and(|u| u.scheme() == "https" && u.port().is_none() && u.host_str() == Some(host));
    if !on_host {
        return Err(format!(
            "`{field}` must be an https://{host}/ repository: the `{provider}` connector's token is sent only to {host}"
        ));
    }
    Ok(())
}

/// Whether a checked remote is on the runner's machine (`file://…` or `/…`).
pub fn is_local(url: &str) -> bool {
    url.starts_with("file://") || url.starts_with('/')
}

/// Checks a branch name the way `git check-ref-format --branch` does, a little stricter.
pub fn branch(field: &str, name: &str) -> Result<(), String> {
    let bad = name.is_empty()
        || name.starts_with(['-', '/', '.'])
        || name.ends_with(['/', '.'])
        || name.ends_with(".lock")
        || name.contains("..")
        || name.contains("//")
        || name.contains("@{")
        || name == "@"
        || name.split('/').any(|c| c.starts_with('.'))
        || name.chars().any(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(c));
    if bad {
        return Err(format!(
            "`{field}` is not a branch name git accepts (no spaces, `..`, `~^:?*[\\`, leading `-` or `.`, or ending in `/`, `.` or `.lock`)"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remotes_are_https_to_public_hosts_or_local_paths() {
        assert_eq!(check("url", "https://github.com/o/r.git", false).unwrap(), "https://github.com/o/r.git");
        assert_eq!(check("url", " file:///srv/repo.git ", false).unwrap(), "file:///srv/repo.git");
        assert_eq!(check("url", "/srv/repo.git", false).unwrap(), "/srv/repo.git");
        for bad in [
            "https://user:tok@github.com/o/r.git",
            "https://10.0.0.1/r.git",
            "http://github.com/o/r.git",
            "git@github.com:o/r.git",
            "ext::sh -c touch% /tmp/x",
            "-uhello",
            "file://relative/x",
            "/srv/../etc",
        ] {
            let e = check("url", bad, false).unwrap_err();
            assert!(e.contains("`url`"), "{bad}: {e}");
        }
        assert!(check("url", "http://localhost:9/r.git", true).is_ok());
    }

    #[test]
    fn a_remote_is_bound_to_its_connectors_host() {
        assert!(bound("url", "https://github.com/o/r.git", "github").is_ok());
        assert!(bound("url", "/srv/r.git", "github").is_ok());
        assert!(bound("url", "file:///srv/r.git", "github").is_ok());
        for (url, provider) in [
            ("https://evil.example/o/r.git", "github"),
            ("https://github.com.evil.example/o/r.git", "github"),
            ("https://github.com:8443/o/r.git", "github"),
            ("http://localhost:9/r.git", "github"),
            ("https://github.com/o/r.git", "vercel"),
            ("/srv/r.git", "ssh"),
        ] {
            assert!(bound("url", url, provider).unwrap_err().contains("`url`"), "{url} {provider}");
        }
    }

    #[test]
    fn branches_follow_gits_rules() {
        for ok in ["main", "release/1.2", "agentsky-work", "feat_x"] {
            assert!(branch("branch", ok).is_ok(), "{ok}");
        }
        for bad in ["", "-f", "a..b", "a b", "x.lock", "a/", "a:b", "@", "a/.b", "a~1", ".x"] {
            assert!(branch("branch", bad).is_err(), "{bad}");
        }
    }
}

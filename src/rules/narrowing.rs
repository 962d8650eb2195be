//! How a grant's scopes narrow the credential it hands over, per provider, and why a connection hands over
//! its own credential instead. One table per provider, so what a `read` grant may do is read in one place.

use std::collections::BTreeMap;

/// A GitHub App installation token's permissions for a grant's scopes (GitHub's permission names and
/// levels): `read` reads code; `write` pushes and opens pull requests; `deploy` creates deployments and
/// runs workflows; `delete` administers the repository, only when asked for. Every token reads metadata,
/// as GitHub requires. A permission two scopes name gets the higher level.
pub fn github_permissions<S: AsRef<str>>(scopes: &[S]) -> BTreeMap<&'static str, &'static str> {
    const TABLE: &[(&str, &[(&str, &str)])] = &[
        ("read", &[("contents", "read")]),
        ("write", &[("contents", "write"), ("pull_requests", "write")]),
        ("deploy", &[("deployments", "write"), ("actions", "write")]),
        ("delete", &[("administration", "write")]),
    ];
    let mut out = BTreeMap::from([("metadata", "read")]);
    for scope in scopes {
        let Some((_, grants)) = TABLE.iter().find(|(s, _)| *s == scope.as_ref()) else { continue };
        for (permission, level) in *grants {
            let kept = out.entry(permission).or_insert(level);
            if *level == "write" {
                *kept = "write";
            }
        }
    }
    out
}

/// Why a connection of `provider` connected as `kind` hands over its own credential, not one narrowed to
/// the grant; `None` when it narrows (a GitHub App).
pub fn unscoped_reason(provider: &str, kind: Option<&str>) -> Option<&'static str> {
    Some(match (provider, kind) {
        (_, None) => "not connected",
        ("github", Some("github_app")) => return None,
        ("github", _) => {
            "a personal access token is the connection's own: connect a GitHub App (app_id, private_key, installation_id) to give each grant a token for its scopes only"
        }
        ("aws", _) => {
            "static keys are the connection's own (narrowing through an assumed role is not built yet)"
        }
        ("gcp", _) => {
            "a token is the connection's own (narrowing through a service account is not built yet)"
        }
        ("vercel", _) => {
            "Vercel documents no way to narrow a token to a scope; the grant still ends the runner's commands at its expiry"
        }
        ("supabase", _) => {
            "Supabase documents no way to narrow an access token to a scope; the grant still ends the runner's commands at its expiry"
        }
        ("ssh", _) => "an SSH key is not narrowed; the runner's ssh-agent holds it only for the grant's lifetime",
        _ => "the connection's own credential",
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_scope_maps_to_its_github_permissions_and_the_higher_level_wins() {
        let p = |s: &[&str]| github_permissions(s).into_iter().collect::<Vec<_>>();
        assert_eq!(p(&["read"]), [("contents", "read"), ("metadata", "read")]);
        assert_eq!(p(&["write"]), [("contents", "write"), ("metadata", "read"), ("pull_requests", "write")]);
        assert_eq!(p(&["read", "write"]), p(&["write"]), "write's contents level wins over read's");
        assert_eq!(p(&["deploy"]), [("actions", "write"), ("deployments", "write"), ("metadata", "read")]);
        assert_eq!(p(&["delete"]), [("administration", "write"), ("metadata", "read")]);
        assert!(!p(&["read", "write", "deploy"]).iter().any(|(k, _)| *k == "administration"), "only when asked");
    }

    #[test]
    fn only_a_github_app_narrows_and_every_other_connection_says_why_not() {
        assert_eq!(unscoped_reason("github", Some("github_app")), None);
        for (provider, kind) in
            [("github", "env"), ("vercel", "env"), ("supabase", "env"), ("ssh", "ssh"), ("aws", "env"), ("gcp", "env")]
        {
            assert!(unscoped_reason(provider, Some(kind)).is_some_and(|r| r.len() > 20), "{provider}");
        }
    }
}

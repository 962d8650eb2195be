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

/// The AWS actions each scope allows by default, by what agents run (`aws s3 ls`, `cloudformation deploy`,
/// `lambda update-function-code`, …); a target may name its own statements per scope instead.
pub fn aws_actions(scope: &str) -> &'static [&'static str] {
    match scope {
        "read" => &[
            "sts:GetCallerIdentity",
            "s3:Get*",
            "s3:List*",
            "cloudformation:Describe*",
            "cloudformation:Get*",
            "cloudformation:List*",
            "lambda:Get*",
            "lambda:List*",
            "logs:Describe*",
            "logs:Get*",
            "logs:FilterLogEvents",
            "cloudwatch:Describe*",
            "cloudwatch:Get*",
            "cloudwatch:List*",
            "ec2:Describe*",
            "ecs:Describe*",
            "ecs:List*",
        ],
        "write" => &[
            "s3:PutObject",
            "s3:AbortMultipartUpload",
            "ssm:PutParameter",
            "lambda:UpdateFunctionConfiguration",
            "cloudformation:CreateChangeSet",
        ],
        "deploy" => &[
            "cloudformation:CreateStack",
            "cloudformation:UpdateStack",
            "cloudformation:CreateChangeSet",
            "cloudformation:ExecuteChangeSet",
            "lambda:UpdateFunctionCode",
            "lambda:PublishVersion",
            "lambda:UpdateAlias",
            "ecs:RegisterTaskDefinition",
            "ecs:UpdateService",
            "s3:PutObject",
            "iam:PassRole",
        ],
        "delete" => &[
            "s3:DeleteObject",
            "s3:DeleteBucket",
            "cloudformation:DeleteStack",
            "lambda:DeleteFunction",
            "ecs:DeleteService",
            "ec2:TerminateInstances",
        ],
        _ => &[],
    }
}

/// The session policy that narrows an assumed role to a grant's scopes: the target's own statements for
/// each scope where it names them (`policies`, scope → statements), else one statement allowing the
/// scope's default actions ([`aws_actions`]) on every resource the role reaches. On a `prod` target
/// `delete` has no default: it allows only the statements the target names for it.
pub fn aws_session_policy<S: AsRef<str>>(
    scopes: &[S],
    policies: &serde_json::Map<String, serde_json::Value>,
    env: &str,
) -> serde_json::Value {
    let mut statements = Vec::new();
    let mut defaults: Vec<&str> = Vec::new();
    for scope in scopes {
        match policies.get(scope.as_ref()).and_then(|v| v.as_array()) {
            Some(own) => statements.extend(own.iter().cloned()),
            None if env == "prod" && scope.as_ref() == "delete" => {}
            None => {
                for action in aws_actions(scope.as_ref()) {
                    if !defaults.contains(action) {
                        defaults.push(action);
                    }
                }
            }
        }
    }
    if !defaults.is_empty() {
        statements.insert(0, serde_json::json!({"Effect": "Allow", "Action": defaults, "Resource": "*"}));
    }
    serde_json::json!({"Version": "2012-10-17", "Statement": statements})
}

/// The OAuth scope of a Google access token for a grant: read-only for a grant of `read` alone (Google's
/// `cloud-platform.read-only`), else the whole platform the service account's own roles allow.
pub fn gcp_oauth_scope<S: AsRef<str>>(scopes: &[S]) -> &'static str {
    if scopes.iter().all(|s| s.as_ref() == "read") {
        "https://www.googleapis.com/auth/cloud-platform.read-only"
    } else {
        "https://www.googleapis.com/auth/cloud-platform"
    }
}

/// The Cloud Storage role a Credential Access Boundary allows on a target's buckets for a grant's scopes:
/// reading objects for `read`, creating them too for `write` and `deploy`, and everything on objects for
/// `delete`.
pub fn gcp_storage_role<S: AsRef<str>>(scopes: &[S]) -> &'static str {
    let has = |s: &str| scopes.iter().any(|x| x.as_ref() == s);
    if has("delete") {
        "inRole:roles/storage.objectAdmin"
    } else if has("write") || has("deploy") {
        "inRole:roles/storage.objectUser"
    } else {
        "inRole:roles/storage.objectViewer"
    }
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
        ("aws", Some("aws_role")) => return None,
        ("aws", _) => {
            "static keys are the connection's own: connect a role to assume (role_arn, region, access_key_id, secret_access_key) to give each grant credentials for its scopes only"
        }
        ("gcp", Some("gcp_service_account")) => return None,
        ("gcp", _) => {
            "a token is the connection's own: connect a service account to give each grant a token of its own, as long as the grant, read-only for read grants and limited to the target's buckets when it names them"
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
    fn a_read_grant_on_aws_allows_reading_only_and_a_targets_own_statements_replace_a_scopes_defaults() {
        let policy = aws_session_policy(&["read"], &serde_json::Map::new(), "staging");
        let actions = policy["Statement"][0]["Action"].as_array().unwrap();
        assert!(actions.iter().all(|a| {
            let a = a.as_str().unwrap();
            ["Get", "List", "Describe", "FilterLogEvents"].iter().any(|w| a.contains(w))
        }));
        let own = serde_json::json!({"deploy": [{"Effect": "Allow", "Action": "lambda:UpdateFunctionCode", "Resource": "arn:aws:lambda:eu-west-1:1:function:web"}]});
        let policy = aws_session_policy(&["read", "deploy"], own.as_object().unwrap(), "staging");
        let statements = policy["Statement"].as_array().unwrap();
        assert_eq!(statements.len(), 2);
        assert_eq!(statements[1]["Resource"], "arn:aws:lambda:eu-west-1:1:function:web");
        assert!(!statements[0]["Action"].to_string().contains("CreateStack"), "deploy's defaults are replaced");
        // Deleting in production allows only what the target names.
        let prod = aws_session_policy(&["delete"], &serde_json::Map::new(), "prod");
        assert_eq!(prod["Statement"], serde_json::json!([]));
        let staging = aws_session_policy(&["delete"], &serde_json::Map::new(), "staging");
        assert!(staging["Statement"][0]["Action"].to_string().contains("s3:DeleteObject"));
    }

    #[test]
    fn a_google_token_is_read_only_for_read_grants_and_a_buckets_role_follows_the_widest_scope() {
        assert!(gcp_oauth_scope(&["read"]).ends_with("cloud-platform.read-only"));
        assert!(gcp_oauth_scope(&["read", "deploy"]).ends_with("cloud-platform"));
        assert_eq!(gcp_storage_role(&["read"]), "inRole:roles/storage.objectViewer");
        assert_eq!(gcp_storage_role(&["read", "deploy"]), "inRole:roles/storage.objectUser");
        assert_eq!(gcp_storage_role(&["delete"]), "inRole:roles/storage.objectAdmin");
    }

    #[test]
    fn only_an_app_or_a_role_narrows_and_every_other_connection_says_why_not() {
        assert_eq!(unscoped_reason("github", Some("github_app")), None);
        assert_eq!(unscoped_reason("aws", Some("aws_role")), None);
        assert_eq!(unscoped_reason("gcp", Some("gcp_service_account")), None);
        for (provider, kind) in
            [("github", "env"), ("vercel", "env"), ("supabase", "env"), ("ssh", "ssh"), ("aws", "env"), ("gcp", "env")]
        {
            assert!(unscoped_reason(provider, Some(kind)).is_some_and(|r| r.len() > 20), "{provider}");
        }
    }
}

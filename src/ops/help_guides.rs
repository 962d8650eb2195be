//! Help topics that are guides rather than operation groups: `connectors/<kind>` for every provider a
//! target can be (what to connect, what each scope allows, how an agent asks). One entry per kind of
//! [`targets::PROVIDERS`]; a host test keeps the two lists together.

use crate::rules::targets;

/// What to know about one provider kind.
pub struct Provider {
    pub kind: &'static str,
    /// The CLI on a runner's `PATH` that is a shim for it: it asks for access and runs under the grant.
    pub cli: &'static str,
    /// The `env` a target usually takes, or the key `ssh` takes.
    pub connect: &'static str,
    /// What `read`, `write`, `deploy` and `delete` let that CLI do, in [`targets::SCOPES`] order.
    pub scopes: [&'static str; 4],
    /// A target environment that fits the example.
    pub env: &'static str,
    /// A command an agent runs under the example grant.
    pub command: &'static str,
}

pub const PROVIDERS: &[Provider] = &[
    Provider {
        kind: "vercel",
        cli: "vercel",
        connect: r#"{"env": {"VERCEL_TOKEN": "…", "VERCEL_ORG_ID": "…", "VERCEL_PROJECT_ID": "…"}} (a token from the Vercel account's tokens page, scoped to the team)"#,
        scopes: [
            "list deployments, read logs and project settings",
            "change environment variables and project settings",
            "create deployments (`vercel deploy`, `--prod` on a prod target)",
            "remove deployments, domains or the project",
        ],
        env: "prod",
        command: "vercel deploy --prod --yes",
    },
    Provider {
        kind: "aws",
        cli: "aws",
        connect: r#"{"role_arn": "arn:aws:iam::…:role/agents", "external_id": "…", "region": "eu-west-1", "access_key_id": "…", "secret_access_key": "…"} (a role the key pair may assume: each grant then gets STS credentials narrowed by a session policy of its scopes, for the grant's time, up to an hour; "policies": {"deploy": [statements]} replaces a scope's default actions), or {"env": {"AWS_ACCESS_KEY_ID": "…", "AWS_SECRET_ACCESS_KEY": "…", "AWS_REGION": "…"}} (keys handed over as they are)"#,
        scopes: [
            "describe, list and get (`aws s3 ls`, `describe-*`)",
            "put, update and create resources",
            "deploy stacks and functions (`cloudformation deploy`, `lambda update-function-code`)",
            "delete and terminate resources",
        ],
        env: "staging",
        command: "aws cloudformation deploy --template-file stack.yml --stack-name web",
    },
    Provider {
        kind: "gcp",
        cli: "gcloud",
        connect: r#"{"service_account": {…the account's JSON key…}, "buckets": ["…"]} (each grant then gets a token of its own, as long as the grant up to an hour, read-only for read grants, and limited to the buckets when named), or {"env": {"CLOUDSDK_AUTH_ACCESS_TOKEN": "…", "CLOUDSDK_CORE_PROJECT": "…"}} (a token handed over as it is)"#,
        scopes: [
            "list and describe (`gcloud run services list`)",
            "update configuration and IAM bindings",
            "deploy services and functions (`gcloud run deploy`)",
            "delete services, buckets and instances",
        ],
        env: "prod",
        command: "gcloud run deploy web --source . --quiet",
    },
    Provider {
        kind: "supabase",
        cli: "supabase",
        connect: r#"{"env": {"SUPABASE_ACCESS_TOKEN": "…", "SUPABASE_DB_PASSWORD": "…", "SUPABASE_PROJECT_REF": "…"}} (a personal access token and the project's database password)"#,
        scopes: [
            "read projects, migrations list and logs",
            "push data and settings, set secrets",
            "push migrations and deploy functions (`supabase db push`, `functions deploy`)",
            "drop or reset databases, delete functions and projects",
        ],
        env: "prod",
        command: "supabase db push",
    },
    Provider {
        kind: "github",
        cli: "gh",
        connect: r#"{"app_id": 123, "private_key": "-----BEGIN RSA PRIVATE KEY-----…", "repositories": ["owner/repo"]} (a GitHub App installed on those repositories, or with "installation_id": each grant then gets its own installation token for those repositories and its scopes only, for an hour at most), or {"env": {"GH_TOKEN": "…"}} (a fine-grained token, handed over as it is); use env `scm`"#,
        scopes: [
            "read repositories, issues, pull requests and runs",
            "push branches, open and comment on pull requests and issues",
            "merge pull requests, run workflows and publish releases",
            "delete branches, releases and repositories",
        ],
        env: "scm",
        command: "gh pr merge 42 --squash",
    },
    Provider {
        kind: "ssh",
        cli: "ssh",
        connect: r#"{"ssh_private_key": "-----BEGIN OPENSSH PRIVATE KEY-----…"} (a key that only this host accepts; it never becomes a file on the runner, it is served by the turn's own ssh-agent)"#,
        scopes: [
            "run read-only commands (`ssh host uptime`, `cat`, `ls`)",
            "change files and configuration on the host",
            "restart services and roll out releases",
            "remove files, services or data",
        ],
        env: "prod",
        command: "ssh deploy@web.example.com 'systemctl restart web'",
    },
];

/// The guide for a provider kind.
pub fn provider(kind: &str) -> Option<&'static Provider> {
    PROVIDERS.iter().find(|p| p.kind == kind)
}

/// An agent's `request_access` call for a target of this kind.
pub fn request_access(target: &str, scope: &str, command: &str) -> String {
    // Written out, so the target comes first as an agent would write it (a JSON map would sort the keys).
    let q = |s: &str| serde_json::Value::from(s).to_string();
    format!(
        "request_access {{\"target\":{},\"scope\":[{}],\"reason\":\"ship the fix\",\"command\":{}}}",
        q(target),
        q(scope),
        q(command)
    )
}

/// The guide topics: `connectors/<kind>` for each provider.
pub fn topics() -> Vec<String> {
    targets::PROVIDERS.iter().map(|k| format!("connectors/{k}")).collect()
}

/// The operations a guide topic shows beside its text.
pub const OPERATIONS: &[&str] = &["connect_target", "list_connectors", "set_policy", "list_grants", "revoke_grant"];

/// A guide topic's one-line summary and its text; `None` when `topic` is not a guide.
pub fn guide(topic: &str) -> Option<(String, String)> {
    let p = provider(topic.strip_prefix("connectors/")?)?;
    let summary = format!(
        "Connect a `{}` target: agents then ask for scoped, expiring access and run `{}` under the grant.",
        p.kind, p.cli
    );
    let scopes: Vec<String> =
        targets::SCOPES.iter().zip(p.scopes).map(|(scope, what)| format!("`{scope}`: {what}")).collect();
    let text = format!(
        "1. Connect it (owners and admins): connect_target with name, provider `{kind}`, env (`{env}` here) and \
credentials {connect}. Credentials are sealed at rest and never shown again. \
2. Scopes an agent asks for: {scopes}. \
3. An agent asks: {example}; a policy may decide (set_policy: `ask`, `allow` or `deny` per scope), else a person \
answers with answer_request. On a runner, `{cli}` is a shim that asks by itself and runs the real CLI under the grant. \
4. list_grants shows the grants in force; revoke_grant ends one at once.",
        kind = p.kind,
        env = p.env,
        connect = p.connect,
        scopes = scopes.join("; "),
        example = request_access(&format!("{}-{}", p.kind, p.env), "deploy", p.command),
        cli = p.cli,
    );
    Some((summary, text))
}

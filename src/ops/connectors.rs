//! Targets and the policies over them: connect a target (its credentials sealed at rest), list and delete
//! targets, and set the policy that decides an agent's access to them. Answering what agents ask is
//! [`super::requests`]; the grants it makes are [`super::grants`].

use crate::cx::{Cx, Role};
use crate::error::{ApiError, Code};
use crate::rules::ids::ConnectorId;
use crate::rules::params::{words, CappedMap, EnvName, Int, Text};
pub use crate::rules::targets::{Provider, TargetEnv, TargetScope};
use crate::rules::{ids, seal};
use crate::store::{self, connectors::ConnectorRow};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Credentials {
    /// Environment variables the provider's CLI reads (e.g. `VERCEL_TOKEN`), for every provider but ssh:
    /// up to 50, named with `A`–`Z`, `0`–`9` and `_`.
    pub env: Option<CappedMap<EnvName, Text<0, 20_000>, 50>>,
    /// An SSH private key (provider `ssh`): served only through a runner's ssh-agent, never as a file.
    pub ssh_private_key: Option<Text<1, 20_000>>,
    /// A GitHub App (provider `github`, with `private_key`): each grant then gets an installation token
    /// for the target's repositories and the grant's scopes only, expiring with it.
    pub app_id: Option<u64>,
    /// The GitHub App's private key, in PEM as GitHub hands it out.
    pub private_key: Option<Text<1, 20_000>>,
    /// The app's installation on the account that owns the repositories; found from `repositories` when
    /// left out.
    pub installation_id: Option<u64>,
    /// The target's repositories, `owner/name`, up to 100 (all the installation's when left out).
    pub repositories: Option<Vec<Text<3, 200>>>,
    /// An AWS role to assume (provider `aws`, with `region`, `access_key_id` and `secret_access_key`, the
    /// key pair allowed to assume it): each grant then gets STS credentials narrowed by a session policy of
    /// its scopes, for the grant's time (15 minutes to an hour).
    pub role_arn: Option<Text<20, 2_048>>,
    /// The role's external id, when its trust policy asks for one.
    pub external_id: Option<Text<2, 1_224>>,
    /// The AWS region, e.g. `eu-west-1`.
    pub region: Option<Text<3, 40>>,
    pub access_key_id: Option<Text<16, 128>>,
    pub secret_access_key: Option<Text<16, 256>>,
    /// Per scope (`read`, `write`, `deploy`, `delete`), the IAM policy statements a grant of it allows, in
    /// place of that scope's defaults.
    pub policies: Option<serde_json::Map<String, Value>>,
    /// A Google service account's JSON key (provider `gcp`): each grant then gets a token of its own, as
    /// long as the grant (up to an hour), read-only for `read` grants.
    pub service_account: Option<serde_json::Map<String, Value>>,
    /// With `service_account`: the Cloud Storage buckets the target is; a grant's token is limited to them.
    pub buckets: Option<Vec<Text<3, 222>>>,
}

words! {
    /// What a policy decides.
    pub enum PolicyDecision { Ask = "ask", Allow = "allow", Deny = "deny" }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectTarget {
    /// The target's name, 1–60 characters, unique in the workspace (e.g. `web`, `db`).
    pub name: Text<1, 60>,
    /// `vercel`, `aws`, `gcp`, `supabase`, `github` or `ssh`.
    pub provider: Provider,
    /// `prod`, `staging`, `preview` or `scm`.
    pub env: TargetEnv,
    /// Its credentials; leave out to add it unconnected.
    pub credentials: Option<Credentials>,
    /// When the credentials stop working, unix ms.
    pub expires_ms: Option<i64>,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

/// POST /v1/connectors — owners and admins. Connecting an existing name replaces its credentials.
pub async fn connect(cx: &Cx<'_>, p: ConnectTarget) -> Result<ConnectorRow, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    cx.require_role(w, Role::Admin)?;
    let plain = match &p.credentials {
        None => None,
        Some(c) => Some(credential(cx, p.provider, c).await?),
    };
    let master = cx.env.config.secrets_key.as_deref();
    let connector_id = ids::new_id("con");
    let existing = store::connectors::list(cx.db(), &w.workspace_id).await?;
    let id = existing.iter().find(|c| c.name == *p.name).map_or(connector_id, |c| c.connector_id.clone());
    let sealed = match plain {
        Some(v) => {
            let master = master.ok_or_else(|| {
                ApiError::new(Code::NotImplemented, "this deployment has no SECRETS_KEY; it cannot store credentials")
            })?;
            let kind = match v["kind"].as_str() {
                Some("ssh") => "ssh",
                Some("github_app") => "github_app",
                Some("aws_role") => "aws_role",
                Some("gcp_service_account") => "gcp_service_account",
                _ => "env",
            };
            Some((seal::seal(master, &seal::connector_aad(&w.workspace_id, &id), &v.to_string()), kind))
        }
        None => None,
    };
    store::connectors::upsert(
        cx.db(),
        &id,
        &w.workspace_id,
        &p.name,
        p.provider.as_str(),
        p.env.as_str(),
        sealed.as_ref().map(|(s, kind)| (s.as_str(), *kind)),
        p.expires_ms,
        cx.now_ms,
    )
    .await
    .map_err(ApiError::from)
}

/// The credential to seal, as [`crate::domain::grants::Credential`] reads it: `env` variables, an `ssh`
/// key, or a GitHub App whose key is checked and whose installation is found now, so a wrong one is said
/// at once rather than at the first grant.
async fn credential(cx: &Cx<'_>, provider: Provider, c: &Credentials) -> Result<Value, ApiError> {
    let app = c.app_id.is_some() || c.private_key.is_some() || c.installation_id.is_some() || c.repositories.is_some();
    let role =
        c.role_arn.is_some() || c.access_key_id.is_some() || c.secret_access_key.is_some() || c.policies.is_some();
    let account = c.service_account.is_some() || c.buckets.is_some();
    match (&c.env, &c.ssh_private_key, app || role || account) {
        (None, None, true) if provider == Provider::Gcp && !app && !role => {
            let key = c.service_account.clone().map(Value::Object).ok_or_else(|| {
                ApiError::invalid("`credentials.buckets` go with `credentials.service_account`, the account's JSON key")
            })?;
            let buckets = c.buckets.iter().flatten().map(|b| b.to_string()).collect();
            let account = crate::domain::mint::GcpServiceAccount::from_key(&key, buckets).await?;
            Ok(json!({ "kind": "gcp_service_account", "account": account }))
        }
        (Some(env), None, false) if provider != Provider::Ssh => Ok(json!({ "kind": "env", "env": env })),
        (None, Some(key), false) if provider == Provider::Ssh => Ok(json!({ "kind": "ssh", "private_key": key })),
        (None, None, true) if provider == Provider::Aws && !app => {
            let (Some(role_arn), Some(region), Some(key), Some(secret)) =
                (&c.role_arn, &c.region, &c.access_key_id, &c.secret_access_key)
            else {
                return Err(ApiError::invalid(
                    "an AWS role needs `credentials.role_arn`, `credentials.region`, `credentials.access_key_id` and `credentials.secret_access_key`",
                ));
            };
            let role = crate::domain::mint::AwsRole {
                role_arn: role_arn.to_string(),
                external_id: c.external_id.as_ref().map(|e| e.to_string()),
                region: region.to_string(),
                access_key_id: key.to_string(),
                secret_access_key: secret.to_string(),
                policies: c.policies.clone().unwrap_or_default(),
            };
            role.check()?;
            Ok(json!({ "kind": "aws_role", "role": role }))
        }
        (None, None, true) if provider == Provider::Github && !role => {
            let (Some(app_id), Some(key)) = (c.app_id, c.private_key.as_deref()) else {
                return Err(ApiError::invalid("a GitHub App needs `credentials.app_id` and `credentials.private_key`"));
            };
            let repositories: Vec<String> = c.repositories.iter().flatten().map(|r| r.to_string()).collect();
            let app = crate::domain::mint::GithubApp::connect(cx, app_id, key, c.installation_id, repositories).await?;
            Ok(json!({ "kind": "github_app", "app": app }))
        }
        _ => Err(ApiError::invalid(
            "`credentials` takes `env` (a map of variables) for providers, `ssh_private_key` for ssh, a GitHub App (`app_id`, `private_key`, and `installation_id` or `repositories`) for github, a role to assume (`role_arn`, `region`, `access_key_id`, `secret_access_key`) for aws, or a `service_account` key (and `buckets`) for gcp",
        )),
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListConnectors {
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ConnectorList {
    pub connectors: Vec<ConnectorRow>,
    pub policies: Vec<store::connectors::PolicyRow>,
}

/// GET /v1/connectors
pub async fn list(cx: &Cx<'_>, p: ListConnectors) -> Result<ConnectorList, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    let connectors = store::connectors::list(cx.db(), &w.workspace_id).await?;
    let policies = store::connectors::all_policies(cx.db(), &w.workspace_id).await?;
    Ok(ConnectorList { connectors, policies })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DeleteConnector {
    /// The connector (`con_…`).
    pub connector_id: ConnectorId,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct ConnectorDeleted {
    pub connector_id: String,
    pub deleted: bool,
}

/// DELETE /v1/connectors/{connector_id} — owners and admins.
pub async fn delete(cx: &Cx<'_>, p: DeleteConnector) -> Result<ConnectorDeleted, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    cx.require_role(w, Role::Admin)?;
    let deleted = store::connectors::delete(cx.db(), &w.workspace_id, &p.connector_id).await?;
    if !deleted {
        return Err(ApiError::not_found("connector"));
    }
    Ok(ConnectorDeleted { connector_id: p.connector_id.into(), deleted })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetPolicy {
    /// The connector it applies to; left out, every connector of the workspace.
    pub connector_id: Option<ConnectorId>,
    /// `read`, `write`, `deploy` or `delete`.
    pub scope: TargetScope,
    /// `ask` (a person decides), `allow` (always allow) or `deny`.
    pub decision: PolicyDecision,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

/// PUT /v1/policies — owners and admins.
pub async fn set_policy(cx: &Cx<'_>, p: SetPolicy) -> Result<store::connectors::PolicyRow, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    cx.require_role(w, Role::Admin)?;
    let connector_id = p.connector_id.map(String::from).unwrap_or_default();
    if !connector_id.is_empty() {
        let c = store::connectors::get(cx.db(), &connector_id).await?;
        c.filter(|c| c.workspace_id == w.workspace_id).ok_or_else(|| ApiError::not_found("connector"))?;
    }
    let detail = match connector_id.as_str() {
        "" => format!("{}: {} (every target)", p.scope, p.decision),
        _ => format!("{}: {}", p.scope, p.decision),
    };
    let entry = store::audit::Entry {
        connector_id: Some(&connector_id).filter(|c| !c.is_empty()).map(String::as_str),
        ..store::audit::Entry::change(&w.workspace_id, &cx.caller()?.account_id, "policy_set", None, &detail, cx.now_ms)
    };
    store::connectors::set_policy(cx.db(), &connector_id, p.scope.as_str(), p.decision.as_str(), &entry).await?;
    Ok(store::connectors::PolicyRow {
        connector_id,
        scope: p.scope.as_str().to_owned(),
        decision: p.decision.as_str().to_owned(),
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SetApprovalRule {
    /// The target (a production one: the rule guards `deploy` and `delete` there).
    pub connector_id: ConnectorId,
    /// Owners or admins who must approve a `deploy` or `delete`, 1–5. Each counts once; the person who
    /// started the session does not count while another owner or admin could approve.
    pub approvals: Int<1, { crate::rules::approvals::MAX_APPROVALS }>,
    /// Each such approval only in the console, within 10 minutes of signing in (default false).
    pub fresh_sign_in: Option<bool>,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

/// PUT /v1/connectors/{connector_id}/approval-rule — owners and admins.
pub async fn set_approval_rule(
    cx: &Cx<'_>,
    p: SetApprovalRule,
) -> Result<store::connectors::ApprovalRuleRow, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    cx.require_role(w, Role::Admin)?;
    let c = store::connectors::get(cx.db(), p.connector_id.as_str()).await?;
    let c = c.filter(|c| c.workspace_id == w.workspace_id).ok_or_else(|| ApiError::not_found("connector"))?;
    if c.env != TargetEnv::Prod.as_str() {
        return Err(ApiError::invalid(format!(
            "`connector_id`: `{}` is a {} target; an approval rule guards production deploys and deletes only",
            c.name, c.env
        )));
    }
    let rule = store::connectors::ApprovalRuleRow {
        connector_id: c.connector_id.clone(),
        approvals: p.approvals.get(),
        fresh_sign_in: p.fresh_sign_in.unwrap_or(false),
    };
    let detail = format!(
        "deploy and delete on `{}`: {} approval{}{}",
        c.name,
        rule.approvals,
        if rule.approvals == 1 { "" } else { "s" },
        if rule.fresh_sign_in { ", each after a fresh sign-in" } else { "" }
    );
    let entry = store::audit::Entry {
        connector_id: Some(&c.connector_id),
        ..store::audit::Entry::change(
            &w.workspace_id,
            &cx.caller()?.account_id,
            "approval_rule_set",
            None,
            &detail,
            cx.now_ms,
        )
    };
    store::connectors::set_approval_rule(cx.db(), &rule, &entry).await?;
    Ok(rule)
}

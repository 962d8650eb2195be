//! The operator's side of the session server: connect targets (credentials sealed at rest), set the
//! policies that decide access, answer what agents wait on, revoke grants, read the audit log, and hand
//! a session its token.

use crate::cx::{Cx, Role};
use crate::error::{ApiError, Code};
use crate::ops::commands::CommandKind;
use crate::ops::{files::load_task, sessions};
use crate::rules::ids::{ConnectorId, GrantId, RequestId, SessionId, TaskId};
use crate::rules::params::{words, CappedMap, EnvName, Int, Text};
pub use crate::rules::targets::{Provider, TargetEnv, TargetScope};
use crate::rules::{ids, seal};
use crate::session::SessionCall;
use crate::store::{self, connectors::ConnectorRow, requests::RequestRow};
use agentsky_wire::runner::{JobKind, JobSpec};
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

words! {
    /// Who merges a task's landed work.
    pub enum Review { Auto = "auto", Manual = "manual" }
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
            let account = crate::domain::mint::GcpServiceAccount::from_key(&key, buckets)?;
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
pub struct AnswerRequest {
    /// The task that waits (its first session's id).
    pub task_id: TaskId,
    /// The request, from `get_task`'s `open_requests`.
    pub request_id: RequestId,
    /// For access: `approve` or `deny`. For a plan: `approve`, `reject` or `edit`. For a decision: one of
    /// its options. For a question: your answer.
    pub answer: Text<1, 4_000>,
    /// A note for the agent, up to 2,000 characters: a plan's note, or the reason for a denial (the agent
    /// receives it).
    pub note: Option<Text<0, 2_000>>,
    /// Access only: approve for every session of the workspace until revoked (a persistent grant).
    /// Owners and admins only.
    pub always: Option<bool>,
    /// Access only: how long a once-approval lasts, 1–1,440 minutes (default 60).
    pub expires_in_minutes: Option<Int<1, ONCE_MAX_MINUTES>>,
    /// Ignored: the workspace is the task's.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct RequestAnswered {
    pub request: RequestRow,
    /// For access requests: the grant as the agent now sees it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grant: Option<Value>,
}

words! {
    /// How a person answers an access request.
    pub enum AccessAnswer { Approve = "approve", Deny = "deny" }
}

words! {
    /// How a person answers a plan.
    pub enum PlanAnswer { Approve = "approve", Reject = "reject", Edit = "edit" }
}

/// `answer` as the word set of the request's kind (which kind it is, only the stored request knows).
fn answer_of<W>(answer: &str, word: fn(&str) -> Option<W>, words: &[&str]) -> Result<W, ApiError> {
    word(answer).ok_or_else(|| {
        ApiError::invalid(format!(
            "`answer` must be one of {} for this request (got {})",
            words.join(", "),
            crate::rules::params::quoted(answer)
        ))
    })
}

/// How long a once-approval lasts unless the answer says otherwise, and at most (a day).
pub const ONCE_DEFAULT_MINUTES: i64 = 60;
pub const ONCE_MAX_MINUTES: i64 = 1_440;

/// answer_request: records the answer once, decides the grant, and wakes the waiting agent at once.
pub async fn answer(cx: &Cx<'_>, p: AnswerRequest) -> Result<RequestAnswered, ApiError> {
    let member = load_task(cx, &p.task_id).await?;
    let req = store::requests::get_request(cx.db(), &p.request_id).await?;
    let req = req.filter(|r| p.task_id == r.task_id).ok_or_else(|| ApiError::not_found("request"))?;
    if req.status == "open" && req.expires_ms.is_some_and(|e| e <= cx.now_ms) {
        crate::ops::requests::expire(cx, &req).await?;
        return Err(ApiError::new(Code::Conflict, format!("request {} is already expired", req.request_id)));
    }
    if req.status != "open" {
        let why = match req.status.as_str() {
            "closed" => " (its session ended)",
            "withdrawn" => " (the agent withdrew it)",
            _ => "",
        };
        return Err(ApiError::new(
            Code::Conflict,
            format!("request {} is already {}{why}", req.request_id, req.status),
        ));
    }
    let by = cx.caller()?.key_id.clone();
    let resolution = match req.kind.as_str() {
        "access" => {
            let answer = answer_of::<AccessAnswer>(&p.answer, AccessAnswer::from_word, AccessAnswer::WORDS)?;
            let mut r = json!({ "kind": "access", "answer": answer });
            if let Some(n) = p.note.as_ref().filter(|n| answer == AccessAnswer::Deny && !n.is_empty()) {
                r["reason"] = json!(n);
            }
            r
        }
        "plan" => {
            let answer = answer_of::<PlanAnswer>(&p.answer, PlanAnswer::from_word, PlanAnswer::WORDS)?;
            let mut r = json!({ "kind": "plan", "answer": answer });
            if let Some(n) = &p.note {
                r["note"] = json!(n);
            }
            r
        }
        "decision" => {
            let options: Vec<String> = req.payload["options"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|o| o.as_str().map(str::to_owned))
                .collect();
            if !options.is_empty() && !options.iter().any(|o| p.answer == *o.as_str()) {
                return Err(ApiError::invalid(format!("`answer` must be one of the options: {}", options.join(", "))));
            }
            json!({ "kind": "decision", "answer": p.answer })
        }
        _ => json!({ "kind": "question", "answer": p.answer }),
    };
    // Every answer is in the audit log with who gave it (the key; a console sign-in acts through one),
    // recorded only when the answer landed.
    let answered = format!("{}: {} by key {by}", req.kind, p.answer);
    let account = cx.caller()?.account_id.clone();
    let mut stmts = vec![
        store::requests::answer_request(&req.request_id, &resolution, &by, cx.now_ms),
        store::audit::insert_if_changed(&crate::ops::requests::entry(
            &req.workspace_id,
            &req.session_id,
            &req.request_id,
            "request_answered",
            &answered,
            Some(&account),
            cx.now_ms,
        )),
    ];
    let grant = if req.kind == "access" {
        let g = store::requests::grant_for_request(cx.db(), &req.request_id)
            .await?
            .ok_or_else(|| ApiError::cause("grant missing"))?;
        let minutes = p.expires_in_minutes.map_or(ONCE_DEFAULT_MINUTES, Int::get);
        let always = p.always.unwrap_or(false) && p.answer.as_str() == "approve";
        // A persistent grant answers every session of the workspace until revoked, and only owners and
        // admins can revoke one: so only they may make one.
        if always && member.role < Role::Admin {
            return Err(ApiError::new(
                Code::Forbidden,
                format!(
                    "`always` (a persistent grant for every session of `{}`) needs an owner or admin; as a member, approve once, for up to {ONCE_MAX_MINUTES} minutes (`expires_in_minutes`)",
                    member.slug
                ),
            ));
        }
        let (status, expires) = match p.answer.as_str() {
            "approve" if always => ("active", None),
            "approve" => ("active", Some(cx.now_ms + minutes * 60_000)),
            _ => ("denied", None),
        };
        stmts.push(store::requests::decide_grant(&g.grant_id, status, always, expires, "user"));
        let (action, detail) = match (status, always) {
            ("active", true) => ("access_approved", format!("{}: always, for every session, by key {by}", g.scopes)),
            ("active", false) => ("access_approved", format!("{}: once, for {minutes} min, by key {by}", g.scopes)),
            _ => match p.note.as_deref().filter(|n| !n.is_empty()) {
                Some(reason) => ("access_denied", format!("{}: by key {by}: {reason}", g.scopes)),
                None => ("access_denied", format!("{}: by key {by}", g.scopes)),
            },
        };
        let entry = store::audit::Entry {
            actor_account_id: Some(&cx.caller()?.account_id),
            subject: Some(&req.request_id),
            ..store::audit::Entry::grant(&g, &g.session_id, action, &detail, cx.now_ms)
        };
        stmts.push(store::audit::insert_if_changed(&entry));
        Some(g.grant_id)
    } else {
        None
    };
    let results = cx.db().batch(stmts).await?;
    if results.first().is_none_or(|rows| rows.is_empty()) {
        return Err(ApiError::new(Code::Conflict, "the request was answered or expired meanwhile"));
    }
    // Wake the agent waiting on it (and a harness step waiting on it).
    cx.env.sessions.call(&req.session_id, SessionCall::Signal { key: req.request_id.clone() }).await.ok();
    let request = store::requests::get_request(cx.db(), &req.request_id)
        .await?
        .ok_or_else(|| ApiError::cause("request vanished"))?;
    let data = crate::domain::webhooks::request_data(&request, None);
    crate::domain::webhooks::emit(
        cx.env,
        &request.workspace_id,
        "request.answered",
        Some(&request.request_id),
        data,
        cx.now_ms,
    )
    .await;
    let grant = match grant {
        Some(id) => {
            store::requests::get_grant(cx.db(), &id).await?.map(|g| crate::domain::grants::grant_view(&g, None))
        }
        None => None,
    };
    Ok(RequestAnswered { request, grant })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct IssueSessionToken {
    /// The session (`ses_…`).
    pub session_id: SessionId,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionToken {
    pub session_id: String,
    /// The bearer for `POST /v1/session/mcp`, shown once; only its hash is kept. Dead once the session
    /// ends.
    pub token: String,
    pub server_url: String,
}

/// POST /v1/sessions/{session_id}/token: a token for an agent harness outside agentsky (a runner, `sky mcp`).
pub async fn issue_token(cx: &Cx<'_>, p: IssueSessionToken) -> Result<SessionToken, ApiError> {
    let (row, _) = sessions::load(cx, &p.session_id).await?;
    if row.status == "terminated" {
        return Err(ApiError::new(Code::SessionTerminated, "this session has ended"));
    }
    let token = ids::new_secret("sst_");
    store::requests::insert_token(
        cx.db(),
        &ids::hash_secret(&token),
        &row.session_id,
        &row.workspace_id,
        None,
        cx.now_ms,
    )
    .await?;
    Ok(SessionToken { session_id: row.session_id, token, server_url: format!("{}/v1/session/mcp", cx.link_base()?) })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskSettings {
    /// The task (its first session's id).
    pub task_id: TaskId,
    /// Give each session its own lane of the folder until it lands (default off: sessions share it).
    pub lanes: Option<bool>,
    /// `auto` (`land` merges) or `manual` ("I review and merge myself").
    pub review: Option<Review>,
    /// The base's branch name (default `main`): what `project_activity` calls the base, and where a task
    /// remote set without a `branch` pushes. A name git accepts.
    pub base_branch: Option<String>,
}

/// PUT /v1/tasks/{task_id}/settings
pub async fn set_settings(cx: &Cx<'_>, p: TaskSettings) -> Result<store::lanes::TaskSettings, ApiError> {
    load_task(cx, &p.task_id).await?;
    let now = store::lanes::settings(cx.db(), &p.task_id).await?.ok_or_else(|| ApiError::not_found("task"))?;
    if let Some(b) = &p.base_branch {
        crate::rules::git_remote::branch("base_branch", b).map_err(ApiError::invalid)?;
    }
    let settings = store::lanes::TaskSettings {
        lanes: p.lanes.unwrap_or(now.lanes),
        review: p.review.map_or(now.review, |r| r.as_str().to_owned()),
        base_branch: p.base_branch.unwrap_or(now.base_branch),
    };
    store::lanes::set_settings(cx.db(), &p.task_id, &settings).await?;
    Ok(settings)
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AskCommand {
    /// The session (`ses_…`).
    pub session_id: SessionId,
    /// `run` (the Run locally button) or `deploy` (the Deploy button): the session may then teach it with
    /// `remember_command`.
    pub kind: CommandKind,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Asked {
    pub session_id: String,
    pub kind: String,
    /// The session started in the same task, with the same agent, to work the command out: read it with
    /// `read_session`; the command it teaches (`remember_command`) is the task's.
    pub asked_session_id: String,
    /// Its first message: the question.
    pub message_id: String,
    pub cursor: String,
}

/// What the agent is asked.
fn command_question(kind: CommandKind) -> &'static str {
    match kind {
        CommandKind::Run => {
            "agentsky asks: work out how to run this project locally: the command that starts it, and the URL it serves if it serves one. Try it, then call remember_command with kind `run`, the command and its url. If you cannot run commands here, tell the user the command instead."
        }
        CommandKind::Deploy => {
            "agentsky asks: work out the command that deploys this project to one of its targets (list_targets). Ask for a deploy grant on that target (request_access), run the provider's CLI command, and once it succeeded call remember_command with kind `deploy`, that exact command and the targetId. If you cannot run commands here, tell the user the command instead."
        }
    }
}

/// POST /v1/sessions/{session_id}/ask: a session of the same task and agent is started to work the
/// command out (the person's own session keeps what it was doing); any session of the task may then teach
/// it. Asking again within the minute is the same ask.
pub async fn ask_command(cx: &Cx<'_>, p: AskCommand) -> Result<Asked, ApiError> {
    let (row, _) = sessions::load(cx, &p.session_id).await?;
    let kind = p.kind.as_str();
    store::lanes::ask(cx.db(), &row.session_id, kind).await?;
    let start: sessions::StartSession = crate::rules::params::decode(json!({
        "agent_id": row.agent_id, "task_id": row.task_id, "message": command_question(p.kind),
        "idempotency_key": format!("ask-{kind}-{}-{}", row.session_id, cx.now_ms / 60_000),
    }))
    .map_err(ApiError::cause)?;
    let started = sessions::start(cx, start).await?;
    store::lanes::ask(cx.db(), &started.session.session_id, kind).await?;
    Ok(Asked {
        session_id: row.session_id,
        kind: kind.to_owned(),
        asked_session_id: started.session.session_id,
        message_id: started.message_id,
        cursor: started.cursor,
    })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListAudit {
    /// Most entries, 1–500 (default 100).
    pub limit: Option<Int<1, 500>>,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct AuditLog {
    /// Newest first: every credential use and every change to members, roles, approvals and policies.
    pub entries: Vec<store::audit::AuditRow>,
}

/// GET /v1/audit
pub async fn audit(cx: &Cx<'_>, p: ListAudit) -> Result<AuditLog, ApiError> {
    let limit = p.limit.map_or(100, Int::get);
    let w = cx.workspace(p.workspace.as_deref())?;
    let entries = store::audit::log(cx.db(), &w.workspace_id, limit).await?;
    Ok(AuditLog { entries })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListGrants {
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

/// A grant in force, as operators see it.
#[derive(Debug, Serialize, JsonSchema)]
pub struct GrantInfo {
    pub grant_id: String,
    pub connector_id: String,
    /// The session that asked (a persistent grant answers every session of the workspace).
    pub session_id: String,
    pub task_id: String,
    pub scopes: Vec<String>,
    pub persistent: bool,
    /// Epoch ms; `null` for an `always` grant.
    pub expires_ms: Option<i64>,
    /// `user`, `policy`, `target-policy` or `persistent-grant`.
    pub decided_by: Option<String>,
    pub created_ms: i64,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GrantList {
    pub grants: Vec<GrantInfo>,
}

/// GET /v1/grants
pub async fn list_grants(cx: &Cx<'_>, p: ListGrants) -> Result<GrantList, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    let rows = store::requests::live_grants(cx.db(), &w.workspace_id, cx.now_ms).await?;
    let grants = rows
        .into_iter()
        .map(|g| GrantInfo {
            scopes: g.scopes.split(' ').map(str::to_owned).collect(),
            grant_id: g.grant_id,
            connector_id: g.connector_id,
            session_id: g.session_id,
            task_id: g.task_id,
            persistent: g.persistent,
            expires_ms: g.expires_ms,
            decided_by: g.decided_by,
            created_ms: g.created_ms,
        })
        .collect();
    Ok(GrantList { grants })
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RevokeGrant {
    /// The grant's id (`gr_…`), from `list_grants`.
    pub grant_id: GrantId,
    /// A workspace slug; the connection's workspace when left out.
    pub workspace: Option<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct GrantRevoked {
    pub grant_id: String,
    pub revoked: bool,
}

/// DELETE /v1/grants/{grant_id} — owners and admins. From the next call on, `get_credential` and the
/// shims refuse it and `check_grant` answers `denied`.
pub async fn revoke_grant(cx: &Cx<'_>, p: RevokeGrant) -> Result<GrantRevoked, ApiError> {
    let w = cx.workspace(p.workspace.as_deref())?;
    cx.require_role(w, Role::Admin)?;
    let not_found = || ApiError::not_found(&format!("active grant `{}`", p.grant_id));
    let db = cx.db();
    let g = store::requests::revoke_grant(db, &w.workspace_id, &p.grant_id).await?;
    let g = g.ok_or_else(not_found)?;
    let caller = cx.caller()?;
    let by = format!("by key {}", caller.key_id);
    let entry = store::audit::Entry {
        actor_account_id: Some(&caller.account_id),
        ..store::audit::Entry::grant(&g, &g.session_id, "revoked", &by, cx.now_ms)
    };
    store::audit::record(db, &entry).await?;
    // A runner may hold the grant's credential now: in a command it runs for a shim (ended now) or, for an
    // ssh key, in its turn's ssh-agent (which ends with every key it held).
    let ssh = store::connectors::get(db, &g.connector_id).await?.is_some_and(|c| c.provider == "ssh");
    let session = (!g.persistent).then_some(g.session_id.as_str());
    let leases = store::runners::live_leases(db, &w.workspace_id, session, cx.now_ms).await?;
    let spec = JobSpec { grant_id: Some(g.grant_id.clone()), ssh: Some(ssh), ..JobSpec::default() };
    crate::domain::jobs::tell(cx, &leases, JobKind::GrantForget, &spec).await?;
    Ok(GrantRevoked { grant_id: p.grant_id.into(), revoked: true })
}

//! Credentials narrowed to a grant (issue 37), minted on the server when a grant's credential is first
//! used and again when the last one is about to expire, as Vault's dynamic secrets are: a GitHub App's
//! installation token carries only the target's repositories and the permissions the grant's scopes map
//! to ([`narrowing::github_permissions`]), and expires at the grant's end or the token's hour, whichever
//! comes first. The token is sealed in `grant_credential` with its grant and never logged; the audit log
//! records each mint with the grant, the permissions and the expiry.

use crate::cx::{Cx, Outbound};
use crate::egress::Egress;
use crate::error::{ApiError, Code};
use crate::rules::{jwt, narrowing, outbound};
use crate::store::{self, requests::GrantRow};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// GitHub's REST API (`GITHUB_API_URL` names another, a fake in tests).
pub const GITHUB_API: &str = "https://api.github.com";
/// A minted credential is used until this close to its expiry, then minted again.
const REMINT_BEFORE_MS: i64 = 5 * 60_000;
/// The most repositories one GitHub target names.
const MAX_REPOSITORIES: usize = 100;

/// A GitHub App connection, as sealed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GithubApp {
    pub app_id: u64,
    pub private_key: String,
    pub installation_id: u64,
    /// `owner/name`; empty: every repository of the installation.
    pub repositories: Vec<String>,
}

/// A credential minted for a grant: the provider CLI's variables and when they stop working.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Minted {
    pub env: Map<String, Value>,
    pub expires_ms: i64,
}

fn github_base(cx: &Cx<'_>) -> String {
    cx.env.config.github_api_url.as_deref().unwrap_or(GITHUB_API).trim_end_matches('/').to_owned()
}

fn github_headers(jwt: &str) -> Vec<(String, String)> {
    vec![
        ("authorization".into(), format!("Bearer {jwt}")),
        ("x-github-api-version".into(), "2022-11-28".into()),
        ("user-agent".into(), "agentsky".into()),
    ]
}

/// What GitHub said, for an error: its `message`, or the status and a snippet of the body.
fn github_said(resp: &crate::http::HttpResponse) -> String {
    match resp.json_body()["message"].as_str() {
        Some(m) => format!("HTTP {}: {}", resp.status, outbound::snippet(m)),
        None => outbound::summary(resp.status, &resp.body),
    }
}

impl GithubApp {
    /// Checks the key, the repositories' names and, when no installation is named, finds it from the first
    /// repository (`GET /repos/{owner}/{repo}/installation`, as the app).
    pub async fn connect(
        cx: &Cx<'_>,
        app_id: u64,
        private_key: &str,
        installation_id: Option<u64>,
        repositories: Vec<String>,
    ) -> Result<Self, ApiError> {
        jwt::private_key(private_key).map_err(|e| ApiError::invalid(format!("`credentials.private_key`: {e}")))?;
        if repositories.len() > MAX_REPOSITORIES {
            return Err(ApiError::invalid(format!("`credentials.repositories` names at most {MAX_REPOSITORIES}")));
        }
        let owners: Vec<&str> = repositories.iter().filter_map(|r| r.split_once('/').map(|(o, _)| o)).collect();
        let well_formed = repositories.iter().all(|r| {
            r.split('/').count() == 2
                && r.split('/')
                    .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)))
        });
        if !well_formed || owners.windows(2).any(|w| w[0] != w[1]) {
            return Err(ApiError::invalid(
                "`credentials.repositories` are `owner/name`, all of one owner (the account the app is installed on)",
            ));
        }
        let mut app = GithubApp { app_id, private_key: private_key.to_owned(), installation_id: 0, repositories };
        app.installation_id =
            match (installation_id, app.repositories.first()) {
                (Some(id), _) => id,
                (None, Some(repo)) => app.find_installation(cx, repo).await?,
                (None, None) => return Err(ApiError::invalid(
                    "a GitHub App needs `credentials.installation_id`, or `credentials.repositories` to find it from",
                )),
            };
        Ok(app)
    }

    /// The app's own JWT, good for nine minutes (GitHub takes at most ten), dated a minute back for clock
    /// drift, as GitHub's documentation does it.
    fn jwt(&self, now_ms: i64) -> Result<String, ApiError> {
        let key = jwt::private_key(&self.private_key).map_err(ApiError::invalid)?;
        let now = now_ms / 1000;
        Ok(jwt::rs256(&key, &json!({"iat": now - 60, "exp": now + 540, "iss": self.app_id.to_string()})))
    }

    async fn find_installation(&self, cx: &Cx<'_>, repo: &str) -> Result<u64, ApiError> {
        let url = format!("{}/repos/{repo}/installation", github_base(cx));
        let egress = Egress::new(&*cx.env.net, &cx.env.config);
        let resp =
            egress.get_with("GITHUB_API_URL", &url, github_headers(&self.jwt(cx.now_ms)?), 64 * 1024).await.map_err(
                |e| ApiError::new(Code::Conflict, format!("GitHub could not be asked for the app's installation: {e}")),
            )?;
        match (resp.status, resp.json_body()["id"].as_u64()) {
            (200, Some(id)) => Ok(id),
            _ => Err(ApiError::invalid(format!(
                "GitHub found no installation of app {} on `{repo}` ({}): install the app on that repository, or name `credentials.installation_id`",
                self.app_id,
                github_said(&resp)
            ))),
        }
    }

    /// An installation token for `scopes` (`POST /app/installations/{id}/access_tokens`, restricted to the
    /// target's repositories and the permissions the scopes map to). A refusal of the app itself (401, or
    /// 404: the installation is gone) is [`MintError::Refused`].
    async fn mint(&self, cx: &Cx<'_>, scopes: &[&str]) -> Result<(Minted, Value), MintError> {
        let permissions = narrowing::github_permissions(scopes);
        let mut body = json!({ "permissions": permissions });
        if !self.repositories.is_empty() {
            let names: Vec<&str> = self.repositories.iter().filter_map(|r| r.split_once('/').map(|(_, n)| n)).collect();
            body["repositories"] = json!(names);
        }
        let mut headers = github_headers(&self.jwt(cx.now_ms).map_err(MintError::Other)?);
        headers.push(("accept".into(), "application/vnd.github+json".into()));
        headers.push(("content-type".into(), "application/json".into()));
        let url = format!("{}/app/installations/{}/access_tokens", github_base(cx), self.installation_id);
        let egress = Egress::new(&*cx.env.net, &cx.env.config);
        let resp = egress
            .post("GITHUB_API_URL", Outbound { url, headers, body: body.to_string().into_bytes() })
            .await
            .map_err(|e| {
                MintError::Other(ApiError::new(Code::Conflict, format!("GitHub could not be reached: {e}")))
            })?;
        let answer = resp.json_body();
        let expires = answer["expires_at"].as_str().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
        match (resp.status, answer["token"].as_str(), expires) {
            (201, Some(token), Some(at)) => {
                let env = Map::from_iter([("GH_TOKEN".into(), json!(token)), ("GITHUB_TOKEN".into(), json!(token))]);
                Ok((Minted { env, expires_ms: at.timestamp_millis() }, json!(permissions)))
            }
            (401 | 404, _, _) => Err(MintError::Refused(github_said(&resp))),
            _ => Err(MintError::Other(ApiError::new(
                Code::Conflict,
                format!("GitHub did not mint a token for this grant: {}", github_said(&resp)),
            ))),
        }
    }
}

/// Why no credential was minted.
enum MintError {
    /// The provider refused the connection's own credentials: it must be reconnected.
    Refused(String),
    Other(ApiError),
}

/// The credential minted for `g` (reused while it has more than [`REMINT_BEFORE_MS`] left), expiring no
/// later than the grant. `session_id` is who asked, for the audit log.
pub async fn github(cx: &Cx<'_>, g: &GrantRow, app: &GithubApp, session_id: &str) -> Result<Minted, ApiError> {
    let master = cx.env.config.secrets_key.as_deref().ok_or_else(|| ApiError::cause("no SECRETS_KEY"))?;
    let aad = crate::rules::seal::grant_credential_aad(&g.workspace_id, &g.grant_id);
    let db = cx.db();
    if let Some(kept) = store::grant_credentials::get(db, &g.grant_id).await? {
        let opened = crate::rules::seal::open(master, &aad, &kept.sealed).and_then(|p| serde_json::from_str(&p).ok());
        if let (Some(minted), true) = (opened, kept.expires_ms - REMINT_BEFORE_MS > cx.now_ms) {
            return Ok(capped(minted, g));
        }
    }
    let scopes: Vec<&str> = g.scopes.split(' ').collect();
    let (minted, permissions) = match app.mint(cx, &scopes).await {
        Ok(m) => m,
        Err(MintError::Refused(said)) => {
            store::connectors::refused(db, &g.connector_id, cx.now_ms).await?;
            return Err(ApiError::new(
                Code::Forbidden,
                format!("GitHub refused the target's app credentials ({said}): reconnect the target in agentsky"),
            ));
        }
        Err(MintError::Other(e)) => return Err(e),
    };
    let sealed = crate::rules::seal::seal(master, &aad, &serde_json::to_string(&minted).map_err(ApiError::cause)?);
    store::grant_credentials::put(db, &g.grant_id, &g.workspace_id, &sealed, minted.expires_ms, cx.now_ms).await?;
    let minted = capped(minted, g);
    let detail = format!(
        "GitHub installation token for {} with {permissions}, until {}",
        if app.repositories.is_empty() {
            "every repository of the installation".to_owned()
        } else {
            app.repositories.join(", ")
        },
        crate::rules::time::iso(minted.expires_ms)
    );
    let entry = store::audit::Entry::grant(g, session_id, "credential_minted", &detail, cx.now_ms);
    store::audit::record(db, &entry).await?;
    Ok(minted)
}

/// A minted credential never outlives its grant.
fn capped(mut m: Minted, g: &GrantRow) -> Minted {
    if let Some(end) = g.expires_ms {
        m.expires_ms = m.expires_ms.min(end);
    }
    m
}

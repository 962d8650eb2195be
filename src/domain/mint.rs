//! Credentials narrowed to a grant (issue 37), minted on the server when the grant is decided and again
//! shortly before the last one expires, as Vault's dynamic secrets are: a GitHub App's installation token
//! carries only the target's repositories and the permissions the grant's scopes map to
//! ([`narrowing::github_permissions`]); an AWS role is assumed with a session policy of the grant's scopes
//! ([`narrowing::aws_session_policy`]); a Google service account generates a token per grant, read-only for
//! a read grant and downscoped to the target's buckets ([`narrowing::gcp_storage_role`]). Each expires at
//! the grant's end or the provider's own limit, whichever comes first, is sealed in `grant_credential` with
//! its grant and never logged; the audit log records each mint with the grant, what it allows and its
//! expiry.

use crate::cx::{Cx, Outbound};
use crate::egress::Egress;
use crate::error::{ApiError, Code};
use crate::rules::{jwt, narrowing, outbound, sigv4};
use crate::store::{self, requests::GrantRow};
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

/// GitHub's REST API (`GITHUB_API_URL` names another, a fake in tests).
pub const GITHUB_API: &str = "https://api.github.com";
/// A minted credential is used until this close to its expiry, then minted again.
const REMINT_BEFORE_MS: i64 = 5 * 60_000;
/// The most repositories one GitHub target names.
const MAX_REPOSITORIES: usize = 100;

/// An AWS role to assume, as sealed: the key pair that may assume it (the owner's, sealed), and per scope
/// the statements a grant's session policy allows (the defaults of [`narrowing::aws_actions`] otherwise).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AwsRole {
    pub role_arn: String,
    pub external_id: Option<String>,
    pub region: String,
    pub access_key_id: String,
    pub secret_access_key: String,
    #[serde(default)]
    pub policies: Map<String, Value>,
}

/// A Google service account, as sealed: its JSON key, and the Cloud Storage buckets the target is (a
/// grant's token is then limited to them by a Credential Access Boundary).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GcpServiceAccount {
    pub client_email: String,
    pub private_key: String,
    pub token_uri: String,
    pub project_id: Option<String>,
    #[serde(default)]
    pub buckets: Vec<String>,
}

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
        jwt::private_key(private_key)
            .await
            .map_err(|e| ApiError::invalid(format!("`credentials.private_key`: {e}")))?;
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
    async fn jwt(&self, now_ms: i64) -> Result<String, ApiError> {
        let key = jwt::private_key(&self.private_key).await.map_err(ApiError::invalid)?;
        let now = now_ms / 1000;
        let claims = json!({"iat": now - 60, "exp": now + 540, "iss": self.app_id.to_string()});
        jwt::rs256(&key, &claims).await.map_err(ApiError::invalid)
    }

    async fn find_installation(&self, cx: &Cx<'_>, repo: &str) -> Result<u64, ApiError> {
        let url = format!("{}/repos/{repo}/installation", github_base(cx));
        let egress = Egress::new(&*cx.env.net, &cx.env.config);
        let resp = egress
            .get_with("GITHUB_API_URL", &url, github_headers(&self.jwt(cx.now_ms).await?), 64 * 1024)
            .await
            .map_err(|e| {
                ApiError::new(Code::Conflict, format!("GitHub could not be asked for the app's installation: {e}"))
            })?;
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
    async fn mint(&self, cx: &Cx<'_>, scopes: &[&str]) -> Result<(Minted, String), MintError> {
        let permissions = narrowing::github_permissions(scopes);
        let mut body = json!({ "permissions": permissions });
        if !self.repositories.is_empty() {
            let names: Vec<&str> = self.repositories.iter().filter_map(|r| r.split_once('/').map(|(_, n)| n)).collect();
            body["repositories"] = json!(names);
        }
        let mut headers = github_headers(&self.jwt(cx.now_ms).await.map_err(MintError::Other)?);
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
                let repositories = match self.repositories.is_empty() {
                    true => "every repository of the installation".to_owned(),
                    false => self.repositories.join(", "),
                };
                let what = format!("GitHub installation token for {repositories} with {}", json!(permissions));
                Ok((Minted { env, expires_ms: at.timestamp_millis() }, what))
            }
            (401 | 404, _, _) => Err(MintError::Refused(github_said(&resp))),
            _ => Err(MintError::Other(ApiError::new(
                Code::Conflict,
                format!("GitHub did not mint a token for this grant: {}", github_said(&resp)),
            ))),
        }
    }
}

/// The longest and shortest an assumed role's credentials last (STS's bounds for a role's default one-hour
/// session).
const AWS_MAX_S: i64 = 3600;
const AWS_MIN_S: i64 = 900;
/// The most a session policy may be, packed (STS refuses longer ones).
const AWS_POLICY_MAX: usize = 2048;

impl AwsRole {
    /// Checks the role's shape and that its largest session policy (every scope) fits STS's limit.
    pub fn check(&self) -> Result<(), ApiError> {
        let arn = &self.role_arn;
        if !(arn.starts_with("arn:aws") && arn.contains(":role/")) {
            return Err(ApiError::invalid(
                "`credentials.role_arn` is a role's ARN, like `arn:aws:iam::123456789012:role/agents`",
            ));
        }
        if let Some(bad) =
            self.policies.iter().find(|(k, v)| !crate::rules::targets::SCOPES.contains(&k.as_str()) || !v.is_array())
        {
            return Err(ApiError::invalid(format!(
                "`credentials.policies.{}`: each key is a scope (read, write, deploy, delete) and each value a list of IAM policy statements",
                bad.0
            )));
        }
        let widest =
            narrowing::aws_session_policy(crate::rules::targets::SCOPES, &self.policies, "staging").to_string();
        if widest.len() > AWS_POLICY_MAX {
            return Err(ApiError::invalid(format!(
                "`credentials.policies` make a session policy of {} characters for every scope; STS takes at most {AWS_POLICY_MAX}",
                widest.len()
            )));
        }
        Ok(())
    }

    fn sts_url(&self, cx: &Cx<'_>) -> String {
        match cx.env.config.aws_sts_url.as_deref() {
            Some(url) => url.trim_end_matches('/').to_owned() + "/",
            None => format!("https://sts.{}.amazonaws.com/", self.region),
        }
    }

    /// `AssumeRole` for the grant: its session policy, `DurationSeconds` matched to the grant's time left
    /// (STS's bounds), the session named for the grant. A refusal of the key pair or the role
    /// (`InvalidClientTokenId`, `SignatureDoesNotMatch`, `ExpiredToken`, `AccessDenied`) is
    /// [`MintError::Refused`].
    async fn mint(&self, cx: &Cx<'_>, g: &GrantRow, scopes: &[&str], env: &str) -> Result<(Minted, String), MintError> {
        let policy = narrowing::aws_session_policy(scopes, &self.policies, env).to_string();
        let left_s = g.expires_ms.map_or(AWS_MAX_S, |e| (e - cx.now_ms) / 1000);
        let duration = left_s.clamp(AWS_MIN_S, AWS_MAX_S).to_string();
        let session = format!("agentsky-{}", g.grant_id);
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("Action", "AssumeRole").append_pair("Version", "2011-06-15");
        form.append_pair("RoleArn", &self.role_arn).append_pair("RoleSessionName", &session);
        form.append_pair("DurationSeconds", &duration).append_pair("Policy", &policy);
        if let Some(id) = &self.external_id {
            form.append_pair("ExternalId", id);
        }
        let body = form.finish().into_bytes();
        let url = self.sts_url(cx);
        let host = url::Url::parse(&url)
            .ok()
            .and_then(|u| u.host_str().map(|h| u.port().map_or_else(|| h.to_owned(), |p| format!("{h}:{p}"))))
            .unwrap_or_default();
        let mut headers = vec![
            ("content-type".to_owned(), "application/x-www-form-urlencoded; charset=utf-8".to_owned()),
            ("host".to_owned(), host),
            ("x-amz-date".to_owned(), sigv4::amz_date(cx.now_ms)),
        ];
        let signed = sigv4::Signed { method: "POST", path: "/", query: "", headers: &headers, body: &body };
        let auth = sigv4::authorization(&self.access_key_id, &self.secret_access_key, &self.region, "sts", &signed);
        headers.push(("authorization".into(), auth));
        // The fetch sets `host` itself.
        headers.retain(|(k, _)| k != "host");
        let egress = Egress::new(&*cx.env.net, &cx.env.config);
        let resp = egress.post("AWS_STS_URL", Outbound { url, headers, body }).await.map_err(|e| {
            MintError::Other(ApiError::new(Code::Conflict, format!("AWS STS could not be reached: {e}")))
        })?;
        let xml = String::from_utf8_lossy(&resp.body).into_owned();
        let tag = |name: &str| xml_text(&xml, name);
        if resp.status != 200 {
            let said = format!(
                "HTTP {}: {} {}",
                resp.status,
                tag("Code").unwrap_or_default(),
                outbound::snippet(&tag("Message").unwrap_or_default())
            );
            return Err(match tag("Code").as_deref() {
                Some("InvalidClientTokenId" | "SignatureDoesNotMatch" | "ExpiredToken" | "AccessDenied") => {
                    MintError::Refused(said)
                }
                _ => MintError::Other(ApiError::new(
                    Code::Conflict,
                    format!("AWS STS did not assume the role for this grant: {said}"),
                )),
            });
        }
        let expires = tag("Expiration").and_then(|t| chrono::DateTime::parse_from_rfc3339(&t).ok());
        let (Some(key), Some(secret), Some(token), Some(at)) =
            (tag("AccessKeyId"), tag("SecretAccessKey"), tag("SessionToken"), expires)
        else {
            return Err(MintError::Other(ApiError::new(
                Code::Conflict,
                "AWS STS answered AssumeRole without credentials",
            )));
        };
        let env = Map::from_iter([
            ("AWS_ACCESS_KEY_ID".into(), json!(key)),
            ("AWS_SECRET_ACCESS_KEY".into(), json!(secret)),
            ("AWS_SESSION_TOKEN".into(), json!(token)),
            ("AWS_REGION".into(), json!(self.region)),
            ("AWS_DEFAULT_REGION".into(), json!(self.region)),
        ]);
        let what = format!("AWS role {} assumed for {duration} s with session policy {policy}", self.role_arn);
        Ok((Minted { env, expires_ms: at.timestamp_millis() }, what))
    }
}

/// Google's OAuth token endpoint, where a service account's own key gets it a token.
const GOOGLE_TOKEN_URI: &str = "https://oauth2.googleapis.com/token";
/// The longest a generated access token lasts.
const GCP_MAX_S: i64 = 3600;

impl GcpServiceAccount {
    /// Reads a service account's JSON key (as Google hands it out) and the target's buckets.
    pub async fn from_key(key: &Value, buckets: Vec<String>) -> Result<Self, ApiError> {
        let field = |k: &str| key[k].as_str().map(str::to_owned);
        if key["type"] != "service_account" {
            return Err(ApiError::invalid(
                "`credentials.service_account` is a service account's JSON key (`\"type\": \"service_account\"`)",
            ));
        }
        let (Some(client_email), Some(private_key)) = (field("client_email"), field("private_key")) else {
            return Err(ApiError::invalid("`credentials.service_account` needs its `client_email` and `private_key`"));
        };
        jwt::private_key(&private_key)
            .await
            .map_err(|e| ApiError::invalid(format!("`credentials.service_account.private_key`: {e}")))?;
        Ok(Self {
            client_email,
            private_key,
            token_uri: field("token_uri").unwrap_or_else(|| GOOGLE_TOKEN_URI.to_owned()),
            project_id: field("project_id"),
            buckets,
        })
    }

    /// A JSON POST (or form, with `form`) to a Google API; its answer, or what Google said.
    async fn call(
        &self,
        cx: &Cx<'_>,
        what: &str,
        url: String,
        bearer: Option<&str>,
        body: String,
        form: bool,
    ) -> Result<Value, MintError> {
        let content_type = if form { "application/x-www-form-urlencoded" } else { "application/json" };
        let mut headers = vec![("content-type".to_owned(), content_type.to_owned())];
        if let Some(token) = bearer {
            headers.push(("authorization".into(), format!("Bearer {token}")));
        }
        let egress = Egress::new(&*cx.env.net, &cx.env.config);
        let resp = egress.post(what, Outbound { url, headers, body: body.into_bytes() }).await.map_err(|e| {
            MintError::Other(ApiError::new(Code::Conflict, format!("Google could not be reached: {e}")))
        })?;
        let answer = resp.json_body();
        if resp.status == 200 {
            return Ok(answer);
        }
        let said =
            match (answer["error_description"].as_str(), answer["error"]["message"].as_str(), answer["error"].as_str())
            {
                (Some(m), _, _) | (_, Some(m), _) | (_, _, Some(m)) => {
                    format!("HTTP {}: {}", resp.status, outbound::snippet(m))
                }
                _ => outbound::summary(resp.status, &resp.body),
            };
        Err(match resp.status {
            400 | 401 | 403 => MintError::Refused(said),
            _ => MintError::Other(ApiError::new(
                Code::Conflict,
                format!("Google did not mint a token for this grant: {said}"),
            )),
        })
    }

    /// The account's own token (a JWT assertion signed with its key, RFC 7523), then one generated for the
    /// grant (`generateAccessToken`: as long as the grant has left, up to an hour; read-only for a `read`
    /// grant), then, when the target names buckets, that one downscoped to them (a Credential Access
    /// Boundary through Google's STS). A refused key, account or exchange is [`MintError::Refused`].
    async fn mint(&self, cx: &Cx<'_>, g: &GrantRow, scopes: &[&str]) -> Result<(Minted, String), MintError> {
        let key = jwt::private_key(&self.private_key).await.map_err(|e| MintError::Other(ApiError::invalid(e)))?;
        let now = cx.now_ms / 1000;
        let claims = json!({"iss": self.client_email, "scope": "https://www.googleapis.com/auth/cloud-platform",
            "aud": self.token_uri, "iat": now, "exp": now + 3600});
        let assertion = jwt::rs256(&key, &claims).await.map_err(|e| MintError::Other(ApiError::invalid(e)))?;
        let form = form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer")
            .append_pair("assertion", &assertion)
            .finish();
        let own = self.call(cx, "the service account's token_uri", self.token_uri.clone(), None, form, true).await?;
        let own = own["access_token"].as_str().unwrap_or_default().to_owned();
        let lifetime = g.expires_ms.map_or(GCP_MAX_S, |e| (e - cx.now_ms) / 1000).clamp(1, GCP_MAX_S);
        let oauth_scope = narrowing::gcp_oauth_scope(scopes);
        let iam = cx
            .env
            .config
            .gcp_iam_url
            .as_deref()
            .unwrap_or("https://iamcredentials.googleapis.com")
            .trim_end_matches('/');
        let url = format!("{iam}/v1/projects/-/serviceAccounts/{}:generateAccessToken", self.client_email);
        let body = json!({"scope": [oauth_scope], "lifetime": format!("{lifetime}s")}).to_string();
        let generated = self.call(cx, "GCP_IAM_URL", url, Some(&own), body, false).await?;
        let expires = generated["expireTime"].as_str().and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok());
        let (Some(mut token), Some(at)) = (generated["accessToken"].as_str().map(str::to_owned), expires) else {
            return Err(MintError::Other(ApiError::new(
                Code::Conflict,
                "Google answered generateAccessToken without a token",
            )));
        };
        let mut what = format!("Google token of {} with {oauth_scope} for {lifetime} s", self.client_email);
        if !self.buckets.is_empty() {
            let role = narrowing::gcp_storage_role(scopes);
            let rules: Vec<Value> = self
                .buckets
                .iter()
                .map(|b| {
                    json!({
                        "availableResource": format!("//storage.googleapis.com/projects/_/buckets/{b}"),
                        "availablePermissions": [role],
                    })
                })
                .collect();
            let options = json!({"accessBoundary": {"accessBoundaryRules": rules}}).to_string();
            let form = form_urlencoded::Serializer::new(String::new())
                .append_pair("grant_type", "urn:ietf:params:oauth:grant-type:token-exchange")
                .append_pair("subject_token_type", "urn:ietf:params:oauth:token-type:access_token")
                .append_pair("requested_token_type", "urn:ietf:params:oauth:token-type:access_token")
                .append_pair("subject_token", &token)
                .append_pair("options", &options)
                .finish();
            let sts =
                cx.env.config.gcp_sts_url.as_deref().unwrap_or("https://sts.googleapis.com").trim_end_matches('/');
            let down = self.call(cx, "GCP_STS_URL", format!("{sts}/v1/token"), None, form, true).await?;
            token = down["access_token"].as_str().unwrap_or_default().to_owned();
            what.push_str(&format!(", downscoped to buckets {} with {role}", self.buckets.join(", ")));
        }
        let mut env = Map::from_iter([("CLOUDSDK_AUTH_ACCESS_TOKEN".into(), json!(token))]);
        if let Some(project) = &self.project_id {
            env.insert("CLOUDSDK_CORE_PROJECT".into(), json!(project));
            env.insert("GOOGLE_CLOUD_PROJECT".into(), json!(project));
        }
        Ok((Minted { env, expires_ms: at.timestamp_millis() }, what))
    }
}

/// The text of the first `<name>…</name>` in an STS answer (its values hold no markup).
fn xml_text(xml: &str, name: &str) -> Option<String> {
    let start = xml.find(&format!("<{name}>"))? + name.len() + 2;
    let end = start + xml[start..].find(&format!("</{name}>"))?;
    Some(xml[start..end].trim().to_owned())
}

/// Why no credential was minted.
enum MintError {
    /// The provider refused the connection's own credentials: it must be reconnected.
    Refused(String),
    Other(ApiError),
}

/// A connection that mints a credential per grant.
pub enum Narrowing<'a> {
    Github(&'a GithubApp),
    Aws(&'a AwsRole),
    Gcp(&'a GcpServiceAccount),
}

/// The credential minted for `g` (reused while it has more than [`REMINT_BEFORE_MS`] left), expiring no
/// later than the grant. `session_id` is who asked, for the audit log.
pub async fn for_grant(cx: &Cx<'_>, g: &GrantRow, from: Narrowing<'_>, session_id: &str) -> Result<Minted, ApiError> {
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
    let (provider, minted) = match from {
        Narrowing::Github(app) => ("GitHub", app.mint(cx, &scopes).await),
        Narrowing::Aws(role) => {
            let env = store::connectors::get(db, &g.connector_id).await?.map(|c| c.env).unwrap_or_default();
            ("AWS STS", role.mint(cx, g, &scopes, &env).await)
        }
        Narrowing::Gcp(account) => ("Google", account.mint(cx, g, &scopes).await),
    };
    let (minted, what) = match minted {
        Ok(m) => m,
        Err(MintError::Refused(said)) => {
            store::connectors::refused(db, &g.connector_id, cx.now_ms).await?;
            return Err(ApiError::new(
                Code::Forbidden,
                format!("{provider} refused the target's credentials ({said}): reconnect the target in agentsky"),
            ));
        }
        Err(MintError::Other(e)) => return Err(e),
    };
    let sealed = crate::rules::seal::seal(master, &aad, &serde_json::to_string(&minted).map_err(ApiError::cause)?);
    store::grant_credentials::put(db, &g.grant_id, &g.workspace_id, &sealed, minted.expires_ms, cx.now_ms).await?;
    let minted = capped(minted, g);
    let detail = format!("{what}, for scopes {}, until {}", g.scopes, crate::rules::time::iso(minted.expires_ms));
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

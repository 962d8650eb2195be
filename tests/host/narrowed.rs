//! Issue 37: a grant on a GitHub App target gets its own installation token, restricted to the target's
//! repositories and the permissions its scopes map to, expiring with the grant or the token's hour; a
//! connection that cannot narrow says so; a refusal of the app's credentials turns the target `expired`
//! until it is reconnected. The GitHub REST API is a fake that checks the app's JWT as GitHub does.

use crate::support::TestApp;
use agentsky::cx::{Config, Outbound};
use agentsky::http::HttpResponse;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use rsa::pkcs1::DecodeRsaPrivateKey;
use rsa::pkcs1v15::{Signature, VerifyingKey};
use rsa::pkcs8::DecodePrivateKey;
use rsa::signature::Verifier;
use serde_json::{json, Value};
use sha2::Sha256;
use std::cell::{Cell, RefCell};
use std::rc::Rc;

const GITHUB: &str = "https://github.example";
const KEY: &str = include_str!("../fixtures/github-app-test-key.pem");

/// What the fake GitHub saw: each token request's body, and whether it refuses the app now.
#[derive(Clone, Default)]
struct Fake {
    minted: Rc<RefCell<Vec<Value>>>,
    refuse: Rc<Cell<bool>>,
}

/// GitHub's two endpoints an app uses here, each refusing a request whose JWT is not the app's own
/// (RS256 over the app's key, `iss` the app id, valid now for at most ten minutes).
fn github(app: &TestApp) -> Fake {
    let fake = Fake::default();
    let seen = fake.clone();
    let public = rsa::RsaPrivateKey::from_pkcs1_pem(KEY.trim()).unwrap().to_public_key();
    let now = app.now_ms.clone();
    app.sessions.net.answer(move |req: &Outbound| {
        let reply = |status: u16, v: Value| HttpResponse::json(status, &v);
        let auth = req.headers.iter().find(|(k, _)| k == "authorization").map(|(_, v)| v.as_str()).unwrap_or("");
        let parts: Vec<&str> = auth.strip_prefix("Bearer ").unwrap_or("").split('.').collect();
        let signed = parts.len() == 3 && {
            let sig = URL_SAFE_NO_PAD.decode(parts[2]).ok().and_then(|s| Signature::try_from(s.as_slice()).ok());
            sig.is_some_and(|s| {
                VerifyingKey::<Sha256>::new(public.clone()).verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &s).is_ok()
            })
        };
        let claims: Value =
            parts.get(1).and_then(|p| URL_SAFE_NO_PAD.decode(p).ok()).and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
        let t = now.get() / 1000;
        let fresh = claims["iat"].as_i64().is_some_and(|i| i <= t) && claims["exp"].as_i64().is_some_and(|e| e > t && e - t <= 600);
        if !signed || claims["iss"] != "7" || !fresh || seen.refuse.get() {
            return reply(401, json!({"message": "A JSON web token could not be decoded"}));
        }
        let path = req.url.strip_prefix(GITHUB).unwrap_or(&req.url);
        match path {
            "/repos/acme/web/installation" => reply(200, json!({"id": 42, "app_id": 7})),
            "/app/installations/42/access_tokens" => {
                let body: Value = serde_json::from_slice(&req.body).unwrap();
                seen.minted.borrow_mut().push(body.clone());
                let n = seen.minted.borrow().len();
                let expires = agentsky::rules::time::iso(now.get() + 3_600_000);
                reply(201, json!({"token": format!("ghs_minted{n}"), "expires_at": expires, "permissions": body["permissions"]}))
            }
            _ => reply(404, json!({"message": "Not Found"})),
        }
    });
    fake
}

fn app() -> TestApp {
    TestApp::with_config(Config {
        secrets_key: Some("test-master-key".into()),
        github_api_url: Some(GITHUB.into()),
        ..TestApp::config()
    })
}

/// A read grant on `target` (a policy allows it) for a new echo session's agent: the session's token, the
/// grant and the credential `get_credential` hands over.
fn read_credential(app: &TestApp, key: &str, connector_id: &str, target: &str) -> (String, Value, Value) {
    app.ok(key, "set_policy", json!({"connector_id": connector_id, "scope": "read", "decision": "allow"}));
    let (_, sid) = app.echo_session(key, "hi");
    let token = app.session_token(key, &sid);
    let grant =
        app.agent_ok(&token, "request_access", json!({"target": target, "scope": ["read"], "reason": "read it"}));
    let cred = app.agent_ok(&token, "get_credential", json!({"grantId": grant["grantId"]}));
    (token, grant, cred)
}

#[test]
fn a_grant_on_a_github_app_target_gets_a_token_for_its_scopes_and_repositories_only() {
    let app = app();
    let fake = github(&app);
    let ada = app.signup("Ada", "ada@example.com");
    let creds = json!({"app_id": 7, "private_key": KEY, "repositories": ["acme/web"]});
    let repo = app.ok(
        &ada.key,
        "connect_target",
        json!({"name": "repo", "provider": "github", "env": "scm", "credentials": creds}),
    );
    assert_eq!(
        (repo["scoped"].as_bool(), repo["credential_kind"].as_str()),
        (Some(true), Some("github_app")),
        "{repo}"
    );
    assert!(!repo.to_string().contains("PRIVATE KEY"), "the key is never echoed");
    let pat = json!({"env": {"GH_TOKEN": "ghp_personal"}});
    let other = app.ok(
        &ada.key,
        "connect_target",
        json!({"name": "old", "provider": "github", "env": "scm", "credentials": pat}),
    );
    assert_eq!(other["scoped"], false);
    assert!(other["unscoped_reason"].as_str().unwrap().contains("connect a GitHub App"), "{other}");
    let id = repo["connector_id"].as_str().unwrap().to_owned();
    for scope in ["read", "write"] {
        app.ok(&ada.key, "set_policy", json!({"connector_id": id, "scope": scope, "decision": "allow"}));
    }

    let (_, sid) = app.echo_session(&ada.key, "hi");
    let token = app.session_token(&ada.key, &sid);
    let targets = app.agent_ok(&token, "list_targets", json!({}));
    let listed = |name: &str| targets.as_array().unwrap().iter().find(|t| t["name"] == name).unwrap().clone();
    assert_eq!(listed("repo")["scoped"], true);
    assert_eq!(listed("old")["scoped"], false, "{targets}");
    let grant =
        app.agent_ok(&token, "request_access", json!({"target": "repo", "scope": ["read"], "reason": "read the code"}));
    let grant_id = grant["grantId"].as_str().unwrap().to_owned();
    let cred = app.agent_ok(&token, "get_credential", json!({"grantId": grant_id}));
    assert_eq!(
        (cred["scoped"].as_bool(), cred["env"]["GH_TOKEN"].as_str()),
        (Some(true), Some("ghs_minted1")),
        "{cred}"
    );
    assert_eq!(cred["env"]["GITHUB_TOKEN"], "ghs_minted1");
    assert_eq!(
        fake.minted.borrow()[0],
        json!({"repositories": ["web"], "permissions": {"contents": "read", "metadata": "read"}}),
        "read: contents and metadata, read only, on the target's repository"
    );
    assert_eq!(cred["expiresAt"], app.now_ms.get() + 3_600_000, "the token's hour (the grant has no end)");
    // Used again: the same token, not another mint.
    let again = app.agent_ok(&token, "get_credential", json!({"grantId": grant_id}));
    assert_eq!(again["env"]["GH_TOKEN"], "ghs_minted1");
    assert_eq!(fake.minted.borrow().len(), 1);
    // Close to its end it is minted again.
    app.advance(56 * 60_000);
    let later = app.agent_ok(&token, "get_credential", json!({"grantId": grant_id}));
    assert_eq!(later["env"]["GH_TOKEN"], "ghs_minted2");

    let write = app.agent_ok(&token, "request_access", json!({"target": "repo", "scope": ["write"], "reason": "push"}));
    app.agent_ok(&token, "get_credential", json!({"grantId": write["grantId"]}));
    assert_eq!(
        fake.minted.borrow()[2]["permissions"],
        json!({"contents": "write", "metadata": "read", "pull_requests": "write"})
    );
    // Every mint is in the audit log with its grant, permissions and expiry, never the token.
    let audit = app.request("GET", "/v1/audit", Some(&ada.key), None).json_body();
    let mints: Vec<&Value> =
        audit["entries"].as_array().unwrap().iter().filter(|e| e["action"] == "credential_minted").collect();
    assert_eq!(mints.len(), 3, "{audit}");
    let detail = mints.iter().find(|e| e["grant_id"] == grant_id.as_str()).unwrap()["detail"].as_str().unwrap();
    assert!(
        detail.contains("acme/web")
            && detail.contains("\"contents\":\"read\"")
            && detail.contains("for scopes read, until 20"),
        "{detail}"
    );
    assert!(!audit.to_string().contains("ghs_minted"), "no token in the audit log");
}

#[test]
fn a_refused_app_turns_its_target_expired_until_it_is_reconnected_in_place() {
    let app = app();
    let fake = github(&app);
    let ada = app.signup("Ada", "ada@example.com");
    let creds = json!({"app_id": 7, "private_key": KEY, "installation_id": 42});
    let repo = app.ok(
        &ada.key,
        "connect_target",
        json!({"name": "repo", "provider": "github", "env": "scm", "credentials": creds.clone()}),
    );
    let id = repo["connector_id"].as_str().unwrap().to_owned();
    app.ok(&ada.key, "set_policy", json!({"connector_id": id, "scope": "read", "decision": "allow"}));
    let (_, sid) = app.echo_session(&ada.key, "hi");
    let token = app.session_token(&ada.key, &sid);
    let grant = app.agent_ok(&token, "request_access", json!({"target": "repo", "scope": ["read"], "reason": "r"}));
    assert_eq!(fake.minted.borrow().len(), 1, "minted when the grant became active");

    // Near its end the token is minted again, and the app is refused now.
    fake.refuse.set(true);
    app.advance(56 * 60_000);
    let refused = app.agent_err(&token, "get_credential", json!({"grantId": grant["grantId"]}));
    assert!(refused.contains("GitHub refused") && refused.contains("reconnect"), "{refused}");
    let targets = app.agent_ok(&token, "list_targets", json!({}));
    assert_eq!(targets[0]["lockState"], "expired", "{targets}");
    let again = app.agent_err(&token, "request_access", json!({"target": "repo", "scope": ["read"], "reason": "r"}));
    assert!(again.contains("reconnect"), "{again}");

    // Reconnected in place: the same target and its policies, working again.
    fake.refuse.set(false);
    let back = app.ok(
        &ada.key,
        "connect_target",
        json!({"name": "repo", "provider": "github", "env": "scm", "credentials": creds}),
    );
    assert_eq!(back["connector_id"], id.as_str());
    let grant = app.agent_ok(&token, "request_access", json!({"target": "repo", "scope": ["read"], "reason": "r"}));
    assert_eq!(grant["status"], "active", "the policy stayed: {grant}");
    let cred = app.agent_ok(&token, "get_credential", json!({"grantId": grant["grantId"]}));
    assert_eq!(cred["scoped"], true);
}

#[test]
fn a_github_app_that_cannot_work_is_refused_when_it_is_connected() {
    let app = app();
    github(&app);
    let ada = app.signup("Ada", "ada@example.com");
    let connect = |creds: Value| {
        let r = app.call(
            &ada.key,
            "connect_target",
            json!({"name": "repo", "provider": "github", "env": "scm", "credentials": creds}),
        );
        TestApp::tool_error(&r)["message"].as_str().unwrap().to_owned()
    };
    assert!(connect(json!({"app_id": 7, "private_key": "not a key", "installation_id": 1}))
        .contains("`credentials.private_key`"));
    assert!(connect(json!({"app_id": 7, "private_key": KEY})).contains("`credentials.installation_id`"));
    assert!(
        connect(json!({"app_id": 7, "private_key": KEY, "repositories": ["acme/other"]})).contains("no installation")
    );
    assert!(
        connect(json!({"app_id": 7, "private_key": KEY, "repositories": ["acme/web", "zed/x"]})).contains("one owner")
    );
    assert!(connect(json!({"private_key": KEY, "installation_id": 1})).contains("`credentials.app_id`"));
    let on_vercel = app.call(&ada.key, "connect_target", json!({"name": "web", "provider": "vercel", "env": "prod", "credentials": {"app_id": 7, "private_key": KEY, "installation_id": 1}}));
    assert!(TestApp::tool_error(&on_vercel)["message"].as_str().unwrap().contains("for github"));
}

const STS: &str = "https://sts.example";
const AWS_SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

/// AWS STS's `AssumeRole` query API: a request signed with SigV4 by the connection's key pair, its form
/// fields as AWS documents them, answered in STS's XML (or its error XML).
/// The form fields of each `AssumeRole` the fake STS answered.
type Forms = Rc<RefCell<Vec<Vec<(String, String)>>>>;

fn sts(app: &TestApp, refuse: Rc<Cell<bool>>) -> Forms {
    let seen: Forms = Rc::default();
    let kept = seen.clone();
    let now = app.now_ms.clone();
    app.sessions.net.answer(move |req: &Outbound| {
        let xml = |status: u16, body: String| {
            let mut r = HttpResponse::json(status, &json!({}));
            r.body = body.into_bytes();
            r
        };
        let header = |name: &str| req.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_default();
        let host = req.url.strip_prefix("https://").unwrap_or("").trim_end_matches('/').to_owned();
        let mut signed: Vec<(String, String)> = req.headers.iter().filter(|(k, _)| k != "authorization").cloned().collect();
        signed.push(("host".into(), host));
        let want = agentsky::rules::sigv4::authorization(
            "AKIAAGENTSKYEXAMPLE",
            AWS_SECRET,
            "eu-west-1",
            "sts",
            &agentsky::rules::sigv4::Signed { method: "POST", path: "/", query: "", headers: &signed, body: &req.body },
        );
        if refuse.get() || header("authorization") != want {
            return xml(403, "<ErrorResponse><Error><Type>Sender</Type><Code>InvalidClientTokenId</Code><Message>The security token included in the request is invalid.</Message></Error></ErrorResponse>".into());
        }
        let form: Vec<(String, String)> = form_urlencoded::parse(&req.body).into_owned().collect();
        kept.borrow_mut().push(form);
        let expires = agentsky::rules::time::iso(now.get() + 3_600_000);
        xml(200, format!("<AssumeRoleResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><AssumeRoleResult><Credentials><AccessKeyId>ASIAMINTED{n}</AccessKeyId><SecretAccessKey>minted-secret</SecretAccessKey><SessionToken>minted-session-token</SessionToken><Expiration>{expires}</Expiration></Credentials><AssumedRoleUser><Arn>arn:aws:sts::123456789012:assumed-role/agents/x</Arn></AssumedRoleUser></AssumeRoleResult></AssumeRoleResponse>", n = kept.borrow().len()))
    });
    seen
}

#[test]
fn a_grant_on_an_aws_role_target_assumes_the_role_with_a_session_policy_of_its_scopes() {
    let app = TestApp::with_config(Config {
        secrets_key: Some("test-master-key".into()),
        aws_sts_url: Some(STS.into()),
        ..TestApp::config()
    });
    let refuse = Rc::new(Cell::new(false));
    let seen = sts(&app, refuse.clone());
    let ada = app.signup("Ada", "ada@example.com");
    let creds = json!({"role_arn": "arn:aws:iam::123456789012:role/agents", "external_id": "ext-1", "region": "eu-west-1",
        "access_key_id": "AKIAAGENTSKYEXAMPLE", "secret_access_key": AWS_SECRET});
    let cloud = app.ok(
        &ada.key,
        "connect_target",
        json!({"name": "cloud", "provider": "aws", "env": "staging", "credentials": creds}),
    );
    assert_eq!(
        (cloud["scoped"].as_bool(), cloud["credential_kind"].as_str()),
        (Some(true), Some("aws_role")),
        "{cloud}"
    );
    assert!(!cloud.to_string().contains(AWS_SECRET));
    let (token, grant, cred) = read_credential(&app, &ada.key, cloud["connector_id"].as_str().unwrap(), "cloud");
    assert_eq!(cred["scoped"], true);
    assert_eq!(cred["env"]["AWS_ACCESS_KEY_ID"], "ASIAMINTED1");
    assert_eq!(
        (cred["env"]["AWS_SESSION_TOKEN"].as_str(), cred["env"]["AWS_REGION"].as_str()),
        (Some("minted-session-token"), Some("eu-west-1"))
    );
    let form = seen.borrow()[0].clone();
    let field = |k: &str| form.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_default();
    assert_eq!((field("Action").as_str(), field("Version").as_str()), ("AssumeRole", "2011-06-15"));
    assert_eq!(field("RoleArn"), "arn:aws:iam::123456789012:role/agents");
    assert_eq!(field("ExternalId"), "ext-1");
    assert_eq!(field("RoleSessionName"), format!("agentsky-{}", grant["grantId"].as_str().unwrap()));
    assert_eq!(field("DurationSeconds"), "3600", "the grant has no end: STS's hour");
    let policy: Value = serde_json::from_str(&field("Policy")).unwrap();
    let actions = policy["Statement"][0]["Action"].to_string();
    assert!(actions.contains("s3:List*") && !actions.contains("Put") && !actions.contains("Delete"), "{policy}");

    // Near the credentials' end they are minted again; the key pair is refused now: the target is expired
    // until reconnected.
    refuse.set(true);
    app.advance(56 * 60_000);
    let refused = app.agent_err(&token, "get_credential", json!({"grantId": grant["grantId"]}));
    assert!(
        refused.contains("AWS STS refused")
            && refused.contains("InvalidClientTokenId")
            && refused.contains("reconnect"),
        "{refused}"
    );
    assert_eq!(app.agent_ok(&token, "list_targets", json!({}))[0]["lockState"], "expired");
}

#[test]
fn an_aws_role_that_cannot_work_is_refused_when_it_is_connected() {
    let app = app();
    let ada = app.signup("Ada", "ada@example.com");
    let connect = |creds: Value| {
        let r = app.call(
            &ada.key,
            "connect_target",
            json!({"name": "cloud", "provider": "aws", "env": "prod", "credentials": creds}),
        );
        TestApp::tool_error(&r)["message"].as_str().unwrap().to_owned()
    };
    let base = json!({"role_arn": "arn:aws:iam::1:role/agents", "region": "eu-west-1", "access_key_id": "AKIAAGENTSKYEXAMPLE", "secret_access_key": AWS_SECRET});
    let with = |k: &str, v: Value| {
        let mut c = base.clone();
        c[k] = v;
        c
    };
    assert!(connect(with("role_arn", json!("arn:aws:iam::1:user/someone"))).contains("`credentials.role_arn`"));
    assert!(connect(json!({"role_arn": "arn:aws:iam::1:role/agents", "region": "eu-west-1"}))
        .contains("`credentials.access_key_id`"));
    assert!(connect(with("policies", json!({"admin": []}))).contains("`credentials.policies.admin`"));
    let huge: Vec<Value> =
        (0..80).map(|i| json!({"Effect": "Allow", "Action": format!("s3:GetObject{i}"), "Resource": "*"})).collect();
    assert!(connect(with("policies", json!({"read": huge}))).contains("at most 2048"));
}

const GOOGLE: &str = "https://google.example";
const SA_KEY: &str = include_str!("../fixtures/gcp-service-account-test-key.pem");

/// Google's three endpoints a service account's grant goes through: the token endpoint (a JWT assertion
/// signed with the account's key, RFC 7523), IAM Credentials' `generateAccessToken` (with that token) and
/// STS's token exchange with a Credential Access Boundary.
fn google(app: &TestApp) -> Rc<RefCell<Vec<(String, Value)>>> {
    let seen: Rc<RefCell<Vec<(String, Value)>>> = Rc::default();
    let kept = seen.clone();
    let public = rsa::RsaPrivateKey::from_pkcs8_pem(SA_KEY.trim()).unwrap().to_public_key();
    let now = app.now_ms.clone();
    app.sessions.net.answer(move |req: &Outbound| {
        let reply = |status: u16, v: Value| HttpResponse::json(status, &v);
        let path = req.url.strip_prefix(GOOGLE).unwrap_or(&req.url).to_owned();
        let form: Value = form_urlencoded::parse(&req.body).into_owned().map(|(k, v)| (k, json!(v))).collect::<serde_json::Map<_, _>>().into();
        let bearer = req.headers.iter().find(|(k, _)| k == "authorization").map(|(_, v)| v.clone()).unwrap_or_default();
        match path.as_str() {
            "/token" => {
                let parts: Vec<String> = form["assertion"].as_str().unwrap_or("").split('.').map(str::to_owned).collect();
                let ok = parts.len() == 3 && {
                    let sig = URL_SAFE_NO_PAD.decode(&parts[2]).ok().and_then(|s| Signature::try_from(s.as_slice()).ok());
                    sig.is_some_and(|s| VerifyingKey::<Sha256>::new(public.clone()).verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &s).is_ok())
                };
                let claims: Value = parts.get(1).and_then(|p| URL_SAFE_NO_PAD.decode(p).ok()).and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default();
                if !ok || claims["iss"] != "agents@proj.iam.gserviceaccount.com" || claims["aud"] != format!("{GOOGLE}/token") {
                    return reply(400, json!({"error": "invalid_grant", "error_description": "Invalid JWT Signature."}));
                }
                reply(200, json!({"access_token": "ya29.own", "expires_in": 3599, "token_type": "Bearer"}))
            }
            "/v1/projects/-/serviceAccounts/agents@proj.iam.gserviceaccount.com:generateAccessToken" => {
                if bearer != "Bearer ya29.own" {
                    return reply(401, json!({"error": {"code": 401, "message": "Request had invalid authentication credentials."}}));
                }
                let body: Value = serde_json::from_slice(&req.body).unwrap();
                kept.borrow_mut().push(("generate".into(), body.clone()));
                let secs: i64 = body["lifetime"].as_str().unwrap().trim_end_matches('s').parse().unwrap();
                reply(200, json!({"accessToken": "ya29.grant", "expireTime": agentsky::rules::time::iso(now.get() + secs * 1000)}))
            }
            "/v1/token" => {
                kept.borrow_mut().push(("exchange".into(), form.clone()));
                reply(200, json!({"access_token": "ya29.downscoped", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token", "token_type": "Bearer", "expires_in": 3000}))
            }
            _ => reply(404, json!({"error": {"message": "not found"}})),
        }
    });
    seen
}

#[test]
fn a_grant_on_a_service_account_target_gets_a_token_of_its_own_read_only_and_limited_to_its_buckets() {
    let app = TestApp::with_config(Config {
        secrets_key: Some("test-master-key".into()),
        gcp_iam_url: Some(GOOGLE.into()),
        gcp_sts_url: Some(GOOGLE.into()),
        ..TestApp::config()
    });
    let seen = google(&app);
    let ada = app.signup("Ada", "ada@example.com");
    let key = json!({"type": "service_account", "project_id": "proj", "client_email": "agents@proj.iam.gserviceaccount.com",
        "private_key": SA_KEY, "token_uri": format!("{GOOGLE}/token")});
    let creds = json!({"service_account": key, "buckets": ["proj-assets"]});
    let bucket = app.ok(
        &ada.key,
        "connect_target",
        json!({"name": "assets", "provider": "gcp", "env": "prod", "credentials": creds}),
    );
    assert_eq!(
        (bucket["scoped"].as_bool(), bucket["credential_kind"].as_str()),
        (Some(true), Some("gcp_service_account"))
    );
    assert!(!bucket.to_string().contains("PRIVATE KEY"));
    let (_, _, cred) = read_credential(&app, &ada.key, bucket["connector_id"].as_str().unwrap(), "assets");
    assert_eq!(
        (cred["scoped"].as_bool(), cred["env"]["CLOUDSDK_AUTH_ACCESS_TOKEN"].as_str()),
        (Some(true), Some("ya29.downscoped"))
    );
    assert_eq!(cred["env"]["CLOUDSDK_CORE_PROJECT"], "proj");
    let calls = seen.borrow();
    assert_eq!(
        calls[0].1["scope"],
        json!(["https://www.googleapis.com/auth/cloud-platform.read-only"]),
        "read-only for read"
    );
    let lifetime: i64 = calls[0].1["lifetime"].as_str().unwrap().trim_end_matches('s').parse().unwrap();
    assert!((1..=3600).contains(&lifetime), "as long as the grant, an hour at most: {lifetime}");
    let options: Value = serde_json::from_str(calls[1].1["options"].as_str().unwrap()).unwrap();
    assert_eq!(
        options["accessBoundary"]["accessBoundaryRules"][0],
        json!({"availableResource": "//storage.googleapis.com/projects/_/buckets/proj-assets", "availablePermissions": ["inRole:roles/storage.objectViewer"]})
    );
    assert_eq!(calls[1].1["subject_token"], "ya29.grant");
}

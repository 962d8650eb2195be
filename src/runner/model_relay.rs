//! The model relay of hosted sandboxes (`/v1/runner/model/<api>/…`): a sandbox's coding agent CLI calls
//! its model here with the sandbox's runner token as its key ([`ModelApi::cli_env`]), and the relay sends
//! the request on to the workspace's endpoint (its `ANTHROPIC_BASE_URL` or `OPENAI_BASE_URL` secret, else
//! the provider's API) with the workspace's key, through the outbound rule: model calls (POST) and
//! listings (GET). The key never enters the sandbox, so nothing the agent runs there can read it; the
//! answer comes back whole.

use crate::cx::{Cx, Outbound};
use crate::egress::Egress;
use crate::error::{ApiError, Code};
use crate::http::{HttpRequest, HttpResponse};
use crate::rules::placement::ModelApi;
use crate::store::runners::RunnerRow;

/// Request headers the relay does not pass on: the sandbox's credentials, and the hop's own (with the
/// platform's `cf-*` and `x-forwarded-*`).
const DROPPED: &[&str] = &["authorization", "x-api-key", "host", "content-length", "connection", "cookie"];
/// The most of a GET's answer it passes back.
const MAX_GET_BYTES: usize = 1 << 20;
/// Answer headers it does not pass back.
const NOT_BACK: &[&str] = &["set-cookie", "content-length", "content-encoding", "transfer-encoding", "connection"];

/// Relays `req` (its path after the relay's prefix is `rest`) for `runner`, a hosted sandbox's.
pub async fn relay(cx: &Cx<'_>, runner: &RunnerRow, req: &HttpRequest, rest: &str) -> Result<HttpResponse, ApiError> {
    if runner.session_id.is_none() {
        return Err(ApiError::new(
            Code::Forbidden,
            "the model relay is for hosted sandboxes: a person's runner calls its model with its own key",
        ));
    }
    let (name, path) = rest.split_once('/').map_or((rest, String::new()), |(n, p)| (n, format!("/{p}")));
    let api = ModelApi::named(name).ok_or_else(|| {
        ApiError::new(Code::NotFound, format!("no model API `{name}`: the relay serves anthropic and openai"))
    })?;
    if !matches!(req.method.as_str(), "POST" | "GET") {
        return Err(ApiError::invalid(format!("the model relay passes on POST and GET requests, not {}", req.method)));
    }
    let (db, config, ws) = (cx.db(), &cx.env.config, runner.workspace_id.as_str());
    let opened = |name| crate::domain::secrets::open(db, config, ws, name);
    let (key, base) = futures::try_join!(opened(api.key_secret), opened(api.base_secret)).map_err(ApiError::cause)?;
    let key = key.ok_or_else(|| {
        ApiError::new(
            Code::NotFound,
            format!(
                "this workspace has no {0} secret: set it with PUT /v1/secrets/{0}. Hosted agents call their model \
                 with it through agentsky, and it never enters their sandbox",
                api.key_secret
            ),
        )
    })?;
    let query = if req.query.is_empty() { String::new() } else { format!("?{}", req.query) };
    let passed = |k: &str| {
        let k = k.to_ascii_lowercase();
        !DROPPED.contains(&k.as_str()) && !k.starts_with("cf-") && !k.starts_with("x-forwarded-")
    };
    let mut headers: Vec<(String, String)> = req.headers.iter().filter(|(k, _)| passed(k)).cloned().collect();
    headers.push(api.key(&key));
    let url = api.upstream(base.as_deref(), &format!("{path}{query}"));
    let egress = Egress::new(&*cx.env.net, config);
    let answered = match req.method.as_str() {
        // A listing (`/models`), not a model call: a bounded answer.
        "GET" => egress.get_with(api.base_secret, &url, headers, MAX_GET_BYTES).await,
        _ => egress.post(api.base_secret, Outbound { url, headers, body: req.body.clone() }).await,
    };
    // The CLI shows a failure to the person, in the relay's words (the outbound rule's or the network's,
    // which never quote the key).
    let failed = |why: String| {
        HttpResponse::json(502, &serde_json::json!({ "error": { "code": "bad_gateway", "message": why } }))
    };
    Ok(match answered {
        Ok(resp) if req.method == "GET" && resp.body.len() > MAX_GET_BYTES => {
            failed(format!("the model endpoint's listing is over {MAX_GET_BYTES} bytes"))
        }
        Ok(mut resp) => {
            resp.headers.retain(|(k, _)| !NOT_BACK.contains(&k.to_ascii_lowercase().as_str()));
            resp
        }
        Err(e) => failed(format!("the model endpoint ({}): {e}", api.base_secret)),
    })
}

//! The Worker's one door to URLs a tenant chose (a model endpoint, an agent's remote MCP servers): each
//! request's URL passes the outbound rule ([`crate::rules::outbound`]) before anything is sent, and a
//! redirect is followed only within the same origin, with the same method and body (307, 308), a few
//! times at most. Anything else a tenant's server answers with a redirect is refused, so it cannot steer
//! the Worker (and the credentials it sends) to another host.

use crate::cx::{Config, Net, Outbound};
use crate::http::HttpResponse;
use crate::rules::{outbound, redact};

/// Same-origin redirects followed for one request.
const MAX_REDIRECTS: usize = 3;

/// [`Net`] for tenant URLs, under the deployment's outbound rule.
pub struct Egress<'a> {
    net: &'a dyn Net,
    loopback_http: bool,
}

impl<'a> Egress<'a> {
    pub fn new(net: &'a dyn Net, config: &Config) -> Self {
        Self { net, loopback_http: config.allow_loopback_http }
    }

    /// POSTs `out`; `what` names where its URL came from (`OPENAI_BASE_URL`, `mcpServers[].url`) in errors.
    pub async fn post(&self, what: &str, mut out: Outbound) -> Result<HttpResponse, String> {
        let mut url = outbound::check(what, &out.url, self.loopback_http)?;
        for _ in 0..=MAX_REDIRECTS {
            out.url = url.to_string();
            // A failed fetch says why in its own words, which may quote the URL: summarized like an answer.
            let resp = self.net.post(out.clone()).await.map_err(|e| outbound::snippet(&e))?;
            if !matches!(resp.status, 301 | 302 | 303 | 307 | 308) {
                return Ok(resp);
            }
            let location = resp.header("location").unwrap_or_default();
            match (resp.status, outbound::same_origin(&url, location)) {
                (307 | 308, Some(next)) => url = outbound::check(what, next.as_str(), self.loopback_http)?,
                _ => {
                    let shown: String = redact::redact(location).chars().take(100).collect();
                    return Err(format!(
                        "`{what}` answered with a redirect (HTTP {}) to {shown:?}; only redirects within the same origin that keep the request (307, 308) are followed",
                        resp.status
                    ));
                }
            }
        }
        Err(format!("`{what}` redirected more than {MAX_REDIRECTS} times"))
    }
}

impl Egress<'_> {
    /// GETs `raw` (`what` names it in errors) under the outbound rule. A redirect is refused: what is
    /// fetched this way (an OAuth client's metadata document) must be served at the URL that names it.
    /// At most `max_bytes + 1` of the body is read ([`Net::get`]); the caller refuses a longer one.
    pub async fn get(&self, what: &str, raw: &str, max_bytes: usize) -> Result<HttpResponse, String> {
        self.get_with(what, raw, vec![], max_bytes).await
    }

    /// [`Egress::get`] with request headers besides `accept` (an API's credentials).
    pub async fn get_with(
        &self,
        what: &str,
        raw: &str,
        headers: Vec<(String, String)>,
        max_bytes: usize,
    ) -> Result<HttpResponse, String> {
        let url = outbound::check(what, raw, self.loopback_http)?;
        let mut out = Outbound {
            url: url.to_string(),
            headers: vec![("accept".into(), "application/json".into())],
            body: vec![],
        };
        out.headers.extend(headers);
        let resp = self.net.get(out, max_bytes).await.map_err(|e| outbound::snippet(&e))?;
        if (300..400).contains(&resp.status) {
            return Err(format!("`{what}` answered with a redirect (HTTP {}), which is not followed", resp.status));
        }
        Ok(resp)
    }
}

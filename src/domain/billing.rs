//! Stripe's API, as money in uses it: a customer per workspace, Checkout Sessions (a one-off top-up, or
//! saving a card), and the off-session payment of an automatic top-up. Requests are form-encoded with the
//! deployment's secret key as the bearer and go through the outbound rule like every other call out
//! (`STRIPE_API_BASE` may name a local fake only where loopback is allowed). The key is never logged.

use crate::cx::{Config, Net, Outbound};
use crate::egress::Egress;
use crate::error::{ApiError, Code};
use crate::rules::{ids, outbound, stripe};
use crate::store::{self, billing::AutoTopUp, Sql};
use serde_json::Value;

const DEFAULT_API_BASE: &str = "https://api.stripe.com";
/// The most of a GET's answer read: Stripe's objects are a few kilobytes.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// What the top-up tools answer on a deployment without Stripe.
pub fn not_configured() -> ApiError {
    ApiError::new(
        Code::NotImplemented,
        "billing is not configured on this deployment: the operator sets STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET",
    )
}

/// Metadata naming where a payment intent came from: only the automatic top-up's credit on
/// `payment_intent.succeeded` (a checkout's own payment intent is credited by its session).
pub const AUTO_TOP_UP: &str = "auto_top_up";

/// The deployment's Stripe account.
pub struct Stripe<'a> {
    egress: Egress<'a>,
    key: &'a str,
    base: &'a str,
}

impl<'a> Stripe<'a> {
    /// Stripe when both its secrets are set.
    pub fn new(net: &'a dyn Net, config: &'a Config) -> Result<Self, ApiError> {
        match (&config.stripe_secret_key, &config.stripe_webhook_secret) {
            (Some(key), Some(_)) => Ok(Self {
                egress: Egress::new(net, config),
                key,
                base: config.stripe_api_base.as_deref().unwrap_or(DEFAULT_API_BASE).trim_end_matches('/'),
            }),
            _ => Err(not_configured()),
        }
    }

    fn headers(&self) -> Vec<(String, String)> {
        vec![("authorization".into(), format!("Bearer {}", self.key)), ("stripe-version".into(), "2024-06-20".into())]
    }

    /// One API call's answer: its JSON object, or what Stripe said was wrong.
    fn answer(resp: Result<crate::http::HttpResponse, String>) -> Result<Value, String> {
        let resp = resp?;
        let body = resp.json_body();
        if resp.status == 200 {
            return Ok(body);
        }
        Err(match body["error"]["message"].as_str() {
            Some(m) => format!("HTTP {}: {}", resp.status, outbound::snippet(m)),
            None => outbound::summary(resp.status, &resp.body),
        })
    }

    /// POSTs a form to `path`; `idempotency_key` makes Stripe do it once however often it is retried.
    async fn post(&self, path: &str, fields: &[(&str, &str)], idempotency_key: &str) -> Result<Value, String> {
        let mut headers = self.headers();
        headers.push(("content-type".into(), "application/x-www-form-urlencoded".into()));
        headers.push(("idempotency-key".into(), idempotency_key.into()));
        let out = Outbound { url: format!("{}{path}", self.base), headers, body: stripe::form(fields).into_bytes() };
        Self::answer(self.egress.post("STRIPE_API_BASE", out).await)
    }

    async fn get(&self, path: &str) -> Result<Value, String> {
        let url = format!("{}{path}", self.base);
        let resp = self.egress.get_with("STRIPE_API_BASE", &url, self.headers(), MAX_ANSWER_BYTES).await?;
        if resp.body.len() > MAX_ANSWER_BYTES {
            return Err(format!("Stripe answered with more than {MAX_ANSWER_BYTES} bytes"));
        }
        Self::answer(Ok(resp))
    }

    /// A new customer for the workspace; the caller remembers it (`store::billing::remember_customer`).
    pub async fn create_customer(&self, workspace_id: &str, name: &str) -> Result<String, String> {
        let fields = [("name", name), ("metadata[workspace]", workspace_id)];
        let customer = self.post("/v1/customers", &fields, &format!("customer_{workspace_id}")).await?;
        id_of(&customer, "customer")
    }

    /// A Checkout Session: `fields` besides the workspace's reference and the return links. Its id and URL.
    async fn checkout(
        &self,
        workspace_id: &str,
        links: &Links,
        fields: &[(&str, &str)],
        idempotency_key: &str,
    ) -> Result<(String, String), String> {
        let mut all = vec![
            ("client_reference_id", workspace_id),
            ("metadata[workspace]", workspace_id),
            ("success_url", links.success.as_str()),
            ("cancel_url", links.cancel.as_str()),
        ];
        all.extend_from_slice(fields);
        let session = self.post("/v1/checkout/sessions", &all, idempotency_key).await?;
        let url = session["url"].as_str().ok_or("Stripe's checkout session has no url")?.to_owned();
        Ok((id_of(&session, "checkout session")?, url))
    }

    /// A one-off top-up of `cents` to pay by card.
    pub async fn checkout_payment(
        &self,
        workspace_id: &str,
        cents: i64,
        links: &Links,
        idempotency_key: &str,
    ) -> Result<(String, String), String> {
        let amount = cents.to_string();
        let fields = [
            ("mode", "payment"),
            ("line_items[0][quantity]", "1"),
            ("line_items[0][price_data][currency]", stripe::CURRENCY),
            ("line_items[0][price_data][unit_amount]", amount.as_str()),
            ("line_items[0][price_data][product_data][name]", "agentsky credit"),
        ];
        self.checkout(workspace_id, links, &fields, idempotency_key).await
    }

    /// Saving a card for the customer, to be charged later by the automatic top-up.
    pub async fn checkout_setup(
        &self,
        workspace_id: &str,
        customer_id: &str,
        links: &Links,
        idempotency_key: &str,
    ) -> Result<(String, String), String> {
        let fields = [("mode", "setup"), ("customer", customer_id), ("currency", stripe::CURRENCY)];
        self.checkout(workspace_id, links, &fields, idempotency_key).await
    }

    /// The card a completed setup saved (a Checkout Session names its SetupIntent by id).
    pub async fn setup_payment_method(&self, setup_intent_id: &str) -> Result<String, String> {
        if !setup_intent_id.starts_with("seti_")
            || !setup_intent_id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        {
            return Err("the checkout session names no setup intent".into());
        }
        let intent = self.get(&format!("/v1/setup_intents/{setup_intent_id}")).await?;
        intent["payment_method"]
            .as_str()
            .or_else(|| intent["payment_method"]["id"].as_str())
            .map(str::to_owned)
            .ok_or_else(|| "the setup intent has no payment method".into())
    }

    /// Charges the saved card for an automatic top-up; the credit comes with `payment_intent.succeeded`.
    pub async fn charge(&self, t: &AutoTopUp) -> Result<String, String> {
        let amount = t.amount_cents.to_string();
        let fields = [
            ("amount", amount.as_str()),
            ("currency", stripe::CURRENCY),
            ("customer", t.customer_id.as_str()),
            ("payment_method", t.payment_method_id.as_str()),
            ("confirm", "true"),
            ("off_session", "true"),
            ("metadata[workspace]", t.workspace_id.as_str()),
            ("metadata[agentsky]", AUTO_TOP_UP),
        ];
        let intent = self.post("/v1/payment_intents", &fields, &ids::new_id("auto")).await?;
        id_of(&intent, "payment intent")
    }
}

fn id_of(object: &Value, what: &str) -> Result<String, String> {
    object["id"].as_str().map(str::to_owned).ok_or_else(|| format!("Stripe's {what} has no id"))
}

/// Where checkout sends the person back, built only from the deployment's own origin.
pub struct Links {
    pub success: String,
    pub cancel: String,
}

impl Links {
    /// The workspace's Usage page in the console.
    pub fn usage_page(base: &str, workspace_slug: &str) -> Self {
        let page = format!("{base}/console/w/{workspace_slug}/usage");
        Self { success: format!("{page}?checkout=done"), cancel: format!("{page}?checkout=cancelled") }
    }
}

/// Starts an automatic top-up a settlement claimed. A failure (a declined card, Stripe unreachable) is
/// noted on the account and logged without the key; the claim stays until it goes stale, so a declined
/// card is not charged again on every turn.
pub async fn start_auto_top_up(db: &dyn Sql, net: &dyn Net, config: &Config, t: &AutoTopUp) {
    let outcome = match Stripe::new(net, config) {
        Ok(stripe) => stripe.charge(t).await.map(drop),
        Err(e) => Err(e.message),
    };
    if let Err(why) = outcome {
        crate::error::log_line(&format!("automatic top-up of {} not started: {why}", t.workspace_id));
        let _ = store::billing::auto_failed(db, &t.workspace_id, t.pending_ms, &why).await;
    }
}

//! Stripe's webhook: its signed events credit the wallet (each applied once; the credit itself is
//! `store::usage::credit`, the one way money comes in) or save the card a checkout set up.

use crate::cx::Cx;
use crate::domain::billing::{Stripe, AUTO_TOP_UP};
use crate::error::{ApiError, Code};
use crate::http::{HttpRequest, HttpResponse};
use crate::ops::billing::stripe_failed;
use crate::rules::{ids, stripe};
use crate::store::{self, usage::Credit};
use serde_json::{json, Value};

/// `POST /v1/billing/stripe/webhook`: Stripe's signed events. Answers 200 to every verified event,
/// applied or not, so Stripe stops redelivering it; a bad signature is refused.
pub async fn webhook(cx: &Cx<'_>, req: &HttpRequest) -> HttpResponse {
    match receive(cx, req).await {
        Ok(body) => HttpResponse::json(200, &body),
        Err(e) => crate::error::error_response(&e),
    }
}

async fn receive(cx: &Cx<'_>, req: &HttpRequest) -> Result<Value, ApiError> {
    if req.method != "POST" {
        return Err(ApiError::invalid("Stripe's events are POSTed"));
    }
    let secret = cx.env.config.stripe_webhook_secret.as_deref().ok_or_else(crate::domain::billing::not_configured)?;
    let header = req.header("stripe-signature").unwrap_or_default();
    stripe::verify(secret, header, &req.body, cx.now_ms.div_euclid(1000))
        .map_err(|r| ApiError::new(Code::Unauthorized, r.message()))?;
    let event: Value =
        serde_json::from_slice(&req.body).map_err(|e| ApiError::invalid(format!("the event is not JSON: {e}")))?;
    let (Some(event_id), Some(kind)) = (event["id"].as_str(), event["type"].as_str()) else {
        return Err(ApiError::invalid("the event has no `id` or `type`"));
    };
    let object = &event["data"]["object"];
    let outcome = match (kind, object["mode"].as_str()) {
        ("checkout.session.completed", Some("payment")) => paid(cx, (event_id, kind), object, "checkout").await?,
        ("checkout.session.completed", Some("setup")) => card_saved(cx, (event_id, kind), object).await?,
        ("payment_intent.succeeded", _) if object["metadata"]["agentsky"] == AUTO_TOP_UP => {
            paid(cx, (event_id, kind), object, "auto").await?
        }
        _ => Outcome::Ignored("not an event this deployment acts on"),
    };
    Ok(match outcome {
        Outcome::Applied(workspace_id) => {
            // Best effort: the console's Usage page shows the new balance on its next wake-up.
            let _ = cx.env.feeds.bump(&workspace_id).await;
            json!({ "received": true, "applied": true })
        }
        Outcome::Ignored(why) => json!({ "received": true, "applied": false, "reason": why }),
    })
}

enum Outcome {
    /// Money or a card recorded, in this workspace.
    Applied(String),
    Ignored(&'static str),
}

/// The workspace an event's object names: `client_reference_id` (a checkout session) and
/// `metadata.workspace` must agree.
fn workspace_of(object: &Value) -> Option<&str> {
    let named = object["metadata"]["workspace"].as_str()?;
    match object["client_reference_id"].as_str() {
        Some(r) if r != named => None,
        _ => ids::is_id(named, "ws").then_some(named),
    }
}

/// A paid checkout session (`amount_total`) or an automatic top-up's payment intent (`amount_received`).
async fn paid(cx: &Cx<'_>, event: (&str, &str), object: &Value, source: &str) -> Result<Outcome, ApiError> {
    let Some(workspace_id) = workspace_of(object) else { return Ok(Outcome::Ignored("no workspace of ours")) };
    if source == "checkout" && object["payment_status"] != "paid" {
        return Ok(Outcome::Ignored("the checkout session is not paid yet"));
    }
    if object["currency"] != stripe::CURRENCY {
        return Ok(Outcome::Ignored("not in the wallet's currency"));
    }
    let cents = object["amount_total"].as_i64().or_else(|| object["amount_received"].as_i64()).unwrap_or(0);
    let Some(object_id) = object["id"].as_str().filter(|_| cents > 0) else {
        return Ok(Outcome::Ignored("no amount"));
    };
    let credit = Credit {
        receipt_id: &ids::new_id("rcp"),
        workspace_id,
        source,
        cents,
        stripe_object_id: Some(object_id),
        event: Some(event),
        now_ms: cx.now_ms,
    };
    match store::usage::credit(cx.db(), &credit).await? {
        Some(_) => Ok(Outcome::Applied(workspace_id.to_owned())),
        None => Ok(Outcome::Ignored("applied before")),
    }
}

/// A completed setup: the card its SetupIntent saved becomes the workspace's.
async fn card_saved(cx: &Cx<'_>, event: (&str, &str), object: &Value) -> Result<Outcome, ApiError> {
    let (Some(workspace_id), Some(customer)) = (workspace_of(object), object["customer"].as_str()) else {
        return Ok(Outcome::Ignored("no workspace of ours"));
    };
    let stripe = Stripe::new(cx.env.net.as_ref(), &cx.env.config)?;
    let setup_intent = object["setup_intent"].as_str().unwrap_or_default();
    let method = stripe.setup_payment_method(setup_intent).await.map_err(stripe_failed)?;
    let saved = store::billing::save_card(cx.db(), event, workspace_id, customer, &method, cx.now_ms).await?;
    Ok(if saved { Outcome::Applied(workspace_id.to_owned()) } else { Outcome::Ignored("applied before") })
}

//! Money in through Stripe: checkout for a top-up and for saving a card, the signed webhook (verified,
//! each event applied once, unknown events ignored), receipts, and the automatic top-up, which a
//! settlement under the threshold starts once per pending top-up. Stripe is a scripted fake speaking its
//! documented shapes.

use crate::support::{Account, TestApp};
use agentsky::cx::{Config, Outbound};
use agentsky::http::{HttpRequest, HttpResponse};
use agentsky::rules::stripe;
use serde_json::{json, Value};

const WHSEC: &str = "whsec_test";
const STRIPE: &str = "https://stripe.example";

fn config() -> Config {
    Config {
        admin_token: Some("adm".into()),
        secrets_key: Some("test-master-key".into()),
        public_base_url: "https://sky.example".into(),
        stripe_secret_key: Some("sk_test_123".into()),
        stripe_webhook_secret: Some(WHSEC.into()),
        stripe_api_base: Some(STRIPE.into()),
        // A hundredth of a cent a token: a model call holds about a dollar, and 100,000 tokens cost $10.
        prices: agentsky::rules::prices::Prices::parse(r#"{"gpt-test": [10000, 10000]}"#).unwrap(),
        ..TestApp::config()
    }
}

/// Stripe's API as documented, and a model that reports `input_tokens` per call.
fn fake(app: &TestApp, input_tokens: i64) {
    app.sessions.net.answer(move |req: &Outbound| {
        let path = req.url.strip_prefix(STRIPE).unwrap_or(&req.url);
        let body = match path {
            "/v1/customers" => json!({"id": "cus_1", "object": "customer"}),
            "/v1/checkout/sessions" => {
                json!({"id": "cs_test_1", "object": "checkout.session", "url": "https://checkout.stripe.example/c/pay/cs_test_1"})
            }
            "/v1/setup_intents/seti_1" => json!({"id": "seti_1", "object": "setup_intent", "payment_method": "pm_1"}),
            "/v1/payment_intents" => json!({"id": "pi_1", "object": "payment_intent", "status": "succeeded"}),
            _ => json!({"choices": [{"message": {"role": "assistant", "content": "done"}}],
                        "usage": {"prompt_tokens": input_tokens, "completion_tokens": 0}}),
        };
        HttpResponse::json(200, &body)
    });
}

fn stripe_calls(app: &TestApp, path: &str) -> Vec<Outbound> {
    let url = format!("{STRIPE}{path}");
    app.sessions.net.requests.borrow().iter().filter(|r| r.url == url).cloned().collect()
}

fn form(req: &Outbound) -> Vec<(String, String)> {
    form_urlencoded::parse(&req.body).into_owned().collect()
}

fn field<'a>(fields: &'a [(String, String)], name: &str) -> Option<&'a str> {
    fields.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
}

fn workspace_id(app: &TestApp, slug: &str) -> String {
    app.db.0.query_row("SELECT workspace_id FROM workspace WHERE slug = ?1", [slug], |r| r.get(0)).unwrap()
}

fn balance(app: &TestApp, who: &Account) -> i64 {
    app.ok(&who.key, "get_usage", json!({}))["balance_cents"].as_i64().unwrap()
}

/// Posts `event` to the webhook, signed at `t` (seconds) with `secret`.
fn deliver_signed(app: &TestApp, event: &Value, secret: &str, t: i64) -> HttpResponse {
    let body = serde_json::to_vec(event).unwrap();
    app.send(HttpRequest {
        method: "POST".into(),
        path: "/v1/billing/stripe/webhook".into(),
        headers: vec![("stripe-signature".into(), stripe::header(secret, t, &body))],
        body,
        ..Default::default()
    })
}

fn deliver(app: &TestApp, event: &Value) -> Value {
    let r = deliver_signed(app, event, WHSEC, app.now_ms.get() / 1000);
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    r.json_body()
}

fn paid_checkout(event_id: &str, session_id: &str, ws: &str, cents: i64) -> Value {
    json!({"id": event_id, "object": "event", "type": "checkout.session.completed", "data": {"object": {
        "id": session_id, "object": "checkout.session", "mode": "payment", "payment_status": "paid",
        "amount_total": cents, "currency": "usd", "client_reference_id": ws, "metadata": {"workspace": ws},
        "payment_intent": "pi_checkout"}}})
}

#[test]
fn without_stripe_the_top_up_tools_say_billing_is_not_configured() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    for (tool, args) in [
        ("top_up", json!({"amount_cents": 1000})),
        ("save_card", json!({})),
        ("set_auto_top_up", json!({"enabled": false})),
    ] {
        let r = app.call(&ada.key, tool, args);
        let e = TestApp::tool_error(&r);
        assert_eq!(e["code"], "not_implemented", "{tool}: {r}");
        assert!(
            e["message"].as_str().unwrap().contains(
                "billing is not configured on this deployment: the operator sets STRIPE_SECRET_KEY and STRIPE_WEBHOOK_SECRET"
            ),
            "{e}"
        );
    }
    let r = app.send(HttpRequest {
        method: "POST".into(),
        path: "/v1/billing/stripe/webhook".into(),
        ..Default::default()
    });
    assert_eq!(r.status, 501);
    assert_eq!(app.ok(&ada.key, "list_receipts", json!({}))["receipts"], json!([]), "receipts are read anyway");
}

#[test]
fn a_top_up_opens_a_checkout_and_its_paid_event_credits_the_wallet_once() {
    let app = TestApp::with_config(config());
    fake(&app, 0);
    let ada = app.signup("Ada", "ada@example.com");
    let ws = workspace_id(&app, &ada.slug);
    assert_eq!(app.err_code(&ada.key, "top_up", json!({"amount_cents": 499})), "invalid_params");
    assert_eq!(app.err_code(&ada.key, "top_up", json!({"amount_cents": 100_001})), "invalid_params");
    let out = app.ok(&ada.key, "top_up", json!({"amount_cents": 2_500}));
    assert_eq!(out["url"], "https://checkout.stripe.example/c/pay/cs_test_1");
    assert_eq!(out["checkout_session_id"], "cs_test_1");

    let calls = stripe_calls(&app, "/v1/checkout/sessions");
    assert_eq!(calls.len(), 1);
    let sent = &calls[0];
    assert!(sent.headers.contains(&("authorization".into(), "Bearer sk_test_123".into())));
    assert!(sent.headers.contains(&("content-type".into(), "application/x-www-form-urlencoded".into())));
    let f = form(sent);
    assert_eq!(field(&f, "mode"), Some("payment"));
    assert_eq!(field(&f, "line_items[0][price_data][unit_amount]"), Some("2500"));
    assert_eq!(field(&f, "line_items[0][price_data][currency]"), Some("usd"));
    assert_eq!(field(&f, "client_reference_id"), Some(ws.as_str()));
    assert_eq!(field(&f, "metadata[workspace]"), Some(ws.as_str()));
    let back = format!("https://sky.example/console/w/{}/usage", ada.slug);
    assert!(field(&f, "success_url").unwrap().starts_with(&back), "links from PUBLIC_BASE_URL only: {f:?}");
    assert!(field(&f, "cancel_url").unwrap().starts_with(&back));

    let event = paid_checkout("evt_1", "cs_test_1", &ws, 2_500);
    assert_eq!(deliver(&app, &event)["applied"], true);
    assert_eq!(balance(&app, &ada), 2_500);
    assert_eq!(deliver(&app, &event)["applied"], false, "a redelivered event is applied once");
    let again = paid_checkout("evt_2", "cs_test_1", &ws, 2_500);
    assert_eq!(deliver(&app, &again)["applied"], false, "a checkout session credits once, whatever event names it");
    assert_eq!(balance(&app, &ada), 2_500);

    let r = app.ok(&ada.key, "list_receipts", json!({}));
    assert_eq!(r["balance_cents"], 2_500);
    let receipts = r["receipts"].as_array().unwrap();
    assert_eq!(receipts.len(), 1);
    assert_eq!(
        (
            &receipts[0]["source"],
            &receipts[0]["cents"],
            &receipts[0]["stripe_object_id"],
            &receipts[0]["stripe_event_id"]
        ),
        (&json!("checkout"), &json!(2_500), &json!("cs_test_1"), &json!("evt_1"))
    );
    assert_eq!(receipts[0]["created_ms"], app.now_ms.get());

    let unpaid = json!({"id": "evt_3", "type": "checkout.session.completed", "data": {"object": {
        "id": "cs_test_2", "mode": "payment", "payment_status": "unpaid", "amount_total": 900, "currency": "usd",
        "client_reference_id": ws, "metadata": {"workspace": ws}}}});
    assert_eq!(deliver(&app, &unpaid)["applied"], false, "an unpaid session credits nothing");
    let mismatched = paid_checkout("evt_4", "cs_test_3", &ws, 900);
    let mut mismatched = mismatched;
    mismatched["data"]["object"]["client_reference_id"] = json!("ws_00000000000000000000000000");
    assert_eq!(deliver(&app, &mismatched)["applied"], false, "the reference and the metadata must agree");
    assert_eq!(balance(&app, &ada), 2_500);
}

#[test]
fn the_webhook_refuses_a_wrong_secret_an_old_timestamp_and_no_signature_and_ignores_unknown_events() {
    let app = TestApp::with_config(config());
    let ada = app.signup("Ada", "ada@example.com");
    let ws = workspace_id(&app, &ada.slug);
    let event = paid_checkout("evt_1", "cs_test_1", &ws, 1_000);
    let now_s = app.now_ms.get() / 1000;
    let r = deliver_signed(&app, &event, "whsec_other", now_s);
    assert_eq!(r.status, 401, "another secret");
    let r = deliver_signed(&app, &event, WHSEC, now_s - 301);
    assert_eq!(r.status, 401, "older than five minutes");
    assert!(r.json_body()["error"]["message"].as_str().unwrap().contains("5 minutes"));
    let unsigned = app.send(HttpRequest {
        method: "POST".into(),
        path: "/v1/billing/stripe/webhook".into(),
        body: serde_json::to_vec(&event).unwrap(),
        ..Default::default()
    });
    assert_eq!(unsigned.status, 401, "no signature");
    assert_eq!(balance(&app, &ada), 0, "nothing refused was applied");
    assert_eq!(deliver_signed(&app, &event, WHSEC, now_s - 299).status, 200, "within five minutes");
    assert_eq!(balance(&app, &ada), 1_000);

    let unknown = json!({"id": "evt_9", "type": "customer.created", "data": {"object": {"id": "cus_9"}}});
    let r = deliver(&app, &unknown);
    assert_eq!((r["received"].as_bool(), r["applied"].as_bool()), (Some(true), Some(false)));
    let own = json!({"id": "evt_10", "type": "payment_intent.succeeded", "data": {"object": {
        "id": "pi_checkout", "amount_received": 1_000, "currency": "usd", "metadata": {}}}});
    assert_eq!(deliver(&app, &own)["applied"], false, "a checkout's own payment intent is credited by its session");
    assert_eq!(balance(&app, &ada), 1_000);
}

#[test]
fn paying_needs_the_admin_role_and_admin_credit_leaves_a_receipt() {
    let app = TestApp::with_config(config());
    fake(&app, 0);
    let ada = app.signup("Ada", "ada@example.com");
    let bob = app.signup("Bob", "bob@example.com");
    app.shared_workspace(&ada, "team");
    app.join(&ada, "team", &bob, "member");
    for (tool, args) in [
        ("top_up", json!({"workspace": "team", "amount_cents": 1000})),
        ("save_card", json!({"workspace": "team"})),
        ("set_auto_top_up", json!({"workspace": "team", "enabled": false})),
    ] {
        assert_eq!(app.err_code(&bob.key, tool, args), "forbidden", "{tool}");
    }
    assert!(stripe_calls(&app, "/v1/checkout/sessions").is_empty());
    let r = app.request("POST", "/v1/workspaces/team/credit", Some("adm"), Some(json!({"amount_cents": 700})));
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    let receipts = app.ok(&bob.key, "list_receipts", json!({"workspace": "team"}));
    assert_eq!(receipts["receipts"][0]["source"], "admin");
    assert_eq!(receipts["receipts"][0]["cents"], 700);
    assert_eq!(receipts["receipts"][0]["stripe_object_id"], Value::Null);
}

/// Saves a card for `who`: checkout in setup mode, then Stripe's completed event.
fn save_card(app: &TestApp, who: &Account, event_id: &str) -> Value {
    let ws = workspace_id(app, &who.slug);
    app.ok(&who.key, "save_card", json!({}));
    deliver(
        app,
        &json!({"id": event_id, "type": "checkout.session.completed", "data": {"object": {
            "id": "cs_setup_1", "object": "checkout.session", "mode": "setup", "customer": "cus_1",
            "setup_intent": "seti_1", "client_reference_id": ws, "metadata": {"workspace": ws}}}}),
    )
}

#[test]
fn saving_a_card_makes_the_customer_once_and_the_completed_setup_shows_the_card() {
    let app = TestApp::with_config(config());
    fake(&app, 0);
    let ada = app.signup("Ada", "ada@example.com");
    assert_eq!(app.ok(&ada.key, "get_usage", json!({}))["card_saved"], false);
    assert_eq!(
        app.err_code(
            &ada.key,
            "set_auto_top_up",
            json!({"enabled": true, "threshold_cents": 500, "amount_cents": 1000})
        ),
        "conflict",
        "no card yet"
    );
    let out = app.ok(&ada.key, "save_card", json!({}));
    assert_eq!(out["url"], "https://checkout.stripe.example/c/pay/cs_test_1");
    let setup = form(&stripe_calls(&app, "/v1/checkout/sessions")[0]);
    assert_eq!((field(&setup, "mode"), field(&setup, "customer")), (Some("setup"), Some("cus_1")));
    assert_eq!(save_card(&app, &ada, "evt_s1")["applied"], true);
    assert_eq!(stripe_calls(&app, "/v1/customers").len(), 1, "one customer per workspace, remembered");
    assert_eq!(stripe_calls(&app, "/v1/setup_intents/seti_1").len(), 1, "the card is read from the setup intent");
    assert_eq!(app.ok(&ada.key, "get_usage", json!({}))["card_saved"], true);
    assert_eq!(save_card(&app, &ada, "evt_s1")["applied"], false, "applied once");
    assert_eq!(balance(&app, &ada), 0, "saving a card charges nothing");
}

#[test]
fn the_automatic_top_up_fires_once_per_pending_top_up_and_its_payment_credits_the_wallet() {
    let app = TestApp::with_config(config());
    fake(&app, 100_000);
    let ada = app.signup("Ada", "ada@example.com");
    let ws = workspace_id(&app, &ada.slug);
    for (name, value) in [("OPENAI_BASE_URL", "https://model.example.com/v1"), ("OPENAI_API_KEY", "sk-test")] {
        let r = app.request("PUT", &format!("/v1/secrets/{name}"), Some(&ada.key), Some(json!({"value": value})));
        assert_eq!(r.status, 200, "{:?}", r.json_body());
    }
    let agent = app.create_agent(&ada.key, json!({"name": "G", "harness": "openai", "model": "gpt-test"}));
    let r = app.request(
        "POST",
        &format!("/v1/workspaces/{}/credit", ada.slug),
        Some("adm"),
        Some(json!({"amount_cents": 5_000})),
    );
    assert_eq!(r.status, 200);
    save_card(&app, &ada, "evt_s1");
    let set =
        app.ok(&ada.key, "set_auto_top_up", json!({"enabled": true, "threshold_cents": 3_000, "amount_cents": 2_000}));
    assert_eq!(
        set["auto_top_up"],
        json!({"enabled": true, "threshold_cents": 3_000, "amount_cents": 2_000, "pending": false, "last_error": null})
    );

    // Every turn makes one model call costing $10.
    let s = app.ok(&ada.key, "start_session", json!({"agent_id": agent, "message": "go", "idempotency_key": "k0"}));
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    app.settle();
    let turn = |n: u32| {
        app.ok(
            &ada.key,
            "send_message",
            json!({"session_id": sid, "message": "more", "idempotency_key": format!("k{n}")}),
        );
        app.settle();
    };
    assert_eq!(balance(&app, &ada), 4_000);
    turn(1);
    assert_eq!(balance(&app, &ada), 3_000);
    assert!(stripe_calls(&app, "/v1/payment_intents").is_empty(), "not under the threshold yet");
    turn(2);
    assert_eq!(balance(&app, &ada), 2_000);
    let intents = stripe_calls(&app, "/v1/payment_intents");
    assert_eq!(intents.len(), 1, "under the threshold: one top-up");
    let f = form(&intents[0]);
    for (k, v) in [
        ("amount", "2000"),
        ("currency", "usd"),
        ("customer", "cus_1"),
        ("payment_method", "pm_1"),
        ("confirm", "true"),
        ("off_session", "true"),
        ("metadata[workspace]", ws.as_str()),
    ] {
        assert_eq!(field(&f, k), Some(v), "{k} in {f:?}");
    }
    assert!(intents[0].headers.iter().any(|(k, _)| k == "idempotency-key"));
    turn(3);
    assert_eq!(balance(&app, &ada), 1_000);
    assert_eq!(stripe_calls(&app, "/v1/payment_intents").len(), 1, "one pending top-up, not one per turn");
    assert_eq!(app.ok(&ada.key, "list_receipts", json!({}))["auto_top_up"]["pending"], true);

    let succeeded = json!({"id": "evt_p1", "type": "payment_intent.succeeded", "data": {"object": {
        "id": "pi_1", "object": "payment_intent", "amount": 2_000, "amount_received": 2_000, "currency": "usd",
        "customer": "cus_1", "metadata": {"workspace": ws, "agentsky": "auto_top_up"}}}});
    assert_eq!(deliver(&app, &succeeded)["applied"], true);
    assert_eq!(balance(&app, &ada), 3_000);
    assert_eq!(deliver(&app, &succeeded)["applied"], false);
    let r = app.ok(&ada.key, "list_receipts", json!({}));
    assert_eq!((&r["receipts"][0]["source"], &r["receipts"][0]["stripe_object_id"]), (&json!("auto"), &json!("pi_1")));
    assert_eq!(r["auto_top_up"]["pending"], false, "the top-up arrived");

    turn(4);
    assert_eq!(balance(&app, &ada), 2_000);
    assert_eq!(stripe_calls(&app, "/v1/payment_intents").len(), 2, "under again: the next top-up");

    app.ok(&ada.key, "set_auto_top_up", json!({"enabled": false}));
    assert_eq!(app.ok(&ada.key, "list_receipts", json!({}))["auto_top_up"]["enabled"], false);
}

#[test]
fn the_console_usage_page_adds_money_and_saves_a_card_through_checkout_and_lists_receipts() {
    use crate::support::{browser_request, form_body};
    const ORIGIN: &str = "https://sky.example";
    let app = TestApp::with_config(config());
    fake(&app, 0);
    let ada = app.signup("Ada", "ada@example.com");
    let ws = workspace_id(&app, &ada.slug);
    let r = app.send(browser_request("POST", "/console/login", None, &form_body(&[("key", &ada.key)]), Some(ORIGIN)));
    assert_eq!(r.status, 303, "{}", String::from_utf8_lossy(&r.body));
    let cookie = r.header("set-cookie").unwrap().split(';').next().unwrap().to_owned();
    let page = |app: &TestApp| {
        let r = app.send(browser_request("GET", &format!("/console/w/{}/usage", ada.slug), Some(&cookie), "", None));
        assert_eq!(r.status, 200);
        String::from_utf8_lossy(&r.body).into_owned()
    };
    let html = page(&app);
    assert!(html.contains("Add money") && html.contains("Save a card") && html.contains("No money added yet."));
    let at = html.find("name=\"csrf\" value=\"").unwrap() + 19;
    let csrf = html[at..at + 64].to_owned();
    let post = |op: &str, fields: &[(&str, &str)]| {
        let mut all = vec![("csrf", csrf.as_str()), ("workspace", ada.slug.as_str())];
        all.extend_from_slice(fields);
        let path = format!("/console/w/{}/op/{op}", ada.slug);
        app.send(browser_request("POST", &path, Some(&cookie), &form_body(&all), Some(ORIGIN)))
    };
    let r = post("top_up", &[("amount_cents", "2000")]);
    assert_eq!((r.status, r.header("location")), (303, Some("https://checkout.stripe.example/c/pay/cs_test_1")));
    assert_eq!(
        field(&form(&stripe_calls(&app, "/v1/checkout/sessions")[0]), "line_items[0][price_data][unit_amount]"),
        Some("2000")
    );
    let r = post("save_card", &[]);
    assert_eq!((r.status, r.header("location")), (303, Some("https://checkout.stripe.example/c/pay/cs_test_1")));

    deliver(&app, &paid_checkout("evt_1", "cs_test_1", &ws, 2_000));
    let html = page(&app);
    assert!(
        html.contains("$20.00") && html.contains("checkout") && html.contains("cs_test_1"),
        "the receipt is listed"
    );
}

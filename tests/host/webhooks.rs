//! Outgoing webhooks: endpoints per workspace (admins manage, readers list), Standard Webhooks signatures
//! checked here with an HMAC computed independently of the server's, rotation overlap, the outbound-URL
//! rule, delivery through the queue with retries on a schedule and the same id each time, the dead
//! letter, and each event emitted where it happens.

use crate::support::{Account, TestApp};
use agentsky::cx::{Config, Cx, Net, Outbound};
use agentsky::http::HttpResponse;
use agentsky::rules::webhooks::{ATTEMPT_TIMEOUT_MS, CLAIM_MARGIN_MS};
use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use futures::future::LocalBoxFuture;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll};

const HOOK: &str = "https://hooks.example.com/agentsky";

fn app_with(schedule: Option<Vec<u32>>) -> TestApp {
    TestApp::with_config(Config {
        secrets_key: Some("test-master-key".into()),
        webhook_retry_schedule_s: schedule,
        ..TestApp::config()
    })
}

/// HMAC-SHA256 (RFC 2104) written here from SHA-256 alone, so the test does not trust the server's.
fn hmac(key: &[u8], msg: &[u8]) -> Vec<u8> {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(&Sha256::digest(key));
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let inner: Vec<u8> = k.iter().map(|b| b ^ 0x36).collect();
    let outer: Vec<u8> = k.iter().map(|b| b ^ 0x5c).collect();
    let ih = Sha256::new().chain_update(&inner).chain_update(msg).finalize();
    Sha256::new().chain_update(&outer).chain_update(ih).finalize().to_vec()
}

/// What a Standard Webhooks receiver computes for one secret.
fn expected_signature(secret: &str, id: &str, ts: &str, body: &[u8]) -> String {
    let key = STANDARD.decode(secret.strip_prefix("whsec_").unwrap()).unwrap();
    let mut msg = format!("{id}.{ts}.").into_bytes();
    msg.extend_from_slice(body);
    format!("v1,{}", STANDARD.encode(hmac(&key, &msg)))
}

fn header<'a>(o: &'a Outbound, name: &str) -> &'a str {
    o.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).unwrap_or_default()
}

fn create(app: &TestApp, who: &Account, events: Value) -> (String, String) {
    let made = app.ok(&who.key, "create_webhook", json!({"url": HOOK, "events": events}));
    (made["webhook"]["webhook_id"].as_str().unwrap().to_owned(), made["secret"].as_str().unwrap().to_owned())
}

/// Runs every queued webhook message through the consumer once, as one batch the way the Worker runs it
/// (by endpoint); returns how many ran.
fn deliver(app: &TestApp) -> usize {
    let batch = drain(app);
    let n = batch.len();
    let net = app.sessions.net.clone();
    app.system(move |cx| Box::pin(consume(cx, net, batch)));
    n
}

/// The queued webhook messages, taken off the queue: (delivery id, attempt).
fn drain(app: &TestApp) -> Vec<(String, i64)> {
    let messages: Vec<Value> = app.queue.0.borrow_mut().drain(..).collect();
    messages
        .iter()
        .filter_map(|m| Some((m["webhook_delivery"].as_str()?.to_owned(), m["attempt"].as_i64().unwrap())))
        .collect()
}

/// The queue consumer's part of the Worker's batch handler, over `net`.
async fn consume(cx: &Cx<'_>, net: impl Net, batch: Vec<(String, i64)>) {
    let net = &net;
    let items = batch.into_iter().map(|(id, attempt)| (id.clone(), (id, attempt))).collect();
    agentsky::domain::webhooks::by_endpoint(cx.db(), items, |(id, attempt)| async move {
        agentsky::domain::webhooks::deliver(cx, net, &id, attempt).await.unwrap();
    })
    .await;
}

/// A future pending for `n` polls, waking itself each time: time a receiver takes to answer.
struct Polls(u32);

impl Future for Polls {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 == 0 {
            return Poll::Ready(());
        }
        self.0 -= 1;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Receivers that take `polls` polls to answer 200, counting the POSTs in flight, in all and per URL.
#[derive(Clone, Default)]
struct SlowNet(Rc<Slow>);

#[derive(Default)]
struct Slow {
    polls: u32,
    /// What the receivers answer (`0`: 200).
    status: u16,
    in_flight: Cell<usize>,
    most_in_flight: Cell<usize>,
    per_url: RefCell<HashMap<String, usize>>,
    most_per_url: Cell<usize>,
    calls: RefCell<Vec<Outbound>>,
}

impl SlowNet {
    fn new(polls: u32) -> Self {
        Self(Rc::new(Slow { polls, ..Slow::default() }))
    }
}

impl Net for SlowNet {
    fn post(&self, req: Outbound) -> LocalBoxFuture<'_, Result<HttpResponse, String>> {
        Box::pin(async move {
            let s = &*self.0;
            s.in_flight.set(s.in_flight.get() + 1);
            s.most_in_flight.set(s.most_in_flight.get().max(s.in_flight.get()));
            let to_url = {
                let mut per_url = s.per_url.borrow_mut();
                let n = per_url.entry(req.url.clone()).or_default();
                *n += 1;
                *n
            };
            s.most_per_url.set(s.most_per_url.get().max(to_url));
            s.calls.borrow_mut().push(req.clone());
            Polls(s.polls).await;
            s.in_flight.set(s.in_flight.get() - 1);
            *s.per_url.borrow_mut().get_mut(&req.url).unwrap() -= 1;
            Ok(HttpResponse { status: if s.status == 0 { 200 } else { s.status }, headers: vec![], body: vec![] })
        })
    }
}

fn answer(app: &TestApp, status: u16) {
    app.sessions.net.answer(move |_| HttpResponse { status, headers: vec![], body: b"{\"ok\":false}".to_vec() });
}

/// (event, status) of every delivery in the database, oldest first.
fn deliveries(app: &TestApp) -> Vec<(String, String)> {
    let conn = &app.db.0;
    let mut st = conn.prepare("SELECT event, status FROM webhook_delivery ORDER BY created_ms, rowid").unwrap();
    st.query_map([], |r| Ok((r.get(0)?, r.get(1)?))).unwrap().map(Result::unwrap).collect()
}

#[test]
fn signatures_follow_the_standard_webhooks_convention() {
    let app = app_with(None);
    let ada = app.signup("Ada", "ada@example.com");
    let (id, secret) = create(&app, &ada, json!(["request.opened"]));
    assert!(secret.starts_with("whsec_") && STANDARD.decode(&secret[6..]).unwrap().len() == 32, "{secret}");
    // The specification's own vector, through the test's HMAC.
    assert_eq!(
        expected_signature(
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
            "msg_p5jXN8AQM9LWM0D4loKWxJek",
            "1614265330",
            br#"{"test": 2432232314}"#
        ),
        "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
    );
    answer(&app, 204);
    let sent = app.ok(&ada.key, "test_webhook", json!({"webhook_id": id}));
    assert_eq!(deliver(&app), 1);
    let reqs = app.sessions.net.requests.borrow();
    let o = &reqs[0];
    assert_eq!(o.url, HOOK);
    assert_eq!(header(o, "webhook-id"), sent["event_id"].as_str().unwrap());
    let ts = header(o, "webhook-timestamp");
    assert_eq!(ts.parse::<i64>().unwrap(), app.now_ms.get() / 1000);
    assert_eq!(header(o, "webhook-signature"), expected_signature(&secret, header(o, "webhook-id"), ts, &o.body));
    let body: Value = serde_json::from_slice(&o.body).unwrap();
    assert_eq!(body["type"], "webhook.test");
    assert!(body["timestamp"].as_str().unwrap().ends_with('Z'));
    // The secret is shown once: never in a list, never stored in the clear.
    let listed = app.ok(&ada.key, "list_webhooks", json!({}));
    assert!(!listed.to_string().contains(&secret[6..]), "{listed}");
    assert_eq!(listed["deliveries"][0]["status"], "delivered");
    let stored: String = app.db.0.query_row("SELECT secret_sealed FROM webhook_endpoint", [], |r| r.get(0)).unwrap();
    assert!(!stored.contains(&secret[6..]));
}

#[test]
fn a_rotation_signs_with_both_secrets_during_the_overlap_then_only_the_new() {
    let app = app_with(None);
    let ada = app.signup("Ada", "ada@example.com");
    let (id, old) = create(&app, &ada, json!(["turn.finished"]));
    let rotated = app.ok(&ada.key, "rotate_webhook_secret", json!({"webhook_id": id, "overlap_hours": 1}));
    let new = rotated["secret"].as_str().unwrap().to_owned();
    assert_ne!(new, old);
    assert_eq!(rotated["previous_secret_until_ms"], json!(app.now_ms.get() + 3_600_000));
    answer(&app, 200);
    app.ok(&ada.key, "test_webhook", json!({"webhook_id": id}));
    deliver(&app);
    {
        let reqs = app.sessions.net.requests.borrow();
        let o = &reqs[0];
        let (wid, ts) = (header(o, "webhook-id"), header(o, "webhook-timestamp"));
        let sigs: Vec<&str> = header(o, "webhook-signature").split(' ').collect();
        assert_eq!(
            sigs,
            vec![expected_signature(&new, wid, ts, &o.body), expected_signature(&old, wid, ts, &o.body)],
            "the new signature first, the old one beside it"
        );
    }
    // After the overlap only the new secret signs.
    app.advance(3_600_001);
    app.ok(&ada.key, "test_webhook", json!({"webhook_id": id}));
    deliver(&app);
    let reqs = app.sessions.net.requests.borrow();
    let o = &reqs[1];
    let expected = expected_signature(&new, header(o, "webhook-id"), header(o, "webhook-timestamp"), &o.body);
    assert_eq!(header(o, "webhook-signature"), expected);
}

#[test]
fn bad_input_is_refused_naming_its_field() {
    let app = app_with(None);
    let ada = app.signup("Ada", "ada@example.com");
    let call = |args: Value| {
        let r = app.call(&ada.key, "create_webhook", args);
        TestApp::tool_error(&r)
    };
    let e = call(json!({"url": HOOK, "events": ["request.opened", "request.exploded"]}));
    assert_eq!(e["code"], "invalid_params", "{e}");
    let m = e["message"].as_str().unwrap();
    assert!(
        m.starts_with("`events[1]` must be one of") && m.contains("request.opened") && m.contains("budget.threshold"),
        "{m}"
    );
    let e = call(json!({"url": HOOK, "events": []}));
    assert!(e["message"].as_str().unwrap().contains("`events`"), "{e}");
    let e = call(json!({"url": HOOK, "events": ["goal.met"], "format": "teams"}));
    assert!(e["message"].as_str().unwrap().contains("`format`"), "{e}");
    // The one outbound-URL rule: https to a public host.
    for url in [
        "http://10.0.0.1/hook",
        "https://10.0.0.1/hook",
        "http://127.0.0.1:9/hook",
        "https://169.254.169.254/",
        "http://example.com/",
    ] {
        let e = call(json!({"url": url, "events": ["goal.met"]}));
        assert_eq!(e["code"], "invalid_params", "{url}: {e}");
        assert!(e["message"].as_str().unwrap().contains("`url`"), "{url}: {e}");
    }
    // Over REST the same refusals are 400s, never 500s.
    let r = app.request("POST", "/v1/webhooks", Some(&ada.key), Some(json!({"url": 5, "events": "x"})));
    assert_eq!(r.status, 400);
    // An id of the wrong shape is refused by its pattern; a well-formed one of nothing is not found.
    let r = app.request("DELETE", "/v1/webhooks/wh_nope", Some(&ada.key), None);
    assert_eq!(r.status, 400);
    let r = app.request("DELETE", "/v1/webhooks/wh_00000000000000000000000000", Some(&ada.key), None);
    assert_eq!(r.status, 404);
}

#[test]
fn loopback_receivers_need_the_development_opt_in() {
    let app =
        TestApp::with_config(Config { secrets_key: Some("k".into()), allow_loopback_http: true, ..TestApp::config() });
    let ada = app.signup("Ada", "ada@example.com");
    app.ok(&ada.key, "create_webhook", json!({"url": "http://127.0.0.1:9/hook", "events": ["goal.met"]}));
    let e = TestApp::tool_error(&app.call(
        &ada.key,
        "create_webhook",
        json!({"url": "http://10.0.0.1/hook", "events": ["goal.met"]}),
    ));
    assert_eq!(e["code"], "invalid_params", "private ranges stay refused: {e}");
}

#[test]
fn members_list_endpoints_but_only_admins_and_owners_manage_them() {
    let app = app_with(None);
    let ada = app.signup("Ada", "ada@example.com");
    let bob = app.signup("Bob", "bob@example.com");
    app.shared_workspace(&ada, "team");
    app.join(&ada, "team", &bob, "member");
    let made = app.ok(&ada.key, "create_webhook", json!({"url": HOOK, "events": ["goal.met"], "workspace": "team"}));
    let id = made["webhook"]["webhook_id"].as_str().unwrap();
    let listed = app.ok(&bob.key, "list_webhooks", json!({"workspace": "team"}));
    assert_eq!(listed["webhooks"].as_array().unwrap().len(), 1);
    for (tool, args) in [
        ("create_webhook", json!({"url": HOOK, "events": ["goal.met"], "workspace": "team"})),
        ("delete_webhook", json!({"webhook_id": id, "workspace": "team"})),
        ("rotate_webhook_secret", json!({"webhook_id": id, "workspace": "team"})),
        ("test_webhook", json!({"webhook_id": id, "workspace": "team"})),
    ] {
        assert_eq!(app.err_code(&bob.key, tool, args), "forbidden", "{tool}");
    }
    let cy = app.signup("Cy", "cy@example.com");
    app.join(&ada, "team", &cy, "admin");
    app.ok(&cy.key, "rotate_webhook_secret", json!({"webhook_id": id, "workspace": "team"}));
    app.ok(&cy.key, "delete_webhook", json!({"webhook_id": id, "workspace": "team"}));
    assert_eq!(app.ok(&ada.key, "list_webhooks", json!({"workspace": "team"}))["webhooks"], json!([]));
}

#[test]
fn failures_retry_on_the_schedule_with_one_id_then_dead_letter() {
    let app = app_with(Some(vec![10, 100]));
    let ada = app.signup("Ada", "ada@example.com");
    let (id, _) = create(&app, &ada, json!(["goal.met"]));
    answer(&app, 500);
    app.ok(&ada.key, "test_webhook", json!({"webhook_id": id}));
    let stale = app.queue.0.borrow()[0].clone();
    let t0 = app.now_ms.get();
    deliver(&app);
    let d = &app.ok(&ada.key, "list_webhooks", json!({}))["deliveries"][0];
    assert_eq!(
        (d["status"].as_str(), d["attempts"].as_i64(), d["last_status"].as_i64()),
        (Some("pending"), Some(1), Some(500))
    );
    assert_eq!(d["last_body"], "{\"ok\":false}");
    let wait = d["next_attempt_ms"].as_i64().unwrap() - t0;
    assert!((8_000..=12_000).contains(&wait), "10 s ± 20 % jitter, got {wait} ms");
    // A duplicate of the first message claims nothing.
    app.queue.0.borrow_mut().push(stale);
    app.advance(10_000);
    assert_eq!(deliver(&app), 2);
    assert_eq!(app.sessions.net.requests.borrow().len(), 2, "the duplicate sent nothing");
    let d = &app.ok(&ada.key, "list_webhooks", json!({}))["deliveries"][0];
    assert_eq!((d["status"].as_str(), d["attempts"].as_i64()), (Some("pending"), Some(2)));
    let wait = d["next_attempt_ms"].as_i64().unwrap() - app.now_ms.get();
    assert!((80_000..=120_000).contains(&wait), "{wait}");
    app.advance(100_000);
    deliver(&app);
    let d = &app.ok(&ada.key, "list_webhooks", json!({}))["deliveries"][0];
    assert_eq!((d["status"].as_str(), d["attempts"].as_i64()), (Some("failed"), Some(3)), "{d}");
    assert!(app.queue.0.borrow().is_empty(), "nothing more is queued once it is dead-lettered");
    let reqs = app.sessions.net.requests.borrow();
    let ids: Vec<&str> = reqs.iter().map(|o| header(o, "webhook-id")).collect();
    assert_eq!(ids.len(), 3);
    assert!(ids.iter().all(|i| *i == ids[0]), "one id on every retry: {ids:?}");
}

fn sweep(app: &TestApp) -> usize {
    app.system(|cx| Box::pin(agentsky::domain::webhooks::sweep(cx))).unwrap()
}

#[test]
fn a_lost_message_is_sent_again_by_the_next_cron_tick() {
    let app = app_with(None);
    let ada = app.signup("Ada", "ada@example.com");
    let (id, _) = create(&app, &ada, json!(["goal.met"]));
    answer(&app, 200);
    app.ok(&ada.key, "test_webhook", json!({"webhook_id": id}));
    app.queue.0.borrow_mut().clear();
    app.advance(9_000);
    assert_eq!(sweep(&app), 0, "its message may still be on its way");
    // The next tick past ten seconds sends it: a lost message goes out within 70 s of its time, not 120 s.
    app.advance(2_000);
    assert_eq!(sweep(&app), 1);
    deliver(&app);
    assert_eq!(deliveries(&app), vec![("webhook.test".into(), "delivered".into())]);
}

/// (next_attempt_ms, attempts, status) of the one delivery.
fn the_delivery(app: &TestApp) -> (i64, i64, String) {
    let sql = "SELECT next_attempt_ms, attempts, status FROM webhook_delivery";
    app.db.0.query_row(sql, [], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?))).unwrap()
}

#[test]
fn an_attempt_holds_its_delivery_no_longer_than_its_timeout_and_its_retry_wait() {
    let app = app_with(Some(vec![10, 100]));
    let ada = app.signup("Ada", "ada@example.com");
    let (id, _) = create(&app, &ada, json!(["goal.met"]));
    // The receiver looks at the delivery while its POST is in flight, then fails it.
    let db = app.db.clone();
    let seen = Rc::new(Cell::new(0));
    let seen_by_receiver = seen.clone();
    app.sessions.net.answer(move |_| {
        let held = db.0.query_row("SELECT next_attempt_ms FROM webhook_delivery", [], |r| r.get(0)).unwrap();
        seen_by_receiver.set(held);
        HttpResponse { status: 503, headers: vec![], body: vec![] }
    });
    app.ok(&ada.key, "test_webhook", json!({"webhook_id": id}));
    let t0 = app.now_ms.get();
    deliver(&app);
    let held = seen.get() - t0;
    let attempt = ATTEMPT_TIMEOUT_MS + CLAIM_MARGIN_MS;
    assert!(
        (attempt + 8_000..=attempt + 12_000).contains(&held),
        "held for the attempt ({attempt} ms) and the first retry's 10 s ± 20 %, not ten minutes: {held} ms"
    );
    // A receiver that does not answer within the timeout is cut there and retried on the schedule.
    app.advance(12_000);
    let slow = SlowNet::new(3);
    let batch = drain(&app);
    let t1 = app.now_ms.get();
    app.system(move |cx| Box::pin(consume(cx, slow, batch)));
    assert_eq!(app.now_ms.get() - t1, ATTEMPT_TIMEOUT_MS, "the attempt waited its timeout");
    let d = &app.ok(&ada.key, "list_webhooks", json!({}))["deliveries"][0];
    assert_eq!((d["status"].as_str(), d["attempts"].as_i64()), (Some("pending"), Some(2)), "{d}");
    assert_eq!(d["last_body"], "no answer within 15 seconds");
    let wait = d["next_attempt_ms"].as_i64().unwrap() - app.now_ms.get();
    assert!((80_000..=120_000).contains(&wait), "the second retry's wait after the timeout: {wait}");
}

#[test]
fn a_delivery_cut_by_a_crash_goes_out_again_at_its_retry_time() {
    let app = app_with(Some(vec![10, 100]));
    let ada = app.signup("Ada", "ada@example.com");
    let (id, _) = create(&app, &ada, json!(["goal.met"]));
    answer(&app, 200);
    app.ok(&ada.key, "test_webhook", json!({"webhook_id": id}));
    let batch = drain(&app);
    let t0 = app.now_ms.get();
    // The isolate dies while the POST is in flight: the attempt is claimed and never settles.
    let (delivery_id, attempt) = batch[0].clone();
    let hung = SlowNet::new(u32::MAX);
    let hung_net = hung.clone();
    app.system_patient(move |cx| {
        Box::pin(async move {
            let attempt = agentsky::domain::webhooks::deliver(cx, &hung_net, &delivery_id, attempt);
            futures::future::select(std::pin::pin!(attempt), Polls(2)).await;
        })
    });
    assert_eq!(hung.0.calls.borrow().len(), 1);
    let (due, attempts, status) = the_delivery(&app);
    assert_eq!((attempts, status.as_str()), (1, "pending"));
    let hold = ATTEMPT_TIMEOUT_MS + CLAIM_MARGIN_MS;
    assert!((hold + 8_000..=hold + 12_000).contains(&(due - t0)), "due when the retry would be: {}", due - t0);
    // The queue hands the crashed message over again: that attempt is taken, so it claims nothing.
    app.queue.0.borrow_mut().push(json!({"webhook_delivery": batch[0].0, "attempt": 0}));
    deliver(&app);
    assert!(app.sessions.net.requests.borrow().is_empty());
    app.now_ms.set(due - 1);
    assert_eq!(sweep(&app), 0, "still held");
    // The first cron tick past its time and the grace sends it: within about 45 s of the crash, not 11 min.
    app.now_ms.set(due + 10_001);
    assert_eq!(sweep(&app), 1);
    assert_eq!(drain(&app)[0].1, 1, "the next attempt");
    app.queue.0.borrow_mut().push(json!({"webhook_delivery": batch[0].0, "attempt": 1}));
    deliver(&app);
    assert_eq!(the_delivery(&app).1, 2);
    assert_eq!(the_delivery(&app).2, "delivered");
}

#[test]
fn a_late_outcome_of_an_attempt_whose_claim_lapsed_never_undoes_the_next_attempts() {
    let app = app_with(Some(vec![10, 100]));
    let ada = app.signup("Ada", "ada@example.com");
    let (id, _) = create(&app, &ada, json!(["goal.met"]));
    answer(&app, 200);
    app.ok(&ada.key, "test_webhook", json!({"webhook_id": id}));
    let (delivery_id, _) = drain(&app).remove(0);
    // The first attempt's receiver fails it, but only after its claim lapsed and the sweep's message
    // (attempt 1) delivered it.
    let late = SlowNet(Rc::new(Slow { polls: 5, status: 500, ..Slow::default() }));
    let (now, on_time) = (app.now_ms.clone(), app.sessions.net.clone());
    app.system_patient(move |cx| {
        Box::pin(async move {
            let first = agentsky::domain::webhooks::deliver(cx, &late, &delivery_id, 0);
            let second = async {
                Polls(1).await;
                now.set(now.get() + 60_000);
                agentsky::domain::webhooks::deliver(cx, &on_time, &delivery_id, 1).await
            };
            let (first, second) = futures::join!(first, second);
            (first.unwrap(), second.unwrap())
        })
    });
    let (_, attempts, status) = the_delivery(&app);
    assert_eq!((attempts, status.as_str()), (2, "delivered"));
    assert!(app.queue.0.borrow().is_empty(), "no retry queued for the superseded attempt");
}

#[test]
fn deliveries_go_out_to_different_endpoints_at_once_and_to_each_one_in_order() {
    let app = app_with(None);
    let ada = app.signup("Ada", "ada@example.com");
    let endpoint = |n: usize| {
        let made = app.ok(&ada.key, "create_webhook", json!({"url": format!("{HOOK}/{n}"), "events": ["goal.met"]}));
        made["webhook"]["webhook_id"].as_str().unwrap().to_owned()
    };
    let four: Vec<String> = (0..4).map(endpoint).collect();
    // 38 pending deliveries to 4 endpoints, each receiver taking a while to answer.
    let mut sent: HashMap<String, Vec<String>> = HashMap::new();
    for i in 0..38 {
        let event = app.ok(&ada.key, "test_webhook", json!({"webhook_id": four[i % 4]}))["event_id"].clone();
        sent.entry(format!("{HOOK}/{}", i % 4)).or_default().push(event.as_str().unwrap().to_owned());
        app.advance(1);
    }
    // Newest first in the batch: the order each endpoint sees is its deliveries' age, not the batch's.
    let mut batch = drain(&app);
    batch.reverse();
    let slow = SlowNet::new(3);
    let net = slow.clone();
    app.system_patient(move |cx| Box::pin(consume(cx, net, batch)));
    assert_eq!(slow.0.most_in_flight.get(), 4, "one POST in flight per endpoint, all four at once");
    assert_eq!(slow.0.most_per_url.get(), 1, "never two at once to one endpoint");
    let mut seen: HashMap<String, Vec<String>> = HashMap::new();
    for o in slow.0.calls.borrow().iter() {
        seen.entry(o.url.clone()).or_default().push(header(o, "webhook-id").to_owned());
    }
    assert_eq!(seen, sent, "each endpoint got its events oldest first");
    assert!(deliveries(&app).iter().all(|(_, status)| status == "delivered"));
    // Eight endpoints at once is more than a Worker keeps connections open for: six go out together.
    let eight: Vec<String> = four.into_iter().chain((4..8).map(endpoint)).collect();
    for id in &eight {
        app.ok(&ada.key, "test_webhook", json!({"webhook_id": id}));
    }
    let slow = SlowNet::new(3);
    let (net, batch) = (slow.clone(), drain(&app));
    app.system_patient(move |cx| Box::pin(consume(cx, net, batch)));
    assert_eq!(slow.0.calls.borrow().len(), 8);
    assert_eq!(slow.0.most_in_flight.get(), agentsky::domain::webhooks::CONCURRENT_ENDPOINTS);
}

fn echo_agent(app: &TestApp, who: &Account) -> String {
    let r = app.request(
        "POST",
        "/v1/agents",
        Some(&who.key),
        Some(json!({"name": "Dev", "harness": "echo", "model": "m"})),
    );
    r.json_body()["agent_id"].as_str().unwrap().to_owned()
}

#[test]
fn events_are_emitted_where_they_happen() {
    let app = app_with(None);
    let ada = app.signup("Ada", "ada@example.com");
    let all: Vec<&str> = agentsky::rules::webhooks::EVENTS.iter().copied().filter(|e| *e != "webhook.test").collect();
    let (_, _) = create(&app, &ada, json!(all));
    let agent = echo_agent(&app, &ada);
    // A turn that finishes.
    let s = app.ok(&ada.key, "start_session", json!({"agent_id": agent, "message": "hello", "idempotency_key": "s1"}));
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    assert_eq!(deliveries(&app), vec![("turn.finished".into(), "pending".into())]);
    // A question nobody answers in time: opened, then expired.
    let token = app.session_token(&ada.key, &sid);
    let err = app.agent_err(&token, "ask_user", json!({"kind": "question", "payload": {"prompt": "Proceed?"}}));
    assert!(err.contains("timed out"), "{err}");
    let events: Vec<String> = deliveries(&app).into_iter().map(|(e, _)| e).collect();
    assert_eq!(events, ["turn.finished", "request.opened", "request.expired"]);
    let payload: String = app
        .db
        .0
        .query_row("SELECT payload FROM webhook_delivery WHERE event = 'request.opened'", [], |r| r.get(0))
        .unwrap();
    let payload: Value = serde_json::from_str(&payload).unwrap();
    assert_eq!(payload["data"]["kind"], "question");
    assert_eq!(payload["data"]["payload"]["prompt"], "Proceed?");
    assert_eq!(payload["data"]["session_id"], sid.as_str());
    // A routine run now: fired.
    let r = app.ok(&ada.key, "create_routine", json!({"name": "Now", "message": "hi", "agent_id": agent}));
    app.ok(&ada.key, "run_routine", json!({"routine_id": r["routine_id"], "idempotency_key": "r1"}));
    assert!(deliveries(&app).iter().any(|(e, _)| e == "routine.fired"), "{:?}", deliveries(&app));
    // A routine whose session is gone: failed.
    let bad = app.ok(&ada.key, "create_routine", json!({"name": "Gone", "message": "hi", "session_id": sid}));
    app.ok(&ada.key, "stop_session", json!({"session_id": sid}));
    let args = json!({"routine_id": bad["routine_id"], "idempotency_key": "r2"});
    assert_eq!(app.err_code(&ada.key, "run_routine", args), "session_terminated");
    assert!(deliveries(&app).iter().any(|(e, _)| e == "routine.failed"), "{:?}", deliveries(&app));
    // Every event reached every endpoint once: one delivery per (event id, endpoint).
    let dupes: i64 = app
        .db
        .0
        .query_row(
            "SELECT COUNT(*) FROM (SELECT event_id FROM webhook_delivery GROUP BY event_id, webhook_id HAVING COUNT(*) > 1)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(dupes, 0);
}

#[test]
fn slack_endpoints_get_a_request_as_a_message_with_a_link_to_answer_it() {
    let payload = json!({"type": "request.opened", "timestamp": "x", "data": {
        "kind": "access", "agent_name": "Dev <bot>", "answer_url": "http://127.0.0.1:8787/console",
        "payload": {"target": "web", "env": "prod", "scope": ["deploy"], "reason": "ship it"}}});
    let m = agentsky::domain::webhooks::slack_message("request.opened", &payload.to_string());
    let text = m["text"].as_str().unwrap();
    assert!(text.contains("Dev &lt;bot&gt; asks (access): access to web (prod) for deploy: ship it"), "{text}");
    assert!(text.contains("http://127.0.0.1:8787/console"));
    assert_eq!(m["blocks"][1]["elements"][0]["url"], "http://127.0.0.1:8787/console");
}

fn console_request(method: &str, path: &str, cookie: Option<&str>, body: String) -> agentsky::http::HttpRequest {
    let mut headers = vec![("host".to_owned(), "127.0.0.1:8787".to_owned())];
    if let Some(c) = cookie {
        headers.push(("cookie".into(), c.to_owned()));
    }
    if method == "POST" {
        headers.push(("origin".into(), "http://127.0.0.1:8787".into()));
        headers.push(("content-type".into(), "application/x-www-form-urlencoded".into()));
    }
    agentsky::http::HttpRequest {
        stream: None,
        method: method.into(),
        path: path.into(),
        query: String::new(),
        headers,
        body: body.into_bytes(),
        client_ip: "203.0.113.9".into(),
    }
}

fn console_form(fields: &[(&str, &str)]) -> String {
    form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish()
}

fn console_sign_in(app: &TestApp, key: &str) -> String {
    let r = app.send(console_request("POST", "/console/login", None, console_form(&[("key", key)])));
    assert_eq!(r.status, 303);
    r.header("set-cookie").unwrap().split(';').next().unwrap().to_owned()
}

#[test]
fn the_console_adds_an_endpoint_shows_its_secret_once_and_a_failed_delivery_with_its_last_answer() {
    let app = app_with(Some(vec![]));
    let ada = app.signup("Ada", "ada@example.com");
    let cookie = console_sign_in(&app, &ada.key);
    let page = format!("/console/w/{}/webhooks", ada.slug);
    let html = String::from_utf8(app.send(console_request("GET", &page, Some(&cookie), String::new())).body).unwrap();
    assert!(html.contains("Add an endpoint") && html.contains("No endpoints"), "{html}");
    let at = html.find("name=\"csrf\" value=\"").unwrap() + 19;
    let csrf = html[at..at + 64].to_owned();
    let fields = [
        ("csrf", csrf.as_str()),
        ("workspace", ada.slug.as_str()),
        ("url", HOOK),
        ("events", "request.opened"),
        ("events", "goal.met"),
        ("format", "slack"),
    ];
    let op = format!("/console/w/{}/op/create_webhook", ada.slug);
    let r = app.send(console_request("POST", &op, Some(&cookie), console_form(&fields)));
    let shown = String::from_utf8(r.body).unwrap();
    assert!(shown.contains("signing secret") && shown.contains("whsec_"), "{shown}");
    let listed = app.ok(&ada.key, "list_webhooks", json!({}));
    assert_eq!(listed["webhooks"][0]["events"], json!(["request.opened", "goal.met"]));
    assert_eq!(listed["webhooks"][0]["format"], "slack");
    // With an empty schedule the first failure is the last: dead-lettered, shown with its answer.
    answer(&app, 502);
    app.ok(&ada.key, "test_webhook", json!({"webhook_id": listed["webhooks"][0]["webhook_id"]}));
    deliver(&app);
    let html = String::from_utf8(app.send(console_request("GET", &page, Some(&cookie), String::new())).body).unwrap();
    assert!(
        html.contains("webhook.test") && html.contains("HTTP 502") && html.contains("{&quot;ok&quot;:false}"),
        "{html}"
    );
    assert!(!html.contains("whsec_"), "the secret is never shown again");
}

//! Web Push (issue 39): a person's browsers subscribe, list and remove themselves; a new request is pushed
//! to every member's browser, encrypted so only that browser reads it (decrypted here as a browser would,
//! RFC 8291) and signed for the push service (VAPID, RFC 8292); a gone subscription is removed; a
//! notification's buttons answer the request once, as the subscriber, with `answer_request`'s rules.

use crate::support::{browser_request, Account, HostSessions, MemoryQueue, TestApp};
use agentsky::cx::{Cx, Outbound};
use agentsky::http::{HttpRequest, HttpResponse};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use hmac::{Hmac, Mac};
use p256::ecdsa::signature::Verifier;
use p256::elliptic_curve::sec1::ToEncodedPoint;
use serde_json::{json, Value};

/// A browser's side of a subscription: its ECDH key pair and auth secret, and its endpoint.
struct Browser {
    private: p256::SecretKey,
    public: Vec<u8>,
    auth: [u8; 16],
    endpoint: String,
}

fn browser(n: u32) -> Browser {
    let private = loop {
        let bytes: [u8; 32] = agentsky::rules::ids::random_bytes();
        if let Ok(k) = p256::SecretKey::from_slice(&bytes) {
            break k;
        }
    };
    let public = private.public_key().to_encoded_point(false).as_bytes().to_vec();
    Browser {
        private,
        public,
        auth: agentsky::rules::ids::random_bytes(),
        endpoint: format!("https://push.example.com/wpush/v2/device-{n}"),
    }
}

impl Browser {
    /// `PushSubscription.toJSON()`.
    fn subscription(&self) -> Value {
        json!({"endpoint": self.endpoint, "expirationTime": null,
            "keys": {"p256dh": URL_SAFE_NO_PAD.encode(&self.public), "auth": URL_SAFE_NO_PAD.encode(self.auth)}})
    }

    /// A pushed body, decrypted as the browser does (RFC 8291 §3–4, RFC 8188): the JSON it carried.
    fn decrypt(&self, body: &[u8]) -> Value {
        use aes_gcm::aead::{Aead, KeyInit};
        let (salt, rs, idlen) = (&body[..16], u32::from_be_bytes(body[16..20].try_into().unwrap()), body[20] as usize);
        assert_eq!((rs, idlen), (4096, 65));
        let as_public = &body[21..21 + idlen];
        let sender = p256::PublicKey::from_sec1_bytes(as_public).unwrap();
        let shared = p256::ecdh::diffie_hellman(self.private.to_nonzero_scalar(), sender.as_affine());
        let hkdf = |salt: &[u8], ikm: &[u8], info: &[u8], len: usize| -> Vec<u8> {
            let mut m = <Hmac<sha2::Sha256> as Mac>::new_from_slice(salt).unwrap();
            m.update(ikm);
            let prk = m.finalize().into_bytes();
            let mut m = <Hmac<sha2::Sha256> as Mac>::new_from_slice(&prk).unwrap();
            m.update(info);
            m.update(&[1]);
            m.finalize().into_bytes()[..len].to_vec()
        };
        let key_info = [&b"WebPush: info\0"[..], &self.public, as_public].concat();
        let ikm = hkdf(&self.auth, shared.raw_secret_bytes(), &key_info, 32);
        let cek = hkdf(salt, &ikm, b"Content-Encoding: aes128gcm\0", 16);
        let nonce = hkdf(salt, &ikm, b"Content-Encoding: nonce\0", 12);
        let cipher = aes_gcm::Aes128Gcm::new_from_slice(&cek).unwrap();
        let mut plain = cipher.decrypt(aes_gcm::Nonce::from_slice(&nonce), &body[21 + idlen..]).unwrap();
        assert_eq!(plain.pop(), Some(2), "the last record's padding delimiter");
        serde_json::from_slice(&plain).unwrap()
    }
}

/// The VAPID header of a push, checked against the deployment's public key: the token's audience is the
/// push service's origin, it expires within a day, and its ES256 signature verifies.
fn check_vapid(out: &Outbound, public_key: &str, now_s: i64) {
    let header = |name: &str| out.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str()).unwrap_or_default();
    assert_eq!(header("content-encoding"), "aes128gcm");
    assert!(header("ttl").parse::<i64>().unwrap() > 0);
    assert_eq!(header("urgency"), "high");
    let (token, k) = header("authorization").strip_prefix("vapid t=").unwrap().split_once(", k=").unwrap();
    assert_eq!(k, public_key);
    let parts: Vec<&str> = token.split('.').collect();
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    assert_eq!(claims["aud"], "https://push.example.com");
    let exp = claims["exp"].as_i64().unwrap();
    assert!(exp > now_s && exp <= now_s + 24 * 3600, "{claims}");
    assert!(
        claims["sub"].as_str().unwrap().starts_with("mailto:")
            || claims["sub"].as_str().unwrap().starts_with("https://")
    );
    let key = p256::ecdsa::VerifyingKey::from_sec1_bytes(&URL_SAFE_NO_PAD.decode(public_key).unwrap()).unwrap();
    let signature = p256::ecdsa::Signature::from_slice(&URL_SAFE_NO_PAD.decode(parts[2]).unwrap()).unwrap();
    key.verify(format!("{}.{}", parts[0], parts[1]).as_bytes(), &signature).unwrap();
}

fn subscribe(app: &TestApp, key: &str, b: &Browser) -> Value {
    let r = app.request("POST", "/v1/push/subscriptions", Some(key), Some(b.subscription()));
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    r.json_body()["subscription"].clone()
}

/// A notification's button pressed: the service worker's POST.
fn press(token: &str) -> HttpRequest {
    let mut req = browser_request("POST", "/console/push/answer", None, "", Some("http://127.0.0.1:8787"));
    req.headers.retain(|(k, _)| k != "content-type");
    req.headers.push(("content-type".into(), "application/json".into()));
    req.body = json!({ "token": token }).to_string().into_bytes();
    req
}

/// Delivers what was enqueued (by the app or the session objects), as the queue consumer does; returns
/// what was pushed.
async fn deliver_queued(sessions: &HostSessions, queue: &MemoryQueue) -> Vec<Outbound> {
    let before = sessions.net.requests.borrow().len();
    let mut messages: Vec<Value> = sessions.queue.0.borrow_mut().drain(..).collect();
    messages.extend(queue.0.borrow_mut().drain(..));
    let env = sessions.env();
    let cx = Cx::system(&env, env.clock.now_ms(), "req_push".into());
    for m in messages.iter().filter(|m| m.get("web_push").is_some()) {
        agentsky::domain::push::deliver(&cx, &sessions.net, m).await.unwrap();
    }
    sessions.net.requests.borrow()[before..].to_vec()
}

struct Team {
    app: TestApp,
    ada: Account,
    mo: Account,
    zed: Account,
    token: String,
    sid: String,
}

/// `acme`, owned by Ada, with Mo a member; Zed in no part of it. Ada's session of the agent `D`, and two
/// targets: `web` on production, `preview` not.
fn team() -> Team {
    let app = TestApp::with_secrets();
    let ada = app.signup("Ada", "ada@example.com");
    let mo = app.signup("Mo", "mo@example.com");
    let zed = app.signup("Zed", "zed@example.com");
    app.shared_workspace(&ada, "acme");
    app.join(&ada, "acme", &mo, "member");
    let agent =
        app.ok(&ada.key, "create_agent", json!({"name": "D", "harness": "echo", "model": "m", "workspace": "acme"}));
    let s = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent["agent_id"], "message": "ship the site", "idempotency_key": "k", "workspace": "acme"}),
    );
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    let token = app.session_token(&ada.key, &sid);
    for (name, env) in [("web", "prod"), ("preview", "preview")] {
        let con = app.request(
            "POST",
            "/v1/connectors?workspace=acme",
            Some(&ada.key),
            Some(json!({"name": name, "provider": "vercel", "env": env, "credentials": {"env": {"T": "x"}}})),
        );
        assert_eq!(con.status, 200, "{:?}", con.json_body());
    }
    Team { app, ada, mo, zed, token, sid }
}

#[test]
fn a_browser_subscribes_once_lists_and_removes_itself_and_bad_subscriptions_are_refused() {
    let app = TestApp::with_secrets();
    let ada = app.signup("Ada", "ada@example.com");
    let key = app.request("GET", "/v1/push/vapid-key", Some(&ada.key), None).json_body()["public_key"].clone();
    let raw = URL_SAFE_NO_PAD.decode(key.as_str().unwrap()).unwrap();
    assert_eq!((raw.len(), raw[0]), (65, 4), "an uncompressed P-256 point");
    let again = app.request("GET", "/v1/push/vapid-key", Some(&ada.key), None).json_body()["public_key"].clone();
    assert_eq!(key, again, "made once per deployment");
    let sealed: String = app.db.0.query_row("SELECT private_sealed FROM push_vapid", [], |r| r.get(0)).unwrap();
    assert!(sealed.len() > 40);

    let b = browser(1);
    let first = subscribe(&app, &ada.key, &b);
    assert_eq!(first["label"], "push.example.com");
    assert_eq!(first["endpoint"], b.endpoint.as_str());
    let second = subscribe(&app, &ada.key, &b);
    assert_eq!(first["subscription_id"], second["subscription_id"], "the same endpoint is one subscription");
    let listed = app.request("GET", "/v1/push/subscriptions", Some(&ada.key), None).json_body();
    assert_eq!(listed["subscriptions"].as_array().unwrap().len(), 1);
    assert!(listed.to_string().find("p256dh").is_none(), "keys are never shown");

    let mut bad = b.subscription();
    bad["keys"]["p256dh"] = json!("AAAA");
    assert_eq!(app.request("POST", "/v1/push/subscriptions", Some(&ada.key), Some(bad)).status, 400);
    let mut plain_http = browser(2).subscription();
    plain_http["endpoint"] = json!("http://push.example.com/x");
    assert_eq!(app.request("POST", "/v1/push/subscriptions", Some(&ada.key), Some(plain_http)).status, 400);
    let mut private = browser(3).subscription();
    private["endpoint"] = json!("https://10.0.0.1/x");
    assert_eq!(app.request("POST", "/v1/push/subscriptions", Some(&ada.key), Some(private)).status, 400);

    let bob = app.signup("Bob", "bob@example.com");
    let id = first["subscription_id"].as_str().unwrap();
    let path = format!("/v1/push/subscriptions/{id}");
    assert_eq!(app.request("DELETE", &path, Some(&bob.key), None).status, 404, "only one's own");
    assert_eq!(app.request("DELETE", &path, Some(&ada.key), None).status, 200);
    assert_eq!(app.request("DELETE", &path, Some(&ada.key), None).status, 404);

    let bare = TestApp::new();
    let ada = bare.signup("Ada", "ada@example.com");
    let r = bare.request("GET", "/v1/push/vapid-key", Some(&ada.key), None);
    assert_eq!(r.status, 501, "{:?}", r.json_body());
    assert!(r.json_body().to_string().contains("SECRETS_KEY"));
}

#[test]
fn a_new_access_request_is_pushed_encrypted_to_each_members_browser_and_a_button_answers_it_once() {
    let t = team();
    let public_key = t.app.request("GET", "/v1/push/vapid-key", Some(&t.ada.key), None).json_body()["public_key"]
        .as_str()
        .unwrap()
        .to_owned();
    let (ada_phone, mo_laptop, zed_phone) = (browser(1), browser(2), browser(3));
    subscribe(&t.app, &t.ada.key, &ada_phone);
    subscribe(&t.app, &t.mo.key, &mo_laptop);
    subscribe(&t.app, &t.zed.key, &zed_phone);
    t.app.sessions.net.answer(|_| HttpResponse::new(201));

    let pending = t.app.agent_ok(
        &t.token,
        "request_access",
        json!({"target": "preview", "scope": ["deploy"], "reason": "try the new build"}),
    );
    assert_eq!(pending["status"], "pending");
    let pushed = futures::executor::block_on(deliver_queued(&t.app.sessions, &t.app.queue));
    let endpoints: Vec<&str> = pushed.iter().map(|o| o.url.as_str()).collect();
    assert_eq!(endpoints.len(), 2, "Ada and Mo, not Zed: {endpoints:?}");
    assert!(!endpoints.contains(&zed_phone.endpoint.as_str()));
    let now_s = t.app.now_ms.get() / 1000;
    let mut payloads = Vec::new();
    for out in &pushed {
        check_vapid(out, &public_key, now_s);
        let b = if out.url == ada_phone.endpoint { &ada_phone } else { &mo_laptop };
        payloads.push((out.url.clone(), b.decrypt(&out.body)));
        assert!(zed_phone.decrypt_fails(&out.body), "only the subscribed browser reads it");
    }
    let (_, mo_said) = payloads.iter().find(|(u, _)| *u == mo_laptop.endpoint).unwrap();
    let request_id = mo_said["request_id"].as_str().unwrap();
    assert_eq!(mo_said["title"], "D asks · ship the site");
    assert!(
        mo_said["body"].as_str().unwrap().contains("preview") && mo_said["body"].as_str().unwrap().contains("deploy")
    );
    assert_eq!(mo_said["url"], format!("/console/w/acme#request-{request_id}"));
    assert_eq!(mo_said["task_id"], t.sid.as_str());
    let titles: Vec<&str> =
        mo_said["actions"].as_array().unwrap().iter().map(|a| a["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["Approve once", "Deny"], "never `always`");
    let listed = t.app.request("GET", "/v1/push/subscriptions", Some(&t.mo.key), None).json_body();
    assert!(listed["subscriptions"][0]["last_ok_ms"].is_i64());

    // Mo (a member, who may approve once) presses Approve.
    let approve = mo_said["actions"][0]["token"].as_str().unwrap();
    let r = t.app.send(press(approve));
    assert_eq!(r.status, 200, "{:?}", r.json_body());
    assert_eq!(r.json_body()["status"], "answered");
    let task = t.app.ok(&t.ada.key, "get_task", json!({"task_id": t.sid}));
    assert!(task["open_requests"].as_array().unwrap().is_empty(), "{task}");
    let audit = t.app.request("GET", "/v1/audit?workspace=acme&limit=500", Some(&t.ada.key), None).json_body();
    assert!(audit.to_string().contains("via push"), "{audit}");
    // Once: the same button again, and every other button of the request, no longer work.
    assert_eq!(t.app.send(press(approve)).status, 404);
    let (_, ada_said) = payloads.iter().find(|(u, _)| *u == ada_phone.endpoint).unwrap();
    assert_eq!(t.app.send(press(ada_said["actions"][1]["token"].as_str().unwrap())).status, 404);
    assert_eq!(t.app.send(press("pa_made_up")).status, 404);
}

impl Browser {
    fn decrypt_fails(&self, body: &[u8]) -> bool {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.decrypt(body))).is_err()
    }
}

#[test]
fn a_production_deploy_carries_no_buttons_and_a_gone_subscription_is_removed() {
    let t = team();
    let (ada_phone, mo_laptop) = (browser(1), browser(2));
    subscribe(&t.app, &t.ada.key, &ada_phone);
    subscribe(&t.app, &t.mo.key, &mo_laptop);
    let gone = mo_laptop.endpoint.clone();
    t.app.sessions.net.answer(move |out| HttpResponse::new(if out.url == gone { 410 } else { 201 }));
    t.app.agent_ok(&t.token, "request_access", json!({"target": "web", "scope": ["deploy"], "reason": "ship"}));
    let pushed = futures::executor::block_on(deliver_queued(&t.app.sessions, &t.app.queue));
    assert_eq!(pushed.len(), 2);
    let ada_out = pushed.iter().find(|o| o.url == ada_phone.endpoint).unwrap();
    let said = ada_phone.decrypt(&ada_out.body);
    assert_eq!(said["actions"], json!([]), "a production deploy is answered on its page: {said}");
    assert!(said["body"].as_str().unwrap().contains("web (prod)"));
    let mo = t.app.request("GET", "/v1/push/subscriptions", Some(&t.mo.key), None).json_body();
    assert_eq!(mo["subscriptions"], json!([]), "the push service said 410");
    let ada = t.app.request("GET", "/v1/push/subscriptions", Some(&t.ada.key), None).json_body();
    assert_eq!(ada["subscriptions"].as_array().unwrap().len(), 1);
}

#[test]
fn a_button_acts_with_the_subscribers_key_so_a_read_key_cannot_answer() {
    let t = team();
    let made = t.app.request("POST", "/v1/keys", Some(&t.mo.key), Some(json!({"name": "phone", "scopes": ["read"]})));
    assert_eq!(made.status, 201, "{:?}", made.json_body());
    let read_key = made.json_body()["key"].as_str().unwrap().to_owned();
    let r = t.app.request("POST", "/v1/push/subscriptions", Some(&read_key), Some(browser(9).subscription()));
    assert_eq!(r.status, 403, "subscribing changes something: a write key or the console");
    let phone = browser(2);
    subscribe(&t.app, &t.mo.key, &phone);
    // The key the phone subscribed with is revoked: its buttons act as nobody.
    t.app.sessions.net.answer(|_| HttpResponse::new(201));
    t.app.agent_ok(&t.token, "request_access", json!({"target": "preview", "scope": ["deploy"], "reason": "r"}));
    let pushed = futures::executor::block_on(deliver_queued(&t.app.sessions, &t.app.queue));
    let said = phone.decrypt(&pushed[0].body);
    let keys = t.app.request("GET", "/v1/keys", Some(&t.mo.key), None).json_body();
    let mo_key_id = keys["keys"].as_array().unwrap().iter().find(|k| k["name"] != "phone").unwrap()["key_id"].clone();
    let ada_made =
        t.app.request("POST", "/v1/keys", Some(&t.mo.key), Some(json!({"name": "spare", "scopes": ["read", "write"]})));
    let spare = ada_made.json_body()["key"].as_str().unwrap().to_owned();
    let revoked = t.app.request("DELETE", &format!("/v1/keys/{}", mo_key_id.as_str().unwrap()), Some(&spare), None);
    assert_eq!(revoked.status, 200, "{:?}", revoked.json_body());
    let r = t.app.send(press(said["actions"][0]["token"].as_str().unwrap()));
    assert_eq!(r.status, 401, "{:?}", r.json_body());
    let task = t.app.ok(&t.ada.key, "get_task", json!({"task_id": t.sid}));
    assert_eq!(task["open_requests"].as_array().unwrap().len(), 1, "still open");
}

#[test]
fn a_decisions_options_are_its_buttons_and_one_answers_the_waiting_agent() {
    let t = team();
    let phone = browser(1);
    subscribe(&t.app, &t.mo.key, &phone);
    t.app.sessions.net.answer(|_| HttpResponse::new(201));
    let said: std::rc::Rc<std::cell::RefCell<Value>> = Default::default();
    let (seen, phone_keys) = (said.clone(), (phone.private.clone(), phone.public.clone(), phone.auth));
    let queue = t.app.queue.clone();
    *t.app.sessions.on_wait.borrow_mut() = Some(std::rc::Rc::new(move |sessions: HostSessions, wait_key: String| {
        let (seen, (private, public, auth), queue) = (seen.clone(), phone_keys.clone(), queue.clone());
        Box::pin(async move {
            if !wait_key.starts_with("req_") || !seen.borrow().is_null() {
                return;
            }
            let pushed = deliver_queued(&sessions, &queue).await;
            let phone = Browser { private, public, auth, endpoint: String::new() };
            let payload = phone.decrypt(&pushed[0].body);
            let r = sessions.handle(press(payload["actions"][1]["token"].as_str().unwrap())).await;
            assert_eq!(r.status, 200, "{:?}", r.json_body());
            seen.replace(payload);
        })
    }));
    let answer = t.app.agent_ok(
        &t.token,
        "ask_user",
        json!({"kind": "decision", "payload": {"prompt": "Which db?", "options": ["pg", "sqlite"]}}),
    );
    *t.app.sessions.on_wait.borrow_mut() = None;
    assert_eq!(answer["resolution"], json!({"kind": "decision", "answer": "sqlite"}));
    let said = said.borrow();
    assert_eq!(said["body"], "Which db?");
    let titles: Vec<&str> = said["actions"].as_array().unwrap().iter().map(|a| a["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["pg", "sqlite"]);
}

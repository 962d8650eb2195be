//! The console: sign-in (a key, a one-time link), every page for an owner, a member and a read key,
//! escaping of what agents and tenants wrote, CSRF and origin checks, and a request answered in the page
//! releasing the agent that waits for it.

use crate::support::{browser_request as request, form_body as form, Account, HostSessions, TestApp};
use agentsky::http::HttpResponse;
use serde_json::json;
use std::rc::Rc;

const ORIGIN: &str = "http://127.0.0.1:8787";

/// Signs in with a key; the cookie to send back.
fn sign_in(app: &TestApp, key: &str) -> String {
    let r = app.send(request("POST", "/console/login", None, &form(&[("key", key)]), Some(ORIGIN)));
    assert_eq!(r.status, 303, "{}", String::from_utf8_lossy(&r.body));
    let set = r.header("set-cookie").unwrap().to_owned();
    assert!(set.contains("HttpOnly") && set.contains("SameSite=Lax"), "{set}");
    assert!(!set.contains("Secure"), "plain http on loopback cannot keep a Secure cookie: {set}");
    set.split(';').next().unwrap().to_owned()
}

fn get(app: &TestApp, cookie: &str, path: &str) -> (u16, String) {
    let r = app.send(request("GET", path, Some(cookie), "", None));
    (r.status, String::from_utf8_lossy(&r.body).into_owned())
}

fn csrf(html: &str) -> String {
    let at = html.find("name=\"csrf\" value=\"").expect("a form with a csrf field") + 19;
    html[at..at + 64].to_owned()
}

fn post(app: &TestApp, cookie: &str, path: &str, fields: &[(&str, &str)]) -> HttpResponse {
    app.send(request("POST", path, Some(cookie), &form(fields), Some(ORIGIN)))
}

fn flash(r: &HttpResponse) -> String {
    r.header("set-cookie").unwrap_or_default().to_owned()
}

/// A workspace with an echo agent called like an attack, a session, a task file and a routine.
fn seeded(app: &TestApp) -> (Account, String, String) {
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id =
        app.create_agent(&ada.key, json!({"name": "<script>alert('agent')</script>", "harness": "echo", "model": "m"}));
    let s = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent_id, "message": "<img src=x onerror=alert(1)> build it", "idempotency_key": "s1"}),
    );
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    app.ok(
        &ada.key,
        "write_task_file",
        json!({"task_id": sid, "path": "notes.md", "content": "</pre><script>x</script>"}),
    );
    app.ok(
        &ada.key,
        "create_routine",
        json!({"name": "daily", "agent_id": agent_id, "message": "go", "cron": "0 9 * * *"}),
    );
    (ada, agent_id, sid)
}

const PAGES: &[&str] = &[
    "",
    "/board",
    "/usage",
    "/agents",
    "/routines",
    "/access",
    "/runners",
    "/members",
    "/keys",
    "/webhooks",
    "/skills",
];

#[test]
fn signing_in_out_and_the_pages_a_browser_gets() {
    let app = TestApp::new();
    let (ada, agent_id, sid) = seeded(&app);
    let r = app.send(request("GET", "/console/w/ada/board", None, "", None));
    assert_eq!(r.status, 303);
    assert_eq!(r.header("location"), Some("/console/login?next=%2Fconsole%2Fw%2Fada%2Fboard"));
    let bad = app.send(request("POST", "/console/login", None, &form(&[("key", "ast_nope")]), Some(ORIGIN)));
    assert_eq!(bad.status, 401);
    let cookie = sign_in(&app, &ada.key);
    let home = app.send(request("GET", "/console", Some(&cookie), "", None));
    assert_eq!(home.header("location"), Some(format!("/console/w/{}", ada.slug).as_str()));
    let ws = format!("/console/w/{}", ada.slug);
    let mut paths: Vec<String> = PAGES.iter().map(|p| format!("{ws}{p}")).collect();
    paths.extend([
        format!("{ws}/sessions/{sid}"),
        format!("{ws}/tasks/{sid}"),
        format!("{ws}/tasks/{sid}?file=notes.md"),
        format!("{ws}/agents/{agent_id}"),
    ]);
    for path in &paths {
        let r = app.send(request("GET", path, Some(&cookie), "", None));
        let html = String::from_utf8_lossy(&r.body);
        assert_eq!(r.status, 200, "{path}: {html}");
        let csp = r.header("content-security-policy").unwrap();
        assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"), "{path}: {csp}");
        assert_eq!(r.header("cache-control"), Some("no-store"), "{path}");
        // What an agent or a tenant wrote is text, never markup: the only script is the console's own.
        assert_eq!(html.matches("<script").count(), 1, "{path}: {html}");
        assert!(!html.contains("<img src=x"), "{path}");
    }
    let (_, session) = get(&app, &cookie, &format!("{ws}/sessions/{sid}"));
    assert!(session.contains("&lt;img src=x onerror=alert(1)&gt; build it"), "{session}");
    assert!(session.contains("echo: &lt;img"), "the transcript shows the agent's reply");
    let (_, file) = get(&app, &cookie, &format!("{ws}/tasks/{sid}?file=notes.md"));
    assert!(file.contains("&lt;/pre&gt;&lt;script&gt;x&lt;/script&gt;"));

    // A workspace that is not yours is not found, whatever the page.
    let bo = app.signup("Bo", "bo@example.com");
    let (status, _) = get(&app, &sign_in(&app, &bo.key), &format!("{ws}/board"));
    assert_eq!(status, 404);

    // Signing out ends the session: the same cookie is refused.
    let (_, page) = get(&app, &cookie, &ws);
    let out =
        app.send(request("POST", "/console/logout", Some(&cookie), &form(&[("csrf", &csrf(&page))]), Some(ORIGIN)));
    assert_eq!(out.status, 303);
    assert!(out.header("set-cookie").unwrap().contains("Max-Age=0"));
    assert_eq!(app.send(request("GET", &ws, Some(&cookie), "", None)).status, 303, "signed out");

    // Revoking the key ends its console sessions too.
    let cookie = sign_in(&app, &ada.key);
    let key_id = app.request("GET", "/v1/keys", Some(&ada.key), None).json_body()["keys"][0]["key_id"].clone();
    assert_eq!(
        app.request("DELETE", &format!("/v1/keys/{}", key_id.as_str().unwrap()), Some(&ada.key), None).status,
        200
    );
    assert_eq!(app.send(request("GET", &ws, Some(&cookie), "", None)).status, 303, "its key was revoked");
}

#[test]
fn forms_need_the_sessions_csrf_token_and_this_origin() {
    let app = TestApp::new();
    let (ada, agent_id, _) = seeded(&app);
    let cookie = sign_in(&app, &ada.key);
    let ws = format!("/console/w/{}", ada.slug);
    let (_, page) = get(&app, &cookie, &format!("{ws}/agents/{agent_id}"));
    let token = csrf(&page);
    let path = format!("{ws}/op/update_agent");
    let fields = |t: &'static str| vec![("agent_id", agent_id.clone()), ("name", t.to_owned())];
    let as_refs = |v: &Vec<(&'static str, String)>, csrf: &str| {
        let mut out: Vec<(String, String)> = v.iter().map(|(k, v)| (k.to_string(), v.clone())).collect();
        out.push(("csrf".into(), csrf.to_owned()));
        out
    };
    let send = |fields: Vec<(String, String)>, origin: Option<&str>| {
        let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
        app.send(request("POST", &path, Some(&cookie), &body, origin))
    };
    assert_eq!(send(as_refs(&fields("No token"), ""), Some(ORIGIN)).status, 403);
    assert_eq!(send(as_refs(&fields("Wrong token"), &"0".repeat(64)), Some(ORIGIN)).status, 403);
    assert_eq!(send(as_refs(&fields("Other site"), &token), Some("https://evil.example")).status, 403);
    let other = sign_in(&app, &ada.key);
    let (_, other_page) = get(&app, &other, &ws);
    assert_eq!(send(as_refs(&fields("Another session's token"), &csrf(&other_page)), Some(ORIGIN)).status, 403);
    assert_eq!(app.ok(&ada.key, "list_agents", json!({}))["agents"][0]["name"], "<script>alert('agent')</script>");
    let ok = send(as_refs(&fields("Renamed"), &token), Some(ORIGIN));
    assert_eq!(ok.status, 303);
    assert!(flash(&ok).contains("agentsky_flash="));
    assert_eq!(app.ok(&ada.key, "list_agents", json!({}))["agents"][0]["name"], "Renamed");
}

/// A member sees every page of the workspace; what only owners and admins do is offered disabled, and a
/// forged form for it is refused by the operation itself.
#[test]
fn a_members_console_shows_every_page_and_its_role_decides_the_rest() {
    let app = TestApp::new();
    let (ada, _, sid) = seeded(&app);
    let bo = app.signup("Bo", "bo@example.com");
    let invited = app.request(
        "POST",
        &format!("/v1/workspaces/{}/invitations", ada.slug),
        Some(&ada.key),
        Some(json!({"role": "member"})),
    );
    let token = invited.json_body()["token"].as_str().unwrap().to_owned();
    assert!(app.request("POST", "/v1/invitations/accept", Some(&bo.key), Some(json!({"token": token}))).status < 300);
    let cookie = sign_in(&app, &bo.key);
    let ws = format!("/console/w/{}", ada.slug);
    let mut paths: Vec<String> = PAGES.iter().map(|p| format!("{ws}{p}")).collect();
    paths.push(format!("{ws}/sessions/{sid}"));
    for path in &paths {
        let (status, html) = get(&app, &cookie, path);
        assert_eq!(status, 200, "{path}");
        assert!(!html.contains("Read-only"), "a member's write key is not read-only: {path}");
    }
    let (_, members) = get(&app, &cookie, &format!("{ws}/members"));
    assert!(members.contains("Owners and admins invite people"), "{members}");
    let r = post(
        &app,
        &cookie,
        &format!("{ws}/op/create_invitation"),
        &[("workspace", &ada.slug), ("role", "admin"), ("csrf", &csrf(&members))],
    );
    let back =
        app.send(request("GET", &ws, Some(&format!("{cookie}; {}", flash(&r).split(';').next().unwrap())), "", None));
    assert!(String::from_utf8_lossy(&back.body).contains("this needs the admin role"), "the operation refused it");
}

#[test]
fn a_read_keys_console_can_look_but_not_change_and_says_so() {
    let app = TestApp::new();
    let (ada, agent_id, sid) = seeded(&app);
    let read = app.request("POST", "/v1/keys", Some(&ada.key), Some(json!({"name": "ro", "scopes": ["read"]})));
    let read_key = read.json_body()["key"].as_str().unwrap().to_owned();
    let cookie = sign_in(&app, &read_key);
    let ws = format!("/console/w/{}", ada.slug);
    for p in PAGES {
        let (status, html) = get(&app, &cookie, &format!("{ws}{p}"));
        assert_eq!(status, 200, "{p}");
        assert!(html.contains("Read-only: this console was opened with a read key"), "{p}");
    }
    let (_, page) = get(&app, &cookie, &format!("{ws}/sessions/{sid}"));
    assert!(page.contains("disabled"), "its buttons are disabled");
    let r = post(&app, &cookie, &format!("{ws}/op/delete_agent"), &[("agent_id", &agent_id), ("csrf", &csrf(&page))]);
    assert_eq!(r.status, 303);
    assert!(flash(&r).contains("agentsky_flash="));
    let back =
        app.send(request("GET", &ws, Some(&format!("{cookie}; {}", flash(&r).split(';').next().unwrap())), "", None));
    assert!(String::from_utf8_lossy(&back.body).contains("needs a key with the write scope"), "the page says why");
    assert_eq!(app.ok(&ada.key, "list_agents", json!({}))["agents"].as_array().unwrap().len(), 1, "nothing changed");
}

#[test]
fn a_member_approves_once_but_only_admins_approve_always() {
    let app = TestApp::with_secrets();
    let (ada, _, sid) = seeded(&app);
    let token = app.session_token(&ada.key, &sid);
    let connector = app.request(
        "POST",
        "/v1/connectors",
        Some(&ada.key),
        Some(
            json!({"name": "web", "provider": "vercel", "env": "prod", "credentials": {"env": {"VERCEL_TOKEN": "t"}}}),
        ),
    );
    assert_eq!(connector.status, 200, "{:?}", connector.json_body());
    // While the agent waits, the console's Approvals page shows its request; answering there releases it.
    let cookie = sign_in(&app, &ada.key);
    let ws = format!("/console/w/{}", ada.slug);
    let (c, w) = (cookie.clone(), ws.clone());
    *app.sessions.on_wait.borrow_mut() = Some(Rc::new(move |sessions: HostSessions, key: String| {
        let (cookie, ws) = (c.clone(), w.clone());
        Box::pin(async move {
            if !key.starts_with("req_") {
                return;
            }
            let page = sessions.handle(request("GET", &ws, Some(&cookie), "", None)).await;
            let html = String::from_utf8_lossy(&page.body).into_owned();
            assert!(html.contains("<title>(1) Approvals"), "the count is in the title: {html}");
            assert!(html.contains("Deploy the &lt;site&gt; now"), "the reason, word for word and escaped");
            assert!(html.contains(&format!("data-request=\"{key}\"")));
            let fields = [
                ("task_id", sid_of(&html)),
                ("request_id", key.clone()),
                ("answer", "approve".into()),
                ("expires_in_minutes", "15".into()),
                ("csrf", csrf(&html)),
            ];
            let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
            let r = sessions
                .handle(request("POST", &format!("{ws}/op/answer_request"), Some(&cookie), &body, Some(ORIGIN)))
                .await;
            assert_eq!(r.status, 303);
        })
    }));
    let grant = app.agent_ok(
        &token,
        "request_access",
        json!({"target": "web", "scope": ["deploy"], "reason": "Deploy the <site> now"}),
    );
    assert_eq!(grant["status"], "active", "{grant}");
    let ttl = grant["expiresAt"].as_i64().unwrap() - app.now_ms.get();
    assert!(ttl <= 15 * 60_000 && ttl > 14 * 60_000, "approved for the 15 minutes chosen: {ttl}");
    *app.sessions.on_wait.borrow_mut() = None;
    // Another request stays open (nobody answers within the wait). A member's page offers Approve
    // always disabled, saying why; the owner's offers it.
    let pending =
        app.agent_ok(&token, "request_access", json!({"target": "web", "scope": ["write"], "reason": "push"}));
    assert_eq!(pending["status"], "pending");
    let bo = app.signup("Bo", "bo@example.com");
    let invited = app.request(
        "POST",
        &format!("/v1/workspaces/{}/invitations", ada.slug),
        Some(&ada.key),
        Some(json!({"role": "member"})),
    );
    let token = invited.json_body()["token"].as_str().unwrap().to_owned();
    let joined = app.request("POST", "/v1/invitations/accept", Some(&bo.key), Some(json!({"token": token})));
    assert!(joined.status < 300, "{:?}", joined.json_body());
    let page_of = |key: &str| get(&app, &sign_in(&app, key), &ws).1;
    let member = page_of(&bo.key);
    assert!(member.contains("title=\"Only owners and admins approve always\""), "{member}");
    assert!(
        page_of(&ada.key).contains(">Approve always</button>") && !page_of(&ada.key).contains("Only owners and admins")
    );
}

/// The task id in a rendered request's form.
fn sid_of(html: &str) -> String {
    let at = html.find("name=\"task_id\" value=\"").unwrap() + 22;
    html[at..].split('"').next().unwrap().to_owned()
}

#[test]
fn a_one_time_link_signs_a_browser_in_once() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let link = app.request("POST", "/v1/console/link", Some(&ada.key), None).json_body();
    let url = link["url"].as_str().unwrap();
    assert!(url.starts_with("http://127.0.0.1:8787/console/enter?t="), "{link}");
    let path = &url["http://127.0.0.1:8787".len()..];
    let first = app.send(request("GET", path, None, "", None));
    assert_eq!(first.status, 303);
    assert_eq!(first.header("location"), Some("/console"), "the token leaves the address bar at once");
    let cookie = first.header("set-cookie").unwrap().split(';').next().unwrap().to_owned();
    assert_eq!(get(&app, &cookie, &format!("/console/w/{}", ada.slug)).0, 200);
    assert_eq!(app.send(request("GET", path, None, "", None)).status, 410, "used once");
    let late = app.request("POST", "/v1/console/link", Some(&ada.key), None).json_body();
    app.advance(61_000);
    let late_path = &late["url"].as_str().unwrap()["http://127.0.0.1:8787".len()..];
    assert_eq!(app.send(request("GET", late_path, None, "", None)).status, 410, "a minute at most");
}

#[test]
fn a_locked_key_sees_only_its_workspace() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let team = app.request("POST", "/v1/workspaces", Some(&ada.key), Some(json!({"name": "Team"}))).json_body();
    let slug = team["slug"].as_str().unwrap().to_owned();
    let locked = app.request(
        "POST",
        "/v1/keys",
        Some(&ada.key),
        Some(json!({"name": "t", "scopes": ["read", "write"], "workspace": slug})),
    );
    let cookie = sign_in(&app, locked.json_body()["key"].as_str().unwrap());
    let home = app.send(request("GET", "/console", Some(&cookie), "", None));
    assert_eq!(home.header("location"), Some(format!("/console/w/{slug}").as_str()));
    let (status, html) = get(&app, &cookie, &format!("/console/w/{slug}"));
    assert_eq!(status, 200);
    assert!(
        !html.contains(&format!("href=\"/console/w/{}\"", ada.slug)),
        "the switcher offers only the locked workspace"
    );
    assert_eq!(get(&app, &cookie, &format!("/console/w/{}", ada.slug)).0, 403, "universe_mismatch");
}

#[test]
fn stop_turn_on_a_running_sessions_page_cancels_the_turn_and_the_session_stays() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent =
        app.request("POST", "/v1/agents", Some(&ada.key), Some(json!({"name": "E", "harness": "echo", "model": "m"})));
    let agent_id = agent.json_body()["agent_id"].as_str().unwrap().to_owned();
    let s = app.ok(
        &ada.key,
        "start_session",
        json!({"agent_id": agent_id, "message": "/sleep 30", "idempotency_key": "s1"}),
    );
    app.settle();
    let sid = s["session"]["session_id"].as_str().unwrap().to_owned();
    let cookie = sign_in(&app, &ada.key);
    let ws = format!("/console/w/{}", ada.slug);
    let (_, page) = get(&app, &cookie, &format!("{ws}/sessions/{sid}"));
    assert!(page.contains(&format!("action=\"{ws}/op/cancel_turn\"")) && page.contains(">Stop turn<"), "the button");
    let r = post(&app, &cookie, &format!("{ws}/op/cancel_turn"), &[("session_id", &sid), ("csrf", &csrf(&page))]);
    assert_eq!(r.status, 303);
    assert_eq!(app.ok(&ada.key, "get_session", json!({"session_id": sid}))["status"], "idle");
    let (_, page) = get(&app, &cookie, &format!("{ws}/sessions/{sid}"));
    assert!(!page.contains(">Stop turn<"), "no turn runs: no button");
    assert!(page.contains("turn ended: cancelled"), "the transcript says so");
}

/// The body of an answer, as text.
fn text(r: &HttpResponse) -> String {
    String::from_utf8_lossy(&r.body).into_owned()
}

#[test]
fn a_huge_refused_value_makes_a_small_flash_cookie_and_a_short_error() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let cookie = sign_in(&app, &ada.key);
    let ws = format!("/console/w/{}", ada.slug);
    let (_, page) = get(&app, &cookie, &format!("{ws}/keys"));
    let huge = "x".repeat(70_000);
    let r = post(
        &app,
        &cookie,
        &format!("{ws}/op/create_key"),
        &[("name", "laptop"), ("scopes", &huge), ("csrf", &csrf(&page))],
    );
    assert_eq!(r.status, 303);
    let set = flash(&r);
    assert!(set.len() < 1_200, "the flash cookie is {} bytes", set.len());
    let shown = app.send(request("GET", &ws, Some(&format!("{cookie}; {}", set.split(';').next().unwrap())), "", None));
    assert!(text(&shown).contains("must be one of read, write (got &quot;xxxx"), "{}", text(&shown));
    assert!(text(&shown).contains('…'), "the echoed value says it was cut");
    // The API's own error quotes no more of the value either.
    let api = app.request("POST", "/v1/keys", Some(&ada.key), Some(json!({"name": "n", "scopes": [huge]})));
    let message = api.json_body()["error"]["message"].as_str().unwrap().to_owned();
    assert!(message.len() < 300 && message.contains("(got \"xxx"), "{message}");
    let api = app.request(
        "POST",
        "/v1/keys",
        Some(&ada.key),
        Some(json!({"name": "n", "scopes": ["read"], "workspace": huge})),
    );
    assert!(api.json_body()["error"]["message"].as_str().unwrap().len() < 300, "{:?}", api.json_body());
}

#[test]
fn a_line_break_in_next_is_refused_before_a_session_is_opened() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let login = |next: &str| {
        app.send(request("POST", "/console/login", None, &form(&[("key", &ada.key), ("next", next)]), Some(ORIGIN)))
    };
    for (next, rule) in [
        ("/console\r\nX:1", "control characters"),
        ("/console/w/x\n", "control characters"),
        ("/console\u{7f}", "control characters"),
        ("/console/w/\u{20ac}", "printable ASCII"),
        ("//evil.example/console", "a path on this site"),
        ("/\\evil.example", "a path on this site"),
        ("https://evil.example/", "a path on this site"),
    ] {
        let r = login(next);
        assert_eq!(r.status, 400, "{next:?}: {}", text(&r));
        assert!(r.header("set-cookie").is_none(), "{next:?}: no console session was opened");
        assert!(r.header("location").is_none(), "{next:?}");
        assert!(text(&r).contains("`next`") && text(&r).contains(rule), "{next:?}: {}", text(&r));
    }
    let long = format!("/console/{}", "a".repeat(9_000));
    assert_eq!(login(&long).status, 400, "a bounded length");
    // The page that carries `next` into the form refuses it as well, and still lets the person sign in.
    let page = app.send(request("GET", "/console/login?next=%2Fconsole%0d%0aX:1", None, "", None));
    assert_eq!(page.status, 400);
    assert!(text(&page).contains("`next`") && !text(&page).contains("X:1"), "{}", text(&page));
    // A good target is followed; one on this site outside the console goes to the console.
    assert_eq!(login("/console/w/ada/board?x=%0d%0a").header("location"), Some("/console/w/ada/board?x=%0d%0a"));
    assert_eq!(login("/v1/keys").header("location"), Some("/console"));
}

#[test]
fn a_line_break_in_a_forms_back_is_refused_before_the_action_runs() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let cookie = sign_in(&app, &ada.key);
    let ws = format!("/console/w/{}", ada.slug);
    let (_, page) = get(&app, &cookie, &format!("{ws}/keys"));
    let keys = || app.request("GET", "/v1/keys", Some(&ada.key), None).json_body()["keys"].as_array().unwrap().len();
    let before = keys();
    let create = |back: &str| {
        let fields = [("name", "laptop"), ("scopes", "read"), ("csrf", &csrf(&page)), ("back", back)];
        post(&app, &cookie, &format!("{ws}/op/create_key"), &fields)
    };
    for back in [format!("{ws}/keys\r\nX:1"), format!("{ws}/keys\u{0}"), format!("//evil.example{ws}")] {
        let r = create(&back);
        assert_eq!(r.status, 400, "{back:?}: {}", text(&r));
        assert!(r.header("location").is_none() && r.header("set-cookie").is_none(), "{back:?}");
        assert!(text(&r).contains("`back`"), "{back:?}: {}", text(&r));
        assert_eq!(keys(), before, "{back:?}: the action did not run");
    }
    // An unknown action with a bad `back` is refused the same way, not redirected.
    let fields = [("csrf", csrf(&page)), ("back", format!("{ws}\r\nX:1"))];
    let body = form_urlencoded::Serializer::new(String::new()).extend_pairs(fields).finish();
    assert_eq!(app.send(request("POST", &format!("{ws}/op/no_such"), Some(&cookie), &body, Some(ORIGIN))).status, 400);
    let ok = create(&format!("{ws}/keys"));
    assert_eq!(ok.status, 200, "the new key is shown once");
    assert_eq!(keys(), before + 1);
}

/// A one-time link's path.
fn link_path(app: &TestApp, key: &str) -> String {
    let link = app.request("POST", "/v1/console/link", Some(key), None).json_body();
    link["url"].as_str().unwrap()["http://127.0.0.1:8787".len()..].to_owned()
}

#[test]
fn another_accounts_one_time_link_asks_before_it_switches() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let bo = app.signup("Bo", "bo@example.com");
    let cookie = sign_in(&app, &ada.key);
    let path = link_path(&app, &bo.key);
    // Signed in as Ada, Bo's link asks; it neither signs in nor uses the link up.
    for _ in 0..2 {
        let r = app.send(request("GET", &path, Some(&cookie), "", None));
        assert_eq!(r.status, 200, "{}", text(&r));
        assert_eq!(r.header("referrer-policy"), Some("no-referrer"), "the token in the address goes nowhere");
        assert!(r.header("set-cookie").is_none() && r.header("location").is_none());
        let html = text(&r);
        assert!(html.contains("Continue as Bo") && html.contains("bo@example.com"), "{html}");
        assert!(html.contains("Stay as Ada") && html.contains("ada@example.com"), "{html}");
        assert!(html.contains("method=\"post\" action=\"/console/enter\""), "{html}");
        let csp = r.header("content-security-policy").unwrap();
        assert!(csp.contains("script-src 'self'") && !csp.contains("unsafe-inline"), "{csp}");
        assert_eq!(html.matches("<script").count(), 1, "only the console's own script");
    }
    assert_eq!(get(&app, &cookie, &format!("/console/w/{}", ada.slug)).0, 200, "still Ada");
    let page = text(&app.send(request("GET", &path, Some(&cookie), "", None)));
    let t = &path["/console/enter?t=".len()..];
    let confirm = |fields: &[(&str, &str)], headers: &[(&str, &str)]| {
        let mut req = request("POST", "/console/enter", Some(&cookie), &form(fields), None);
        req.headers.extend(headers.iter().map(|(k, v)| (k.to_string(), v.to_string())));
        app.send(req)
    };
    let origin = [("origin", ORIGIN)];
    let refused = [
        confirm(&[("t", t)], &origin),
        confirm(&[("t", t), ("csrf", &"0".repeat(64))], &origin),
        confirm(&[("t", t), ("csrf", &csrf(&page))], &[("origin", "https://evil.example")]),
        confirm(&[("t", t), ("csrf", &csrf(&page))], &[("origin", "null"), ("sec-fetch-site", "cross-site")]),
    ];
    for r in refused {
        assert_eq!(r.status, 403, "{}", text(&r));
        assert_eq!(r.header("referrer-policy"), Some("no-referrer"));
    }
    // The page's own form: with no-referrer a browser sends `Origin: null`, and says it is same-origin.
    let r = confirm(&[("t", t), ("csrf", &csrf(&page))], &[("origin", "null"), ("sec-fetch-site", "same-origin")]);
    assert_eq!(r.status, 303, "{}", text(&r));
    assert_eq!(r.header("location"), Some("/console"));
    assert_eq!(r.header("referrer-policy"), Some("no-referrer"));
    let bos = r.header("set-cookie").unwrap().split(';').next().unwrap().to_owned();
    assert_eq!(get(&app, &bos, &format!("/console/w/{}", bo.slug)).0, 200, "now Bo");
    assert_eq!(
        app.send(request("GET", &format!("/console/w/{}", ada.slug), Some(&cookie), "", None)).status,
        303,
        "Ada's sign-in ended"
    );
    let again = app.send(request("GET", &path, Some(&bos), "", None));
    assert_eq!(again.status, 410, "used once");
    assert_eq!(again.header("referrer-policy"), Some("no-referrer"));
}

#[test]
fn a_one_time_link_of_the_same_account_or_with_no_session_signs_in_at_once() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let cookie = sign_in(&app, &ada.key);
    let r = app.send(request("GET", &link_path(&app, &ada.key), Some(&cookie), "", None));
    assert_eq!(r.status, 303, "{}", text(&r));
    assert_eq!(r.header("referrer-policy"), Some("no-referrer"));
    assert!(r.header("set-cookie").is_some());
    let r = app.send(request("GET", &link_path(&app, &ada.key), None, "", None));
    assert_eq!((r.status, r.header("referrer-policy")), (303, Some("no-referrer")));
    let bad = app.send(request("GET", "/console/enter", None, "", None));
    assert_eq!((bad.status, bad.header("referrer-policy")), (400, Some("no-referrer")));
}

/// A Claude Code agent's page says which of its tool uses ask, and the form changes it.
#[test]
fn a_coding_agents_page_shows_its_tool_approval_policy_and_changes_it() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent_id = app.create_agent(&ada.key, json!({"name": "Claude", "harness": "claude-code", "model": "m"}));
    let cookie = sign_in(&app, &ada.key);
    let ws = format!("/console/w/{}", ada.slug);
    let (status, page) = get(&app, &cookie, &format!("{ws}/agents/{agent_id}"));
    assert_eq!(status, 200);
    assert!(page.contains("data-policy=\"outside_folder\""), "{page}");
    assert!(page.contains("shell commands, web fetches and edits elsewhere ask you in Approvals"));
    assert!(page.contains("<option value=\"outside_folder\" selected"), "the form shows it chosen");
    let fields = [
        ("agent_id", agent_id.as_str()),
        ("name", "Claude"),
        ("harness", "claude-code"),
        ("model", "m"),
        ("tool_approval", "every_change"),
        ("csrf", &csrf(&page)),
    ];
    let r = app.send(request("POST", &format!("{ws}/op/update_agent"), Some(&cookie), &form(&fields), Some(ORIGIN)));
    assert_eq!(r.status, 303, "{}", String::from_utf8_lossy(&r.body));
    let (_, page) = get(&app, &cookie, &format!("{ws}/agents/{agent_id}"));
    assert!(page.contains("Every edit and every shell command asks you in Approvals."), "{page}");
    let echo = app.create_agent(&ada.key, json!({"name": "Echo", "harness": "echo", "model": "m"}));
    let (_, page) = get(&app, &cookie, &format!("{ws}/agents/{echo}"));
    assert!(!page.contains("data-policy"), "an echo agent has no tool approvals");
}

/// A task's page shows its settings and changes them: lanes, the review mode and the base branch.
#[test]
fn a_tasks_page_changes_its_lanes_review_and_base_branch() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let agent = app.create_agent(&ada.key, json!({"name": "E", "harness": "echo", "model": "m"}));
    let s = app.ok(&ada.key, "start_session", json!({"agent_id": agent, "message": "hi", "idempotency_key": "t"}));
    app.settle();
    let task = s["session"]["task_id"].as_str().unwrap().to_owned();
    let cookie = sign_in(&app, &ada.key);
    let page_path = format!("/console/w/{}/tasks/{task}", ada.slug);
    let (status, page) = get(&app, &cookie, &page_path);
    assert_eq!(status, 200);
    assert!(page.contains("data-settings") && page.contains("name=\"base_branch\"") && page.contains("value=\"main\""));
    let fields = [
        ("task_id", task.as_str()),
        ("lanes", "false"),
        ("lanes", "true"),
        ("review", "manual"),
        ("base_branch", "trunk"),
        ("csrf", &csrf(&page)),
    ];
    let path = format!("/console/w/{}/op/set_task_settings", ada.slug);
    let r = app.send(request("POST", &path, Some(&cookie), &form(&fields), Some(ORIGIN)));
    assert_eq!(r.status, 303, "{}", String::from_utf8_lossy(&r.body));
    let settings = app.ok(&ada.key, "get_task", json!({"task_id": task}))["settings"].clone();
    assert_eq!(settings, json!({"lanes": true, "review": "manual", "base_branch": "trunk"}));
    let (_, page) = get(&app, &cookie, &page_path);
    assert!(page.contains("value=\"trunk\"") && page.contains("<option value=\"manual\" selected"), "{page}");
}

/// A task's files not landed yet are a lane's: the task page links each one, and shows it as that
/// session sees it, saying whose lane it is in.
#[test]
fn the_task_page_shows_a_lanes_files_before_they_land() {
    let app = TestApp::new();
    let ada = app.signup("Ada", "ada@example.com");
    let (_, sid) = app.echo_session(&ada.key, "/write notes/x.md <b>draft</b>");
    let cookie = sign_in(&app, &ada.key);
    let ws = format!("/console/w/{}", ada.slug);
    let (_, page) = get(&app, &cookie, &format!("{ws}/tasks/{sid}"));
    assert!(page.contains("None landed yet"), "{page}");
    let link = format!("{ws}/tasks/{sid}?file=notes%2Fx.md&amp;session={sid}");
    assert!(page.contains(&link), "{page}");
    let (status, file) = get(&app, &cookie, &link.replace("&amp;", "&"));
    assert_eq!(status, 200);
    assert!(file.contains("in Dev's lane, not landed") && file.contains("&lt;b&gt;draft&lt;/b&gt;"), "{file}");
    let (_, base) = get(&app, &cookie, &format!("{ws}/tasks/{sid}?file=notes%2Fx.md"));
    assert!(base.contains("pass `session_id`"), "the base has no such file, and says where it is: {base}");
}

/// Issue 37: the Access page says whether each target's credential is narrowed to each grant or is the
/// connection's own (and why), and reconnects an expired one in place, keeping its policies.
#[test]
fn the_access_page_says_how_each_target_narrows_and_reconnects_an_expired_one_in_place() {
    let app = TestApp::with_secrets();
    let ada = app.signup("Ada", "ada@example.com");
    let web =
        json!({"name": "web", "provider": "vercel", "env": "prod", "credentials": {"env": {"VERCEL_TOKEN": "vt-1"}}});
    let id = app.ok(&ada.key, "connect_target", web)["connector_id"].as_str().unwrap().to_owned();
    app.ok(&ada.key, "set_policy", json!({"connector_id": id, "scope": "read", "decision": "allow"}));
    app.db.0.execute("UPDATE connector SET credentials_expire_ms = 1 WHERE connector_id = ?1", [&id]).unwrap();
    let cookie = sign_in(&app, &ada.key);
    let page_path = format!("/console/w/{}/access", ada.slug);
    let (_, page) = get(&app, &cookie, &page_path);
    assert!(page.contains("the connection&#39;s own") || page.contains("the connection's own"), "{page}");
    assert!(page.contains("Vercel documents no way to narrow a token"), "{page}");
    assert!(page.contains("expired") && page.contains("Reconnect"), "{page}");
    let fields = [
        ("csrf", csrf(&page)),
        ("workspace", ada.slug.clone()),
        ("name", "web".into()),
        ("provider", "vercel".into()),
        ("env", "prod".into()),
        ("credentials", r#"{"env": {"VERCEL_TOKEN": "vt-2"}}"#.into()),
        ("back", page_path.clone()),
    ];
    let fields: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = post(&app, &cookie, &format!("/console/w/{}/op/connect_target", ada.slug), &fields);
    assert_eq!(r.status, 303, "{}", String::from_utf8_lossy(&r.body));
    let listed = app.ok(&ada.key, "list_connectors", json!({}));
    assert_eq!(listed["connectors"][0]["connector_id"], id.as_str(), "the same target");
    assert!(listed["connectors"][0]["credentials_expire_ms"].is_null(), "{listed}");
    assert_eq!(listed["policies"][0]["decision"], "allow", "its policy stayed");
    let (_, after) = get(&app, &cookie, &page_path);
    assert!(!after.contains(">expired<"), "{after}");
}

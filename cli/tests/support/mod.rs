//! A tiny local stand-in for the agentsky server: answers with a closure, records what it was sent.

#![allow(dead_code)]

use std::sync::{Arc, Mutex};

/// One request as the stand-in saw it. Header names are lower-case.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// What the handler answers: status, content type, body.
pub type Answer = (u16, &'static str, String);

pub struct StandIn {
    pub url: String,
    pub seen: Arc<Mutex<Vec<Seen>>>,
    server: Arc<tiny_http::Server>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl StandIn {
    /// Serves `handler` on a free loopback port, on a few threads (so a slow answer does not hold
    /// up others).
    pub fn start(handler: impl Fn(&Seen) -> Answer + Send + Sync + 'static) -> Self {
        let server = Arc::new(tiny_http::Server::http("127.0.0.1:0").expect("bind loopback"));
        let url = format!("http://{}", server.server_addr().to_ip().expect("an IP address"));
        let seen: Arc<Mutex<Vec<Seen>>> = Arc::default();
        let handler = Arc::new(handler);
        let threads = (0..4)
            .map(|_| {
                let (server, seen, handler) = (server.clone(), seen.clone(), handler.clone());
                std::thread::spawn(move || {
                    while let Ok(mut req) = server.recv() {
                        let mut body = String::new();
                        let _ = req.as_reader().read_to_string(&mut body);
                        let s = Seen {
                            method: req.method().to_string(),
                            url: req.url().to_owned(),
                            headers: req
                                .headers()
                                .iter()
                                .map(|h| (h.field.as_str().as_str().to_ascii_lowercase(), h.value.as_str().to_owned()))
                                .collect(),
                            body,
                        };
                        seen.lock().unwrap().push(s.clone());
                        let (status, content_type, text) = handler(&s);
                        let mut resp = tiny_http::Response::from_string(text).with_status_code(status);
                        if !content_type.is_empty() {
                            resp = resp.with_header(
                                tiny_http::Header::from_bytes(&b"content-type"[..], content_type.as_bytes()).unwrap(),
                            );
                        }
                        let _ = req.respond(resp);
                    }
                })
            })
            .collect();
        Self { url, seen, server, threads }
    }

    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        self.server.unblock();
        for _ in 1..self.threads.len() {
            self.server.unblock();
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A fresh scratch folder, removed when dropped.
pub struct Scratch(pub std::path::PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Self {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = N.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("sky-test-{tag}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Self(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[cfg(unix)]
pub fn mode(p: &std::path::Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).unwrap().permissions().mode() & 0o777
}

/// The runner's clocks for tests: a turn's heartbeats, posts and stops in fractions of a second.
#[allow(dead_code)] // not every test binary runs turns
pub fn quick_timing() -> sky::turn::Timing {
    sky::turn::Timing {
        claim_wait_s: 0,
        heartbeat: std::time::Duration::from_millis(300),
        flush: std::time::Duration::from_millis(200),
        lease: std::time::Duration::from_secs(3),
        stop_grace: std::time::Duration::from_secs(1),
    }
}

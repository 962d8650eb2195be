//! The `Feed` Durable Object: one per workspace, a version and the calls waiting for it to move
//! ([`crate::cx::Feeds`]). Memory only, on purpose: a version is `<epoch>.<count>` with a random epoch per
//! object start, so after an eviction every waiter's version differs at once and it re-reads what it
//! watches; nothing is lost and nothing is written to storage on the hot path.

use crate::edge::feeds::FeedCall;
use crate::rules::ids;
use futures::channel::oneshot;
use futures::future::{select, Either};
use std::cell::{Cell, RefCell};
use std::pin::pin;
use std::time::Duration;
use worker::{durable_object, DurableObject, Env, Request, Response, Result, State};

/// The longest a wait is held (a client asks again after it).
const MAX_WAIT_MS: i64 = 55_000;

#[durable_object]
pub struct Feed {
    epoch: String,
    count: Cell<u64>,
    waiters: RefCell<Vec<oneshot::Sender<()>>>,
}

impl Feed {
    fn version(&self) -> String {
        format!("{}.{}", self.epoch, self.count.get())
    }
}

impl DurableObject for Feed {
    fn new(_state: State, _env: Env) -> Self {
        Self { epoch: hex::encode(ids::random_bytes::<4>()), count: Cell::new(0), waiters: RefCell::default() }
    }

    async fn fetch(&self, mut req: Request) -> Result<Response> {
        match req.json::<FeedCall>().await? {
            FeedCall::Bump => {
                self.count.set(self.count.get() + 1);
                for tx in self.waiters.borrow_mut().drain(..) {
                    let _ = tx.send(());
                }
            }
            FeedCall::Wait { seen, wait_ms } => {
                if seen == self.version() {
                    let (tx, rx) = oneshot::channel();
                    self.waiters.borrow_mut().push(tx);
                    let ms = wait_ms.clamp(0, MAX_WAIT_MS) as u64;
                    let timer = pin!(worker::Delay::from(Duration::from_millis(ms)));
                    // `matches!` drops this call's receiver before the retain, so its own sender goes too.
                    if matches!(select(rx, timer).await, Either::Right(_)) {
                        // Timed out: forget senders whose receivers are gone.
                        self.waiters.borrow_mut().retain(|tx| !tx.is_canceled());
                    }
                }
            }
        }
        Response::from_json(&self.version())
    }
}

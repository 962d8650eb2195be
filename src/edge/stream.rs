//! A request's answer as the edge sends it: whole when the core returns, or streamed (its head first,
//! then each chunk the moment the core sends it) when the core opened a stream ([`crate::http::StreamSink`]).

use crate::http::{HttpResponse, StreamSink};
use futures::channel::{mpsc, oneshot};
use futures::{Stream, StreamExt};
use std::cell::RefCell;
use std::rc::Rc;

/// What the fetch handler answers with.
pub enum Head {
    Whole(HttpResponse),
    Streamed(u16, Vec<(String, String)>),
}

/// The core's side: the head goes to the handler once; chunks go to the response's body stream.
pub struct EdgeSink {
    head: RefCell<Option<oneshot::Sender<Head>>>,
    body: RefCell<Option<mpsc::UnboundedSender<Vec<u8>>>>,
}

/// The body stream a streamed `Response` reads.
pub type Body = std::pin::Pin<Box<dyn Stream<Item = worker::Result<Vec<u8>>>>>;

impl EdgeSink {
    pub fn new() -> (Rc<Self>, oneshot::Receiver<Head>, Body) {
        let (head_tx, head_rx) = oneshot::channel();
        let (body_tx, body_rx) = mpsc::unbounded();
        let sink = Rc::new(Self { head: RefCell::new(Some(head_tx)), body: RefCell::new(Some(body_tx)) });
        (sink, head_rx, Box::pin(body_rx.map(Ok)))
    }

    /// The core has answered: a response never streamed goes out whole; a streamed one ends here (its
    /// events were sent already, so the copy the core kept for its record is not sent again).
    pub fn finish(&self, response: HttpResponse) {
        if let Some(head) = self.head.borrow_mut().take() {
            let _ = head.send(Head::Whole(response));
        }
        self.body.borrow_mut().take();
    }
}

impl StreamSink for EdgeSink {
    fn open(&self, status: u16, headers: Vec<(String, String)>) {
        if let Some(head) = self.head.borrow_mut().take() {
            let _ = head.send(Head::Streamed(status, headers));
        }
    }

    fn send(&self, chunk: Vec<u8>) -> bool {
        // The receiver goes when the client does (the platform cancels the body stream).
        self.body.borrow().as_ref().is_some_and(|body| body.unbounded_send(chunk).is_ok())
    }
}

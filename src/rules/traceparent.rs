//! W3C Trace Context (`traceparent`, version 00): a request joins its caller's trace, and every call it
//! makes onward (a session's object, a model endpoint, a remote MCP server, a webhook) carries the same
//! trace id with a span id of its own.

/// One position in a trace: the trace, the span that is current here, and the sampled flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceContext {
    /// 32 lowercase hex digits, never all zeros.
    pub trace_id: String,
    /// 16 lowercase hex digits, never all zeros.
    pub span_id: String,
    pub sampled: bool,
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

fn nonzero(s: &str) -> bool {
    s.bytes().any(|b| b != b'0')
}

/// Parses a `traceparent` header value. Anything malformed is `None` (the spec says: start a new trace);
/// a version other than `00` is read by its first four fields, as the spec asks of future versions.
pub fn parse(value: &str) -> Option<TraceContext> {
    let value = value.trim();
    let mut parts = value.split('-');
    let (version, trace_id, span_id, flags) = (parts.next()?, parts.next()?, parts.next()?, parts.next()?);
    if !is_hex(version, 2) || version == "ff" || (version == "00" && parts.next().is_some()) {
        return None;
    }
    if !is_hex(trace_id, 32) || !nonzero(trace_id) || !is_hex(span_id, 16) || !nonzero(span_id) || !is_hex(flags, 2) {
        return None;
    }
    let flags = u8::from_str_radix(flags, 16).ok()?;
    Some(TraceContext { trace_id: trace_id.to_owned(), span_id: span_id.to_owned(), sampled: flags & 1 == 1 })
}

impl TraceContext {
    /// A new trace from random bytes (the caller's: rules draw none of their own).
    pub fn fresh(trace: [u8; 16], span: [u8; 8]) -> Self {
        let mut t = Self { trace_id: hex::encode(trace), span_id: hex::encode(span), sampled: true };
        // All zeros is invalid; 2^-128 odds, but the rule is the rule.
        if !nonzero(&t.trace_id) {
            t.trace_id.replace_range(31..32, "1");
        }
        if !nonzero(&t.span_id) {
            t.span_id.replace_range(15..16, "1");
        }
        t
    }

    /// The same trace one span further down (`span` is the new span's random id).
    pub fn child(&self, span: [u8; 8]) -> Self {
        Self::fresh([0; 16], span).with_trace(&self.trace_id, self.sampled)
    }

    fn with_trace(mut self, trace_id: &str, sampled: bool) -> Self {
        trace_id.clone_into(&mut self.trace_id);
        self.sampled = sampled;
        self
    }

    /// The header value naming this span as the parent of the call it goes with.
    pub fn header(&self) -> String {
        format!("00-{}-{}-{}", self.trace_id, self.span_id, if self.sampled { "01" } else { "00" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_spec_example_and_writes_it_back() {
        let h = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
        let t = parse(h).unwrap();
        assert_eq!(t.trace_id, "4bf92f3577b34da6a3ce929d0e0e4736");
        assert_eq!(t.span_id, "00f067aa0ba902b7");
        assert!(t.sampled);
        assert_eq!(t.header(), h);
    }

    #[test]
    fn refuses_malformed_and_all_zero_ids() {
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
            "00-4bf92f3577b34da6a3ce929d0e0e473-00f067aa0ba902b7-01",
        ] {
            assert_eq!(parse(bad), None, "{bad}");
        }
        // A later version may add fields after the four it shares with 00.
        assert!(parse("01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-more").is_some_and(|t| !t.sampled));
    }

    #[test]
    fn a_child_keeps_the_trace_and_takes_a_new_span() {
        let t = parse("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00").unwrap();
        let c = t.child([7; 8]);
        assert_eq!(c.trace_id, t.trace_id);
        assert_eq!(c.span_id, "0707070707070707");
        assert!(!c.sampled);
        assert_eq!(
            TraceContext::fresh([0; 16], [0; 8]).header(),
            "00-00000000000000000000000000000001-0000000000000001-01"
        );
    }
}

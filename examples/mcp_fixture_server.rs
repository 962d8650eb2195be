//! Serves the MCP transport with the conformance fixtures on 127.0.0.1, using only std, so the official
//! conformance suite and real MCP clients can be pointed at `mcp::serve` without the Worker.
//!
//! `cargo run --example mcp_fixture_server -- [PORT]` (default 3777), then use `http://127.0.0.1:PORT/mcp`.
//! Loopback only; never expose it. The HTTP/1.1 here is the minimum the suite and clients need:
//! keep-alive, `Content-Length` or chunked request bodies, one thread per connection.

use agentsky::http::{HttpRequest, HttpResponse};
use agentsky::mcp::{fixtures::Fixtures, serve, ServerSpec};
use futures::executor::block_on;
use std::io::{self, BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;

/// Header bytes and body bytes a request may carry before the connection is dropped.
const MAX_HEAD_BYTES: usize = 64 * 1024;
const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

fn main() -> io::Result<()> {
    let port: u16 = std::env::args().nth(1).map(|p| p.parse().expect("PORT must be a number")).unwrap_or(3777);
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    let port = listener.local_addr()?.port();
    let loopback = ["localhost", "127.0.0.1", "[::1]"];
    let spec = Arc::new(ServerSpec {
        name: "agentsky-conformance".into(),
        title: "agentsky conformance fixtures".into(),
        version: env!("CARGO_PKG_VERSION").into(),
        instructions: "Fixture tools for the MCP conformance suite.".into(),
        allowed_origins: loopback.iter().map(|h| format!("http://{h}:{port}")).collect(),
        allowed_hosts: loopback.iter().map(|h| format!("{h}:{port}")).collect(),
    });
    println!("serving MCP fixtures on http://127.0.0.1:{port}/mcp");
    for stream in listener.incoming() {
        let stream = stream?;
        let spec = Arc::clone(&spec);
        std::thread::spawn(move || {
            if let Err(e) = connection(&spec, stream) {
                eprintln!("connection ended: {e}");
            }
        });
    }
    Ok(())
}

/// Answers requests on one connection until the client closes it.
fn connection(spec: &ServerSpec, stream: TcpStream) -> io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut writer = stream;
    while let Some((request, close)) = read_request(&mut reader)? {
        let response = block_on(serve(spec, &Fixtures, &request));
        write_response(&mut writer, &response, close)?;
        if close {
            break;
        }
    }
    Ok(())
}

/// One request, and whether the client asked to close afterwards; `None` at a clean end of stream.
fn read_request(reader: &mut impl BufRead) -> io::Result<Option<(HttpRequest, bool)>> {
    let mut line = String::new();
    if reader.read_line(&mut line)? == 0 {
        return Ok(None);
    }
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target)) = (parts.next(), parts.next()) else {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("bad request line {line:?}")));
    };
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    let mut request = HttpRequest {
        method: method.to_owned(),
        path: path.to_owned(),
        query: query.to_owned(),
        client_ip: "127.0.0.1".into(),
        ..HttpRequest::default()
    };
    let mut head_bytes = line.len();
    loop {
        let mut header = String::new();
        head_bytes += reader.read_line(&mut header)?;
        if head_bytes > MAX_HEAD_BYTES {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "request head too large"));
        }
        let header = header.trim_end_matches(['\r', '\n']);
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            request.headers.push((name.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    let chunked = request.header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked"));
    request.body = if chunked {
        read_chunked(reader)?
    } else {
        let length: usize = request.header("content-length").and_then(|v| v.parse().ok()).unwrap_or(0);
        if length > MAX_BODY_BYTES {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "request body too large"));
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body)?;
        body
    };
    let close = request.header("connection").is_some_and(|v| v.eq_ignore_ascii_case("close"));
    Ok(Some((request, close)))
}

fn read_chunked(reader: &mut impl BufRead) -> io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size_line = String::new();
        reader.read_line(&mut size_line)?;
        let size_hex = size_line.trim().split(';').next().unwrap_or("");
        let size = usize::from_str_radix(size_hex, 16)
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "bad chunk size"))?;
        if size == 0 {
            // Trailers, if any, end with an empty line.
            loop {
                let mut trailer = String::new();
                if reader.read_line(&mut trailer)? == 0 || trailer.trim().is_empty() {
                    return Ok(body);
                }
            }
        }
        if body.len() + size > MAX_BODY_BYTES {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "request body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        reader.read_exact(&mut body[start..])?;
        let mut crlf = [0; 2];
        reader.read_exact(&mut crlf)?;
    }
}

fn write_response(writer: &mut impl Write, response: &HttpResponse, close: bool) -> io::Result<()> {
    let mut head = format!("HTTP/1.1 {} {}\r\n", response.status, reason(response.status));
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("content-length: {}\r\n", response.body.len()));
    if close {
        head.push_str("connection: close\r\n");
    }
    head.push_str("\r\n");
    writer.write_all(head.as_bytes())?;
    writer.write_all(&response.body)?;
    writer.flush()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Payload Too Large",
        _ => "",
    }
}

//! Granted commands in a runner's turn. A provider CLI shim (`shim.rs`) does not run the real CLI
//! with a credential itself there: it asks the runner of its turn to, over a Unix socket the runner owns
//! for the turn (`turn/granted.rs` serves it), and relays what the command prints and how it exits. The
//! runner fetches the grant's credential, runs the real CLI it finds on its own `PATH`, watches it exit
//! and reports that with its runner token: the only deploy proof the server accepts (its
//! `src/runner/granted.rs` says what that proof is worth, and what it is not).
//!
//! **Wire.** The shim connects to `AGENTSKY_RUNNER_SOCKET` and writes one line of JSON,
//! `{"secret", "cli", "args", "grant_id", "cwd"}`. On Linux `secret` is empty: the runner asks the kernel
//! who connected instead (the turn's channel). Elsewhere it is `AGENTSKY_RUNNER_SECRET`. The runner
//! answers with frames, each a tag byte, a 4-byte big-endian length and that many bytes: `o` stdout, `e`
//! stderr, `x` the exit status as decimal text, always last. The shim writes nothing more; its socket
//! closing (the shim was ended) ends the command.

use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};
use std::path::PathBuf;

/// Where the turn's channel listens, and (off Linux) the secret a request must carry.
pub const SOCKET_ENV: &str = "AGENTSKY_RUNNER_SOCKET";
pub const SECRET_ENV: &str = "AGENTSKY_RUNNER_SECRET";

/// The most a request line may hold.
pub const MAX_REQUEST_BYTES: u64 = 1024 * 1024;

/// A shim's request: run `cli` (a provider CLI's name) with `args` in `cwd`, under `grant_id`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// The turn's secret where the runner needs one (not on Linux, where it asks the kernel who called).
    #[serde(default)]
    pub secret: String,
    pub cli: String,
    pub args: Vec<String>,
    pub grant_id: String,
    pub cwd: PathBuf,
}

/// One frame of the runner's answer.
#[derive(Debug, Clone, PartialEq)]
pub enum Frame {
    Stdout(Vec<u8>),
    Stderr(Vec<u8>),
    Exit(i32),
}

const STDOUT: u8 = b'o';
const STDERR: u8 = b'e';
const EXIT: u8 = b'x';
/// Larger frames are refused as garbage.
const MAX_FRAME_BYTES: u32 = 1024 * 1024;

/// Writes one frame.
pub fn write_frame(w: &mut impl Write, frame: &Frame) -> io::Result<()> {
    let exit;
    let (tag, bytes): (u8, &[u8]) = match frame {
        Frame::Stdout(b) => (STDOUT, b),
        Frame::Stderr(b) => (STDERR, b),
        Frame::Exit(code) => {
            exit = code.to_string();
            (EXIT, exit.as_bytes())
        }
    };
    let len = u32::try_from(bytes.len()).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame too large"))?;
    let mut buf = Vec::with_capacity(5 + bytes.len());
    buf.push(tag);
    buf.extend_from_slice(&len.to_be_bytes());
    buf.extend_from_slice(bytes);
    w.write_all(&buf)?;
    w.flush()
}

/// Reads one frame; `None` at the end of the stream.
pub fn read_frame(r: &mut impl Read) -> io::Result<Option<Frame>> {
    let mut head = [0u8; 5];
    match r.read_exact(&mut head) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]);
    if len > MAX_FRAME_BYTES {
        return Err(io::Error::new(io::ErrorKind::InvalidData, "a frame larger than 1 MiB"));
    }
    let mut bytes = vec![0u8; len as usize];
    r.read_exact(&mut bytes)?;
    let bad = || io::Error::new(io::ErrorKind::InvalidData, "a frame of an unknown kind");
    Ok(Some(match head[0] {
        STDOUT => Frame::Stdout(bytes),
        STDERR => Frame::Stderr(bytes),
        EXIT => Frame::Exit(String::from_utf8(bytes).ok().and_then(|t| t.parse().ok()).ok_or_else(bad)?),
        _ => return Err(bad()),
    }))
}

/// Whether two secrets are equal, in time that does not depend on where they differ.
pub fn same_secret(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A fresh per-turn secret: 32 bytes from the system's random source, in hex.
#[cfg(unix)]
pub fn new_secret() -> io::Result<String> {
    let mut bytes = [0u8; 32];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut bytes)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The shim's side: sends `request` to the runner at `socket`, relays the command's output to this
/// process's stdout and stderr as it comes, and returns its exit status. `Err` when the runner cannot be
/// reached or went away before the command's end.
#[cfg(unix)]
pub fn run(socket: &std::path::Path, request: &Request) -> Result<i32, String> {
    let mut stream = std::os::unix::net::UnixStream::connect(socket)
        .map_err(|e| format!("the runner's channel at {} cannot be reached ({e})", socket.display()))?;
    let mut line = serde_json::to_vec(request).map_err(|e| e.to_string())?;
    line.push(b'\n');
    stream.write_all(&line).map_err(|e| format!("the runner's channel refused the request ({e})"))?;
    let mut reader = io::BufReader::new(stream);
    let (mut out, mut err) = (io::stdout(), io::stderr());
    loop {
        match read_frame(&mut reader) {
            Ok(Some(Frame::Stdout(b))) => {
                let _ = out.write_all(&b).and_then(|()| out.flush());
            }
            Ok(Some(Frame::Stderr(b))) => {
                let _ = err.write_all(&b).and_then(|()| err.flush());
            }
            Ok(Some(Frame::Exit(code))) => return Ok(code),
            Ok(None) => return Err("the runner went away before the command ended".into()),
            Err(e) => return Err(format!("the runner's answer could not be read ({e})")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_read_back_as_written_and_garbage_is_refused() {
        let mut buf = Vec::new();
        for f in [Frame::Stdout(b"hello\n".to_vec()), Frame::Stderr(vec![]), Frame::Exit(-3), Frame::Exit(143)] {
            write_frame(&mut buf, &f).unwrap();
        }
        let mut r = &buf[..];
        assert_eq!(read_frame(&mut r).unwrap(), Some(Frame::Stdout(b"hello\n".to_vec())));
        assert_eq!(read_frame(&mut r).unwrap(), Some(Frame::Stderr(vec![])));
        assert_eq!(read_frame(&mut r).unwrap(), Some(Frame::Exit(-3)));
        assert_eq!(read_frame(&mut r).unwrap(), Some(Frame::Exit(143)));
        assert_eq!(read_frame(&mut r).unwrap(), None);
        assert!(read_frame(&mut &b"z\0\0\0\x01a"[..]).is_err());
        assert!(read_frame(&mut &b"o\xff\xff\xff\xff"[..]).is_err());
        assert!(read_frame(&mut &b"x\0\0\0\x02no"[..]).is_err());
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd") && !same_secret("abc", "ab") && !same_secret("", "a"));
        #[cfg(unix)]
        {
            let (a, b) = (new_secret().unwrap(), new_secret().unwrap());
            assert!(a.len() == 64 && a != b);
        }
    }
}
